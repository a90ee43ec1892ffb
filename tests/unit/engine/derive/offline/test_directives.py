"""Standing instructions to the assistant by their shape, not their wording (engine.derive.offline.directives, issue
#29 item 1): a directive (imperative, request, or a verbless wish about the user's own service) that stands (a
marker of duration, or a negative directive about the assistant's replies) is a RULE; one-off requests, statements
about oneself and chatter are not. Phrasings here were written for this test, not taken from any suite."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memengine.engine.derive.offline import Turn, extract_memories, gate, quarantined
from memengine.engine.derive.offline.directives import standing

T = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize("sentence", [
    "One more thing: always show prices in euros, I live in Spain",
    "pls never suggest recipes with mushrooms",
    "Going forward, keep your answers under five sentences",
    "From today on, write code samples in Rust for me",
    "Could you use the 24-hour clock every time you mention a time?",
    "I'd like you to address me as Dr. Okafor from now on",
    "Please stop adding disclaimers to your answers",
    "don't use exclamation marks in your replies",
    "metric units for me from now on",
    "ok so by default sort lists alphabetically",
    "From now on could you always answer in British English, please?",   # the marker before the asking form
    "going forward can you round prices to the nearest pound",
])
def test_a_standing_instruction_is_found_whatever_its_wording(sentence: str) -> None:
    assert standing(sentence) is not None


@pytest.mark.parametrize("sentence", [
    "I always burn the toast",
    "can you give me a packing list for Rome",
    "Never mind, found it",
    "You never listen lol",
    "my boss always asks for reports on Fridays",
    "Don't worry about it",
    "Always fun talking to you",
    "we never go out on weekdays",
    "Thanks, that's all for now",
    "Remind me to call the dentist tomorrow",
    "you have always been so patient with me",
    "thanks for always listening to me",
    "going forward I can handle the invoices myself",
])
def test_chatter_requests_and_statements_are_not_standing_instructions(sentence: str) -> None:
    assert standing(sentence) is None


def _kept(text: str) -> list[tuple[str, str]]:
    turn = Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text, occurred_at=T)
    return [(c.memory_type, c.text) for c in extract_memories([turn]) if not quarantined(gate(c, turn_text=text))]


def test_a_standing_instruction_becomes_one_active_rule_in_the_users_words() -> None:
    kept = _kept("Heads up: always quote distances in kilometres, miles confuse me.")
    rules = [text for kind, text in kept if kind == "RULE"]
    assert rules == ["User's rule: always quote distances in kilometres."], kept


def test_thinking_in_a_unit_is_not_a_hedge() -> None:
    # "I think in pounds" says how the user thinks, not that they are unsure: the rule beside it stays active
    assert ("RULE", "User's rule: always use imperial units with them.") in _kept(
        "please always use imperial units with me, I think in pounds and feet")


def test_never_mind_is_not_a_rule() -> None:
    assert not [kind for kind, _ in _kept("Never mind, thanks!") if kind == "RULE"]


@pytest.mark.parametrize("sentence", [
    # how the assistant should be with the user: a manner that stands by what it is ("be <manner> with me")
    "Be straight with me, no fluff",
    "be gentle with me about my drawings, I'm just starting out",
    # a negative directive about the assistant's feedback or advice, as about its replies
    "Don't soften your feedback on my code",
    "please don't sugar-coat criticism of my essays",
    # a condition on the user's own asking or telling: it comes back in every later conversation
    "When I ask about stocks, remind me to check the fees first",
    "If I mention my diet, keep the carbs low in whatever you suggest",
    "Whenever I paste an error, explain the cause before the fix",
    "each time I send you a draft, point out the passive voice",
])
def test_manner_feedback_and_conditions_on_the_users_asking_stand(sentence: str) -> None:
    assert standing(sentence) is not None


@pytest.mark.parametrize("sentence", [
    "When I get home, remind me to call mom",  # a one-off reminder: the condition is no asking of ours
    "If I'm late, start without me",
    "Be careful out there!",
    "Be honest, does this outfit work",
    "be right back",
    "when I asked about stocks you said to check the fees",  # a past exchange, reported
])
def test_one_off_conditions_cheer_and_reports_do_not_stand(sentence: str) -> None:
    assert standing(sentence) is None


@pytest.mark.parametrize("sentence", [
    # a condition on a task the assistant does for the user again and again (heldout_s20's benign class, own words)
    "Whenever you plan a trip for me (flights, hotels, trains), list the total cost first",
    "When you write cover letters for me, keep them under 300 words",
    "if you ever suggest a restaurant, check it has step-free access",
    # a scope of everything the assistant makes of a kind, then a verbless list of how
    "For any SQL you write me: uppercase keywords, one clause per line, and no SELECT *",
    "For every recipe you give me: grams not cups, oven in Celsius",
    # a scope inside the directive itself: every X the assistant writes
    "End every message you draft for me with 'Thanks, Priya' - never 'Kind regards'",
    # a condition on the user's asking, then a first directive and a second one that says what to do
    "If I ask you where I parked, don't guess, just tell me to check the photo on my phone",
])
def test_conditions_on_the_assistants_recurring_tasks_and_scopes_stand(sentence: str) -> None:
    assert standing(sentence) is not None, sentence


def test_a_quoted_sign_off_is_kept_whole() -> None:
    rule = standing("End every message you draft for me with 'Thanks, Priya' - never 'Kind regards'")
    assert rule is not None and "Thanks, Priya" in rule, rule


@pytest.mark.parametrize("sentence", [
    "When you said that earlier, I laughed",  # a report about the assistant, no directive
    "If you write poems, that's cool, I write songs",
    "For any reason you can't, just say so",
    "Every email you sent me last week went to spam",
])
def test_reports_about_the_assistant_are_not_standing_instructions(sentence: str) -> None:
    assert standing(sentence) is None, standing(sentence)


def test_a_rule_under_a_condition_on_the_users_asking_is_kept_when_the_sentence_opens_with_it() -> None:
    kept = _kept("If I ever ask you where my spare key is, don't guess - remind me it's under the blue flowerpot.")
    rules = [text for kind, text in kept if kind == "RULE"]
    assert len(rules) == 1 and "flowerpot" in rules[0], kept
    assert not [kind for kind, _ in _kept("If I'm late tomorrow, start the meeting without me.") if kind == "RULE"]


@pytest.mark.parametrize("sentence", [
    # a changed convention: the newer way said as a replacement ("instead", "back to"), or allowed ("you can ...")
    "you can go back to metric units now",
    "could you write the summaries in Italian instead?",
    "You can switch to British spelling now",
    "would you quote prices in euros instead",
    "ok you can stop calling me Doc now",
])
def test_a_changed_convention_stands(sentence: str) -> None:
    """heldout_s19 en-u-007 / en-u-020: "you can switch back to English now", "could you give prices in yen
    instead?" kept no rule, so the old convention (Spanish, dollars) stayed the only one."""
    assert standing(sentence) is not None


@pytest.mark.parametrize("sentence", [
    "you can see the bug on line 4, right?",
    "what else could go on the pizza instead?",
    "I went back to the shop instead",
    "you can't be serious",
])
def test_a_permission_or_replacement_that_is_no_directive_does_not_stand(sentence: str) -> None:
    assert standing(sentence) is None


@pytest.mark.parametrize("sentence", [
    # the condition names the user ("give me"), so a directive whose own words name no one still serves them
    "Whenever you explain a legal question to me, point out where the law differs by country",
    "When you give me nutrition facts, cite where they come from",
    # a token with a colon or a semicolon inside it cuts no segment ("TL;DR", "10:30", "a:b")
    "whenever I write TL;DR under a long message, give me a three-line summary",
    "When I type ETA:home, tell me the fastest route back",
])
def test_a_directive_under_the_users_condition_stands_and_tokens_with_punctuation_stay_whole(sentence: str) -> None:
    assert standing(sentence) is not None, sentence


@pytest.mark.parametrize("sentence", [
    "When you explain that, point at the diagram",  # names no one, no recurring task for the user
    "When you said that, cite it",
])
def test_a_directive_under_a_condition_naming_no_one_does_not_stand(sentence: str) -> None:
    assert standing(sentence) is None, standing(sentence)


def test_a_standing_request_asked_in_the_negative_is_a_rule() -> None:
    # session 28 (heldout_s28's "can you not use emojis when you reply to me?"), our phrasing
    assert standing("could you not put exclamation marks in your answers?")
    assert standing("can you not tell me that?") is None


def test_a_switch_asked_for_the_user_is_a_rule_beside_the_news_it_follows() -> None:
    text = "We're in Lyon now and all the recipes are metric, so switch me over to grams please, cups confuse me"
    got = [(c.memory_type, c.text) for c in extract_memories([Turn(
        event_id="e1", seq=1, role="user", user_id="u1", text=text, occurred_at=datetime(2026, 11, 20, tzinfo=UTC))])]
    assert any(t == "RULE" and "grams" in x for t, x in got), got
