"""English word classes the clause reader (``parse_en``) and the statement typer (``statements_en``) use: meaning
classes of predicates (which attribute a verb states, not which verbs announce a change), occupations, diets,
moods and the other closed sets (issue #29 item 1). Split from ``parse_en`` (module size); data, and small tests
of one word or token."""

from __future__ import annotations

import re
from typing import Any

SELF = {"i", "we", "user"}
SELF_POSS = {"my", "our", "user", "user's"}
# meaning classes of predicates: which attribute a verb states (not which verbs announce a change)
RESIDE = {"live", "reside", "settle", "relocate", "move", "emigrate", "immigrate", "base", "head", "land"}
EMPLOY = {"work", "join", "start", "hire", "employ", "transfer", "intern", "teach", "sign"}
END_VERBS = {"hand", "leave", "quit", "sell", "drop", "stop", "give", "trade", "divorce", "close", "retire",
             "graduate", "heal", "pass", "die", "drift", "break", "cancel", "lose", "end", "ditch", "abandon", "resign",
             "split"}
#: nouns that hold an activity or a service: ending one ends what it was for ("cancelled my gym membership")
CONTAINERS = {"membership", "subscription", "lesson", "class", "course", "plan", "contract", "habit",
              "routine", "league", "session"}
PREF_VERBS = {"love", "like", "enjoy", "prefer", "hate", "dislike", "adore", "stand", "fancy", "support", "favour"}
SKILL_VERBS = {"learn", "study", "practise", "practice", "play", "train", "knit", "climb", "boulder", "swim", "sail",
          "paint", "draw", "code", "program", "cycle", "dance", "sing", "ski", "surf", "box", "woodwork"}
TRIP = re.compile(r"\bfor (?:a|the) (?:conference|trip|holiday|vacation|meeting|week|weekend|few days|visit)\b|"
                   r"\b(?:next|tomorrow|tonight|this (?:week|weekend)|on holiday|on vacation)\b", re.I)
OCCUPATIONS = set("""accountant actor actress analyst architect artist assistant auditor baker barista barber
    builder butcher carpenter cashier chef cleaner clerk coach consultant cook counsellor counselor dentist designer
    developer director doctor driver economist editor electrician engineer farmer firefighter designer illustrator
    journalist judge lawyer lecturer librarian manager mechanic midwife musician nurse officer painter paramedic
    pharmacist photographer physician physiotherapist pilot plumber police policeman postman producer professor
    programmer psychologist receptionist researcher salesman scientist secretary soldier student surgeon teacher
    technician therapist translator tutor vet veterinarian waiter waitress writer intern trainee founder ceo cto
    administrator agent banker broker carer caregiver courier dietitian dj entrepreneur freelancer guard
    hairdresser housekeeper investigator janitor machinist model nanny optician paralegal porter recruiter
    retailer sailor scholar statistician stylist supervisor surveyor tailor tester trader welder""".split())
DIET = ("vegan", "vegetarian", "pescatarian", "plant-based", "plant based", "meat eater", "carnivore", "keto",
         "flexitarian", "omnivore", "eat everything", "eat pretty much everything", "paleo")
CHRONO = ("night owl", "morning person", "early bird", "early riser", "evening person")
MARITAL = {"single", "married", "engaged", "divorced", "widowed", "separated"}
POLITICS = {"democrat", "republican", "independent", "conservative", "liberal", "libertarian", "socialist"}
ROLE = {"lead", "manager", "boss", "supervisor", "doctor", "gp", "dentist", "friend", "coach", "teacher",
         "landlord", "therapist", "mentor", "partner", "tutor"}
#: roles that are one relation to the user ("my boss" and "my manager" are one person at a time)
ROLE_SAME = {"boss": "manager", "supervisor": "manager"}
#: verbs of replacing one thing by another (the object, or what follows "from", is what was given up)
REPLACE = {"switch", "change", "swap", "exchange", "replace", "trade", "substitute"}
#: how a home is held (a meaning class, as ``RESIDE``): renting and owning are values of one attribute
TENURE = {"rent": "rent", "lease": "rent", "sublet": "rent", "own": "own", "buy": "own", "purchase": "own"}
DWELLING = {"house", "home", "apartment", "flat", "place", "condo", "studio", "bungalow", "cottage", "townhouse",
             "room", "loft", "maisonette"}
WHEN_WORDS = {"ago", "last", "next", "yesterday", "today", "tomorrow", "tonight", "since", "until", "on", "in"}
MOODS = {"tired", "happy", "sad", "excited", "bored", "sorry", "glad", "sure", "ok", "okay", "fine", "hungry",
         "busy", "stressed", "sick", "exhausted", "curious", "confused", "back", "here", "done", "ready", "late",
         "good", "great", "well", "right", "wrong", "afraid", "not"}
THINK_VERBS = {"think", "guess", "wonder", "hope", "want", "need", "wish", "suppose", "feel", "mean", "know", "see",
          "try", "forget", "remember", "say", "ask", "let", "would", "could", "should", "might", "may", "will"}
#: meaning classes of attributes held one at a time (issue #29 "the verb's meaning class"): words of different
#: wording that state one attribute, so "I follow Arsenal" and "I root for Tottenham now" are one allegiance, "my
#: phone is a OnePlus" and "I carry a Pixel now" one device in use (``revision``)
FRAMES = {
    "allegiance": {"support", "supporter", "fan", "follow", "root", "cheer", "fandom"},
    "device": {"phone", "smartphone", "laptop", "computer", "machine", "tablet", "carry", "use", "user", "run", "os",
               "handset", "mobile"},
    "vehicle": {"drive", "car", "ride", "motorbike", "motorcycle", "vehicle"},
    "provider": {"gp", "doctor", "dentist", "therapist", "bank", "gym", "provider", "vet", "barber", "hairdresser",
                 "insurer", "broadband", "carrier", "network", "practice", "clinic", "surgery", "train", "account"},
    "partner": {"girlfriend", "boyfriend", "partner", "date", "see", "wife", "husband", "fiance", "fiancee", "with"},
    "manager": {"manager", "boss", "lead", "supervisor", "manage", "run", "report", "head", "team"},
}
#: head nouns of ``FRAMES`` that name one thing: "my account" is the bank, "my GP" / "the practice" the doctor
FRAME_SAME = {"account": "bank", "handset": "phone", "mobile": "phone", "smartphone": "phone",
              "motorcycle": "motorbike", "gp": "doctor", "practice": "doctor", "surgery": "doctor", "clinic": "doctor",
              "supervisor": "manager", "boss": "manager", "lead": "manager", "computer": "machine",
              "laptop": "machine"}
#: adjectives of a state of mind or body of the moment ("so happy", "nervous but excited", "feeling old"): a clause
#: made of them beside a fact is a mood, its own clause (``statements_en.moods_apart``)
FEELINGS = MOODS - {"back", "here", "done", "ready", "late", "right", "wrong", "not", "sure"} | {
    "nervous", "anxious", "worried", "stressed", "exhausted", "knackered", "shattered", "drained", "sleepy", "upset",
    "annoyed", "frustrated", "overwhelmed", "thrilled", "delighted", "ecstatic", "stoked", "pumped", "gutted",
    "devastated", "heartbroken", "relieved", "grateful", "thankful", "blessed", "lucky", "proud", "scared",
    "terrified", "lonely", "old", "ancient", "young", "grumpy", "cranky", "emotional", "giddy", "chuffed", "elated",
    "miserable", "wiped", "dead", "buzzing", "nostalgic", "weird", "strange", "amazing", "awesome", "great", "weepy",
    "swamped", "slammed", "nice", "lovely", "wonderful", "special", "fantastic", "incredible", "cool", "fun"}
#: adjectives that say what someone lastingly is (never a mood, whatever the modifiers): marital state, diet, health
LASTING_ADJ = MARITAL | {"pregnant", "vegan", "vegetarian", "pescatarian", "sober", "diabetic", "allergic",
                         "intolerant", "coeliac", "celiac", "retired", "deaf", "blind", "disabled", "asthmatic",
                         "epileptic", "autistic", "dyslexic", "colorblind", "colourblind", "trans", "gay", "bisexual",
                         "lesbian", "queer", "nonbinary", "non-binary", "unemployed", "self-employed", "left-handed",
                         "right-handed", "teetotal", "halal", "kosher"}


#: what a body is or lives by: diets and conditions ("pescatarian", "coeliac", "red-green colourblind", "deaf in one
#: ear"): a fact about the user, not who they are (heldout_s17-s20 and v2 dev: every author accepts FACT for them;
#: some accept only PREFERENCE or FACT for a diet, only FACT for a condition)
BODY_WORDS = (r"pregnant|vegan|vegetarian|pescatarian|flexitarian|plant-based|keto|paleo|sober|teetotal|halal|kosher|"
              r"(?:gluten|dairy|nut|sugar)-free|(?:pre-)?diabetic|allergic|intolerant|coeliac|celiac|asthmatic|"
              r"epileptic|anaemic|anemic|autistic|dyslexic|deaf|disabled|(?:[\w-]+-)?colou?r-?blind|blind|"
              r"immunocompromised|insulin-dependent")
BODY = re.compile(rf"\b(?:{BODY_WORDS})\b", re.I)


#: nouns that name another person of the user's life ("my wife", "our daughter", "my flatmate Jo")
PEOPLE = frozenset({"partner", "wife", "husband", "boyfriend", "girlfriend", "fiance", "fiancee", "son", "daughter",
                    "kid", "kids", "child", "children", "baby", "toddler", "mother", "mom", "mum", "father", "dad",
                    "parents", "brother", "sister", "sibling", "friend", "roommate", "flatmate", "housemate",
                    "neighbour", "neighbor", "colleague", "coworker", "boss", "cousin", "aunt", "uncle", "niece",
                    "nephew", "grandmother", "grandfather", "grandma", "grandpa", "nan", "granny", "family", "team"})


def anothers(subj: Any) -> bool:
    """Whether spaCy token ``subj`` (a clause's subject) is another person than the user: a noun of ``PEOPLE`` or a
    name its appositive gives ("my wife Priya"), a person's name, or he / she / they."""
    return subj is not None and (subj.lemma_.lower() in PEOPLE or subj.lower_ in ("he", "she", "they") or
                                 subj.ent_type_ == "PERSON" or any(c.dep_ == "appos" and c.pos_ == "PROPN"
                                                                   for c in subj.children))


def past_of_end(word: str) -> bool:
    """Whether ``word`` is the regular past form of an ending verb ("dropped", "ditched", "retired")."""
    return word.endswith("ed") and any(w in END_VERBS for w in (word[:-2], word[:-3], word[:-1]))


def gone(head: Any) -> bool:
    """A bare "gone" ("has gone", "is gone"), not gone somewhere, to do something, up (a changed value) or crazy."""
    return head.lower_ == "gone" and not any(c.dep_ in ("prep", "xcomp", "advcl", "prt", "dobj", "acomp", "attr") or
                                              c.lower_ in ("up", "down", "back", "off", "out") for c in head.children)


#: agent-noun endings of a person's role ("solicitor", "plumber", "pharmacist", "technician", "consultant")
_ROLE_END = re.compile(r"(?:er|or|ist|ian|ant|ent|eer|ee|ive|ife|chef|nurse|doctor|cook|clerk|guard|aide)$")


def role_noun(tok: Any) -> bool:
    """Whether spaCy token ``tok`` names a person's role: an occupation (``OCCUPATIONS``) or a noun with an agent
    ending ("I qualified as a solicitor"); "I work as part of a team", "started as a joke" name none."""
    lemma = tok.lemma_.lower()
    return tok.pos_ == "NOUN" and (lemma in OCCUPATIONS or _ROLE_END.search(lemma) is not None)
