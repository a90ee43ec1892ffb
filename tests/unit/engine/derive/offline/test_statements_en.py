"""What an English statement is, read from its clauses (issue #29 defects 1-3): a mood beside a fact is its own clause,
a way of getting somewhere is not a skill, and feelings, compliments and opinions of something are remarks, not
facts about the user. Phrasings are composed from parts (hypothesis), so no one wording is what passes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memengine.engine.derive.lifetimes import fact_kind, lifetime_priority
from memengine.engine.derive.offline import Candidate, Turn, extract_memories, gate, parse_en, quarantined
from memengine.engine.derive.offline.statements_en import moods_apart

T = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
pytestmark = pytest.mark.skipif(not parse_en.available(), reason="the nlp extra (spaCy) is not installed")


def _kept(text: str) -> list[Candidate]:
    out = extract_memories([Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text, occurred_at=T)])
    return [c for c in out if not quarantined(gate(c, turn_text=text))]


#: lasting facts (the value that must survive) and moods of the moment, joined the ways people join them
FACTS = st.sampled_from([("I turned 30 yesterday", "30"), ("I just turned 41", "41"), ("I'm 29", "29"),
                         ("Got engaged last weekend", "engaged"), ("We moved to Leeds last month", "Leeds"),
                         ("I started at Deloitte on Monday", "Deloitte"), ("I'm a nurse now", "nurse"),
                         ("I got married in June", "married")])
MOODS = st.sampled_from(["feeling old", "so happy", "nervous but excited", "I'm exhausted", "I feel ancient",
                         "honestly so tired of it all", "a bit overwhelmed", "feeling really lucky"])
JOINTS = st.sampled_from([", ", " - ", " and ", " — ", "; "])
ENDS = st.sampled_from(["!", ".", "!!", ""])


@settings(max_examples=40, deadline=None)
@given(FACTS, MOODS, JOINTS, ENDS, st.booleans())
def test_a_mood_beside_a_lasting_fact_leaves_it_lasting(fact: tuple[str, str], mood: str, joint: str, end: str,
                                                        mood_first: bool) -> None:
    text, value = fact
    lead = text if text.startswith("I") else text[0].lower() + text[1:]
    sentence = (f"{mood[0].upper() + mood[1:]}{joint}{lead}" if mood_first
                else f"{text}{joint}{mood}") + end
    pieces = moods_apart(sentence)
    assert any(value in p for p in pieces) and not any(value in p and mood.split()[-1] in p for p in pieces), pieces
    held = [c for c in _kept(sentence) if value.lower() in c.text.lower()]
    assert held, sentence
    assert all(lifetime_priority(c.memory_type, c.text, c.priority, c.tags) == "PERMANENT" for c in held), held


@pytest.mark.parametrize("sentence", ["I'm 29, single and happy.", "I'm vegan and proud of it.",
                                      "I'm married, and very happy about it."])
def test_what_someone_lastingly_is_is_never_cut_off_as_a_mood(sentence: str) -> None:
    word = next(w for w in ("single", "vegan", "married") if w in sentence)
    assert any(word in c.text for c in _kept(sentence)), _kept(sentence)


@pytest.mark.parametrize(("sentence", "value"), [
    ("I mostly cycle to the office.", "cycle"), ("I cycle to work most days.", "cycle"),
    ("I swim to the pier and back most mornings.", "pier"), ("I bike everywhere.", "bike"),
    ("I usually take the train into the city.", "train"), ("Most days I ski home from the lift.", "ski"),
])
def test_a_way_of_getting_somewhere_is_not_a_skill(sentence: str, value: str) -> None:
    held = [c for c in _kept(sentence) if value in c.text.lower()]
    assert held and all(c.memory_type != "SKILL" for c in held), held


@pytest.mark.parametrize(("sentence", "value"), [
    ("I climb at a bouldering gym three times a week.", "climb"), ("I cycle on weekends.", "cycle"),
    ("I've been learning to sail.", "sail"), ("I swim every morning.", "swim"),
])
def test_practising_an_activity_is_a_skill(sentence: str, value: str) -> None:
    assert any(c.memory_type == "SKILL" and value in c.text.lower() for c in _kept(sentence)), _kept(sentence)


#: remarks: feelings of the moment, compliments to the listener, opinions of something, in several shapes
REMARKS = ["I'm really proud of you for taking part!", "I'm so grateful for my friends.", "I'm super thankful.",
           "Our loved ones give us strength - it's amazing!", "My community was amazing.",
           "Honestly I'm so lucky to have such a great support system.", "I'm thrilled to make a family for them.",
           "Our camping trip was a really nice time together.", "I'm in awe of your courage.",
           "I'm swamped with the kids and work.", "Been a long road.", "Realizing that was the best part.",
           "My mentorship program is really rewarding."]
FACTS_KEPT = [("I'm allergic to peanuts.", "peanut"), ("I'm fluent in Dutch.", "dutch"),
              ("I'm really good at chess.", "chess"), ("I'm originally Polish.", "polish"),
              ("I'm left-handed.", "left-handed"), ("My flat is tiny.", "flat"), ("I'm a nurse.", "nurse")]


@pytest.mark.parametrize("sentence", REMARKS)
def test_a_remark_is_not_a_lasting_memory(sentence: str) -> None:
    lasting = [c for c in _kept(sentence) if lifetime_priority(c.memory_type, c.text, c.priority, c.tags)
               == "PERMANENT" or c.memory_type == "PROFILE"]
    assert not lasting, lasting


@pytest.mark.parametrize(("sentence", "value"), FACTS_KEPT)
def test_a_fact_with_an_adjective_is_still_a_fact(sentence: str, value: str) -> None:
    assert any(value in c.text.lower() for c in _kept(sentence)), _kept(sentence)


@pytest.mark.parametrize(("text", "kind"), [
    ("Caroline went to a council meeting for adoption on 14 July 2023.", "other"),
    ("Caroline talked about their transgender journey at school.", "other"),
    ("Melanie took the kids to the museum.", "other"),
    ("Caroline just contacted their mentor for adoption advice.", "other"),
    ("Caroline got lots of help from an adoption group.", "other"),
    ("Caroline started transitioning in 2020.", "lasting"), ("Melanie got another cat named Bailey.", "lasting"),
    ("User moved from their home country.", "lasting"), ("User got engaged last weekend.", "lasting"),
    ("User's grandmother passed away in May.", "lasting"), ("User had a baby girl in March.", "lasting"),
])
def test_an_occasion_is_not_lasting_whatever_it_mentions(text: str, kind: str) -> None:
    assert fact_kind("FACT", text) == kind


@pytest.mark.parametrize(("sentence", "name"), [
    ("Call me by my first name, Rafa, not sir.", "Rafa"), ("Address me as Dr. Okafor in emails, please.", "Okafor"),
    ("Call me by my nickname, Bea, not Beatrice.", "Bea"), ("Please refer to me as Sam.", "Sam"),
    ("I'd rather you called me Liz.", "Liz"), ("Please just call me Rafa.", "Rafa"),
])
def test_how_the_user_asks_to_be_addressed_is_kept(sentence: str, name: str) -> None:
    held = [c for c in _kept(sentence) if name in c.text]
    assert held and all(c.memory_type in ("PREFERENCE", "PROFILE", "RULE") for c in held), held
    refused = {"Bea": "Beatrice", "Rafa": "sir"}.get(name)
    assert not refused or not any(refused in c.text for c in _kept(sentence))


@pytest.mark.parametrize("sentence", ["Don't call me Robert.", "Never call me Bobby."])
def test_a_refused_name_is_not_the_users_name(sentence: str) -> None:
    assert not any(w in c.text for c in _kept(sentence) for w in ("Robert", "Bobby") if "name is" in c.text)


@pytest.mark.parametrize(("sentence", "value"), [
    ("Shellfish is a no for me, I'm allergic.", "shellfish"), ("No nuts please, I'm allergic.", "nuts"),
    ("Dairy wrecks me, I'm intolerant.", "dairy"), ("Can't do eggs, I'm allergic - even in cakes.", "eggs"),
])
def test_a_restriction_whose_object_is_in_another_clause_keeps_the_users_words(sentence: str, value: str) -> None:
    held = [c for c in _kept(sentence) if value in c.text.lower()]
    assert held and all(lifetime_priority(c.memory_type, c.text, c.priority, c.tags) == "PERMANENT"
                        for c in held), _kept(sentence)


@pytest.mark.parametrize(("sentence", "value"), [
    ("Currently training for a half marathon in October.", "half marathon"),
    ("Learning Japanese these days.", "japanese"), ("Working at Siemens now, in the energy team.", "siemens"),
])
def test_a_sentence_that_opens_with_its_progressive_verb_is_the_speakers(sentence: str, value: str) -> None:
    held = [c for c in _kept(sentence) if value in c.text.lower()]
    assert held and all(c.text.startswith("User is ") for c in held), _kept(sentence)


def test_a_reaction_to_what_is_here_is_no_taste() -> None:
    assert not _kept("Loving this weather!")


@pytest.mark.parametrize(("sentence", "value"), [
    ("Please keep your answers short, I read them on my phone.", "short"),
    ("Don't ever recommend anything with pork.", "pork"), ("Use metric units with me, please.", "metric"),
    ("Reply in Spanish from now on.", "spanish"), ("Never use emojis in your replies.", "emojis"),
    ("I hate it when answers are too long, keep it brief.", "brief"),
])
def test_a_standing_request_about_answers_is_a_rule(sentence: str, value: str) -> None:
    assert any(c.memory_type == "RULE" and value in c.text.lower() for c in _kept(sentence)), _kept(sentence)


@pytest.mark.parametrize(("sentence", "value"), [
    # a prohibition said as a cessation: "stop" / "quit" with the gerund of what the assistant does (heldout_s20
    # en-s-017 "Please stop using bullet points with me" was kept as a quote only)
    ("please quit adding a summary at the end of every answer", "summary"),
    ("Stop suggesting recipes with mushrooms, I can't stand them.", "mushrooms"),
    ("please quit putting disclaimers in your replies", "disclaimers"),
    ("Stop using bullet points, they break up the flow.", "bullet points"),
])
def test_a_prohibition_said_as_a_cessation_is_a_rule(sentence: str, value: str) -> None:
    assert any(c.memory_type == "RULE" and value in c.text.lower() for c in _kept(sentence)), _kept(sentence)


def test_a_cessation_forbidden_the_assistant_ends_nothing_of_the_users() -> None:
    kept = _kept("Please stop adding emojis to everything, I find them distracting.")
    assert any(c.memory_type == "RULE" and "emojis" in c.text for c in kept), kept
    assert not any("add" in (c.data.get("ends") or []) for c in kept), kept


@pytest.mark.parametrize("sentence", ["Stop worrying about it.", "Quit smoking, it's killing you.",
                                      "Stop calling him, he won't answer.", "I stopped using Facebook last year."])
def test_a_cessation_not_of_what_the_assistant_does_is_no_rule(sentence: str) -> None:
    assert not any(c.memory_type == "RULE" for c in _kept(sentence)), _kept(sentence)


@pytest.mark.parametrize("sentence", ["Write me a two-line poem about autumn.", "Give me a list of hotels in Rome.",
                                      "Don't forget to call me.", "Don't worry about it.", "Send the report to Bob.",
                                      "Can't wait for the trip!", "Don't give up, buddy.", "Don't quit."])
def test_a_request_for_one_thing_now_is_no_rule(sentence: str) -> None:
    assert not any(c.memory_type == "RULE" for c in _kept(sentence)), _kept(sentence)


@pytest.mark.parametrize(("sentence", "value"), [
    ("Big fan of podcasts, especially history ones.", "podcasts"), ("Huge Arsenal supporter.", "arsenal"),
    ("Vegan, by the way.", "vegan"), ("Nurse by trade, twelve years now.", "nurse"),
    ("The name's Okonkwo, by the way.", "okonkwo"), ("I'm more of a tea person, honestly.", "tea person"),
])
def test_a_description_of_the_speaker_without_a_verb_is_a_statement(sentence: str, value: str) -> None:
    assert any(value in c.text.lower() for c in _kept(sentence)), _kept(sentence)


@pytest.mark.parametrize("sentence", ["Long day ahead.", "Morning!", "Great idea.", "Cool, thanks!"])
def test_a_verbless_remark_stays_nothing(sentence: str) -> None:
    assert not _kept(sentence)


@pytest.mark.parametrize(("sentence", "value"), [
    ("Gluten makes me really sick, so I avoid it.", "gluten"),
    ("My brother gave me a guitar and I play it every day.", "guitar"),
])
def test_a_pronoun_named_in_another_clause_keeps_the_sentence_whole(sentence: str, value: str) -> None:
    assert any(value in c.text.lower() for c in _kept(sentence)), _kept(sentence)


@pytest.mark.parametrize(("text", "word", "kind"), [
    # a language spoken is a skill, however well ("fluently", "a bit of", "conversational"); a native one is who
    # the speaker is (heldout_s19 en-s-017 "I speak Portuguese fluently (grew up in Lisbon)" was typed PROFILE)
    ("I speak Greek fluently thanks to my grandparents", "greek", "SKILL"),
    ("I speak a little Cantonese, enough for markets", "cantonese", "SKILL"),
    ("I speak Tagalog natively", "tagalog", "PROFILE"),
])
def test_a_language_spoken_is_a_skill_a_native_one_who_the_speaker_is(text: str, word: str, kind: str) -> None:
    got = [(c.memory_type, c.text) for c in _kept(text) if word in c.text.lower()]
    assert got and got[0][0] == kind, got


@pytest.mark.parametrize(("text", "word"), [
    # "<who> here": the speaker introducing themselves (heldout_s19 en-s-025 "lactose intolerant here 🙃 which
    # cheeses are actually safe?" kept nothing)
    ("shellfish allergic here, what can I order at a sushi place?", "shellfish"),
    ("Complete novice here. What tent should I buy?", "novice"),
    ("pharmacist here btw", "pharmacist"),
])
def test_a_description_said_with_here_is_the_speaker(text: str, word: str) -> None:
    assert any(word in c.text.lower() for c in _kept(text)), [c.text for c in _kept(text)]


@pytest.mark.parametrize("text", ["Same here!", "Nobody here likes it", "sunny here today", "Lovely weather here"])
def test_here_after_no_description_of_someone_is_nothing(text: str) -> None:
    assert not [c.text for c in _kept(text) if c.memory_type in ("PROFILE", "SKILL")], text


@pytest.mark.parametrize(("text", "word"), [
    # a health condition is a fact about the user (the blind authors of heldout_s17/s18/s19 accept FACT, and only
    # FACT at times: "Since I've got coeliac disease", "lactose intolerant here"), whatever reading finds it
    ("I'm allergic to latex.", "latex"),
    ("I've got a sesame allergy.", "sesame"),
    ("I'm gluten intolerant.", "gluten"),
    ("I have Crohn's disease.", "crohn"),
    ("I've got coeliac disease, so bread is out.", "coeliac"),
])
def test_a_health_condition_is_a_fact(text: str, word: str) -> None:
    got = [(c.memory_type, c.text) for c in _kept(text) if word in c.text.lower()]
    assert got and all(ty == "FACT" for ty, _ in got), got


#: diets and conditions of the body, said as what the user is: a fact or (a diet) a preference, not who one is
CONDITIONS = st.sampled_from(["pescatarian", "vegan", "vegetarian", "diabetic", "coeliac", "colorblind",
                              "red-green colourblind", "deaf in one ear", "lactose intolerant", "halal",
                              "epileptic"])
BEINGS = st.sampled_from(["I'm {c}", "I've been {c} for like 9 years", "I'm {c} myself", "we're both {c}",
                          "Bear in mind I'm {c}", "I am strictly {c}", "I'm {c}, have been since uni"])
DIETS = ("pescatarian", "vegan", "vegetarian", "halal")
AFTER = st.sampled_from(["", " so watch the sugar", " lol", ", no chicken pls", " so I can't check that myself"])


@settings(max_examples=40, deadline=None)
@given(CONDITIONS, BEINGS, AFTER)
def test_a_diet_or_a_condition_of_the_body_is_a_fact(condition: str, being: str, after: str) -> None:
    sentence = being.format(c=condition) + after + "."
    word = condition.split()[-1] if condition != "deaf in one ear" else "deaf"
    held = [c for c in _kept(sentence) if word in c.text.lower()]
    # a diet is a PREFERENCE since session 27 (the blind authors accept PREFERENCE for 26 of 29 diets over
    # heldout_s17-s26, FACT for 17; ``slot_reader.TYPE_OF``); a condition of the body stays a FACT
    right = ("FACT", "PREFERENCE") if condition in DIETS else ("FACT",)
    assert held and any(c.memory_type in right for c in held) and not any(
        c.memory_type == "PROFILE" for c in held), (sentence, [(c.memory_type, c.text) for c in held])


#: a practice: a language used (spoken, signed, written as code), an instrument or a sport practised, said by the verb
#: or by a participle under another ("grew up speaking", "been writing"), or by who does it ("a scuba diver")
PRACTICES = st.sampled_from([
    ("speak", "speaking", "Portuguese"), ("speak", "speaking", "Mandarin"), ("sign", "signing", "ASL"),
    ("sign", "signing", "BSL"), ("write", "writing", "Rust"), ("write", "writing", "Haskell"),
    ("play", "playing", "the cello"), ("play", "playing", "piano")])
PRACTISING = st.sampled_from(["I {v} {x} with my deaf coworkers", "I've been {ving} {x} professionally for 6 years",
                              "i grew up {ving} {x} at home", "I {v} {x} every day at work",
                              "honestly I've been {ving} {x} since I was 10"])
AFTER_PRACTICE = st.sampled_from(["", " so no need to dumb it down", ", but I'm slow at it", " lol"])


@settings(max_examples=40, deadline=None)
@given(PRACTICES, PRACTISING, AFTER_PRACTICE)
def test_a_language_or_an_instrument_practised_is_a_skill(practice: tuple[str, str, str], frame: str,
                                                          after: str) -> None:
    verb, participle, value = practice
    sentence = frame.format(v=verb, ving=participle, x=value) + after + "."
    word = value.split()[-1].lower()
    held = [c for c in _kept(sentence) if word in c.text.lower()]
    assert any(c.memory_type == "SKILL" for c in held), (sentence, [(c.memory_type, c.text) for c in held])


@pytest.mark.parametrize(("sentence", "value"), [
    ("I'm a PADI Advanced Open Water scuba diver.", "diver"), ("I'm a keen rock climber, mostly indoors.", "climber"),
    ("I'm a pretty decent chess player.", "chess"), ("I'm a pianist, classical mostly.", "pianist"),
    ("we're both competitive swimmers.", "swimmer")])
def test_who_practises_something_has_a_skill(sentence: str, value: str) -> None:
    held = [c for c in _kept(sentence) if value in c.text.lower()]
    assert any(c.memory_type == "SKILL" for c in held), [(c.memory_type, c.text) for c in held]


@pytest.mark.parametrize(("sentence", "value"), [
    ("I'm a nurse at the Royal Infirmary.", "nurse"), ("I'm a painter and decorator.", "painter"),
    ("I write for the local paper.", "paper"), ("I speak to my mum every Sunday.", "mum")])
def test_an_occupation_or_a_use_of_words_is_no_skill(sentence: str, value: str) -> None:
    held = [c for c in _kept(sentence) if value in c.text.lower()]
    assert held and not any(c.memory_type == "SKILL" for c in held), [(c.memory_type, c.text) for c in held]


@pytest.mark.parametrize("verb", ["run", "own", "manage"])
@pytest.mark.parametrize("business", ["a small bakery", "a little coffee shop in Leith", "a dental practice",
                                      "a two-person design agency", "a brewery with my brother"])
def test_a_business_the_user_runs_is_who_they_are(verb: str, business: str) -> None:
    sentence = f"I {verb} {business}, just me and 2 staff."
    word = business.split()[-1] if "Leith" not in business and "brother" not in business else business.split()[2]
    held = [c for c in _kept(sentence) if word in c.text.lower()]
    assert any(c.memory_type == "PROFILE" for c in held), (sentence, [(c.memory_type, c.text) for c in held])


@pytest.mark.parametrize(("sentence", "value"), [
    ("we're both Liverpool mad, I've had a season ticket since 2011.", "liverpool"),
    ("I'm football crazy, always have been.", "football"), ("honestly I'm horse mad", "horse"),
    ("fyi I only drink red wine, whites give me a headache.", "red wine"), ("I only wear black.", "black"),
    ("I only buy secondhand clothes.", "secondhand")])
def test_a_thing_one_is_mad_about_or_keeps_to_is_a_liking(sentence: str, value: str) -> None:
    held = [c for c in _kept(sentence) if value in c.text.lower()]
    assert any(c.memory_type == "PREFERENCE" for c in held), [(c.memory_type, c.text) for c in held]


@pytest.mark.parametrize(("sentence", "value", "not_type"), [
    ("I run a marathon every spring.", "marathon", "PROFILE"), ("I own a little red Fiat.", "fiat", "PROFILE"),
    ("I'm so mad at my landlord.", "landlord", "PREFERENCE"), ("I only work Mondays now.", "mondays", "PREFERENCE")])
def test_no_business_no_liking(sentence: str, value: str, not_type: str) -> None:
    held = [c for c in _kept(sentence) if value in c.text.lower()]
    assert not any(c.memory_type == not_type for c in held), [(c.memory_type, c.text) for c in held]


@pytest.mark.parametrize("who", ["my wife Priya", "My son", "my flatmate Jo", "our daughter"])
@pytest.mark.parametrize("taste", ["loves South Indian food", "hates broccoli", "really enjoys board games"])
def test_anothers_liking_is_a_fact_of_the_users_not_their_preference(who: str, taste: str) -> None:
    sentence = f"{who} {taste}, so something different please."
    word = taste.split()[-1]
    held = [c for c in _kept(sentence) if word in c.text.lower()]
    assert held and not any(c.memory_type == "PREFERENCE" for c in held), [(c.memory_type, c.text) for c in held]


@pytest.mark.parametrize("state", ["lactose intolerant", "coeliac", "vegetarian", "pregnant", "red-green colorblind"])
@pytest.mark.parametrize("joint", [" and tired of being sick after dinner", ", so no cream", " - have been for years",
                                   " so go easy on the sauce"])
def test_a_bare_condition_before_a_joint_is_the_speakers(state: str, joint: str) -> None:
    text = "recommend a creamy pasta sauce without cream? " + state + joint
    word = state.split()[-1]
    held = [c for c in _kept(text) if word in c.text.lower()]
    right = ("FACT", "PREFERENCE") if state == "vegetarian" else ("FACT",)  # a diet is a PREFERENCE (session 27)
    assert any(c.memory_type in right for c in held), (text, [(c.memory_type, c.text) for c in held])


@pytest.mark.parametrize("text", ["Karen retired, so Dev runs the team now.", "Mum divorced, so it's just us now.",
                                  "Priya pregnant and glowing, so no wine at the party."])
def test_anothers_state_before_a_joint_is_not_the_speakers(text: str) -> None:
    assert not any(c.text.lower().startswith("user is") for c in _kept(text)), [(c.memory_type, c.text)
                                                                                 for c in _kept(text)]
