"""Changed standing rules (issue #29 item 1, ``engine.derive.offline.conventions_en``): a newer rule about the same
aspect of the replies (language, name, register, length, format, units, currency) with other values replaces the
older; rules about different aspects, additive rules and restatements keep both. Pairs written for this test, not
taken from any suite. Needs the English parser (the ``nlp`` extra)."""

from __future__ import annotations

import pytest

from memengine.engine.derive.offline import Candidate, ExistingItem, decide_merge, parse_en
from memengine.engine.derive.offline.conventions_en import aspects, changes

pytestmark = pytest.mark.skipif(not parse_en.available(), reason="the English parser (nlp extra) is not installed")

#: (older item type, older text, newer rule): the newer replaces the older
CHANGES = [
    ("RULE", "User's rule: always reply in German.", "User's rule: from now on answer them in Italian instead."),
    ("RULE", "User's rule: always give them distances in miles.", "User's rule: could you use kilometres from now on."),
    ("RULE", "User's rule: be blunt with them.", "User's rule: please be more diplomatic with them from now on."),
    ("RULE", "User's rule: keep your answers brief.", "User's rule: give them detailed answers from now on."),
    ("RULE", "User's rule: quote prices in euros.", "User's rule: you can show prices in pounds now."),
    ("RULE", "User's rule: write in paragraphs.", "User's rule: use bullet points from now on."),
    ("RULE", "User's rule: call them Rob.", "User's rule: could you call them Robert from now on."),
    ("PROFILE", "User's name is Katherine.", "User's rule: you can call them Kat from now on."),
    ("PROFILE", "User wants to be called Maz.", "User's rule: please address them as Marianne from now on."),
]
#: (older item type, older text, newer rule): both hold
KEEPS = [
    ("RULE", "User's rule: always reply in German.", "User's rule: always keep your answers short."),
    ("RULE", "User's rule: always give them temperatures in Celsius.", "User's rule: always reply in Italian."),
    ("RULE", "User's rule: always reply in German.", "User's rule: reply in German from now on, please."),
    ("RULE", "User's rule: keep your answers short.", "User's rule: also use bullet points from now on."),
    ("RULE", "User's rule: reply in French.", "User's rule: add English translations too."),
    ("PROFILE", "User's name is Katherine.", "User's rule: could you use Python for the examples from now on."),
    ("PROFILE", "User lives in Leeds.", "User's rule: you can call them Kat from now on."),
    ("FACT", "User speaks Spanish.", "User's rule: answer them in English from now on."),
]


@pytest.mark.parametrize(("old_type", "old", "new"), CHANGES)
def test_a_newer_rule_on_the_same_aspect_replaces_the_older(old_type: str, old: str, new: str) -> None:
    assert changes(new, old, old_type), (old, new)
    d = decide_merge(Candidate("RULE", new, 0.8, 0.85, [], "PERMANENT", "u", ["e2"]),
                     [ExistingItem("o1", old_type, old, "u")])
    assert (d.action, d.target_ids) == ("replace", ["o1"]), d.reason


@pytest.mark.parametrize(("old_type", "old", "new"), KEEPS)
def test_other_aspects_additions_and_restatements_keep_both(old_type: str, old: str, new: str) -> None:
    assert changes(new, old, old_type) is None, (old, new, aspects(old), aspects(new))


def test_aspects_are_read_by_class() -> None:
    assert aspects("User's rule: reply in Portuguese.").get("language") == frozenset({"portuguese"})
    assert set(aspects("User's rule: keep it casual and short.")) == {"register", "length"}
    assert aspects("User's rule: never suggest recipes with mushrooms.") == {}


def test_a_programming_language_or_a_tool_is_no_reply_language_or_name() -> None:
    assert changes("User's rule: use Python for the code examples from now on.", "User's rule: reply in German.",
                   "RULE") is None
    assert "name" not in aspects("User's rule: could you use Markdown from now on.")


@pytest.mark.parametrize(("old", "new"), [
    # a value forbidden and another asked for agree (heldout_s20 en-s-017: "stop using bullet points" was replaced
    # by "write in normal paragraphs" said in the next sentence)
    ("User's rule: stop using bullet points with them.", "User's rule: write in normal paragraphs."),
    ("User's rule: never give temperatures in Fahrenheit.", "User's rule: use Celsius for temperatures."),
    ("User's rule: don't be formal with them.", "User's rule: keep it casual."),
    ("User's rule: don't use tables.", "User's rule: never use bullet points."),
])
def test_a_value_forbidden_stands_beside_another_asked_for(old: str, new: str) -> None:
    assert changes(new, old, "RULE") is None


@pytest.mark.parametrize(("old", "new"), [
    ("User's rule: use bullet points for steps.", "User's rule: stop using bullet points."),
    ("User's rule: never use bullet points.", "User's rule: bullet points are fine, use them for steps."),
])
def test_a_value_forbidden_after_asked_for_or_the_reverse_replaces(old: str, new: str) -> None:
    assert changes(new, old, "RULE") is not None
