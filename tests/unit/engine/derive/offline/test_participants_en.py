"""Clauses about the user whose grammatical subject is someone else (issue #29 item 1,
``engine.derive.offline.participants_en``): the user put somewhere by another, the person who manages the user's
group; and the statements they become (``statements_en``), with the user named. Phrased unlike the suites'. Needs
the English parser (the ``nlp`` extra)."""

from __future__ import annotations

import pytest

from memengine.engine.derive.offline import Candidate, ExistingItem, decide_merge, parse_en
from memengine.engine.derive.offline.statements_en import statements

pytestmark = pytest.mark.skipif(not parse_en.available(), reason="the English parser (nlp extra) is not installed")


@pytest.mark.parametrize(("sentence", "held"), [
    ("The hospital put me on nights from January.", "User on nights"),
    ("My firm transferred me to the Munich office.", "User to the Munich office"),
    ("It takes me 35 minutes to cycle in now.", "takes User 35 minutes"),
    ("Samira leads our team now.", "Samira leads"),
    ("I see Dr Lindqvist for my back these days.", "User sees Dr Lindqvist"),
    ("I'm seeing Robin now.", "User is seeing Robin"),
    ("Home these days is Tromso.", "User's home"),
    ("My 5k time is down to 24 minutes.", "down to 24 minutes"),
    ("I adopted a puppy last week, his name is Biscuit.", "puppy's name is Biscuit"),  # a pet is a he or a she
])
def test_a_statement_about_the_user_is_kept_whoever_its_subject(sentence: str, held: str) -> None:
    texts = [t for t, _, _ in statements(sentence, "User")]
    assert any(held in t for t in texts), texts


@pytest.mark.parametrize("sentence", [
    "You told me to try the pasta.",
    "Give me a quick pasta idea.",
    "It helps me focus.",
    "My sister called me yesterday.",
])
def test_what_only_mentions_the_user_is_not_a_statement_of_theirs(sentence: str) -> None:
    assert statements(sentence, "User") == [], sentence


def test_a_new_holder_of_the_users_manager_role_supersedes_the_old() -> None:
    def cand(text: str) -> Candidate:
        return Candidate("FACT", text, 0.5, 1.0, [], "PERMANENT", "u1", ["e1"])

    boss = ExistingItem("b1", "PROFILE", "User's boss is Kim.", "u1")
    d = decide_merge(cand("Samira leads User's team now."), [boss])
    assert (d.action, d.target_ids) == ("replace", ["b1"]), d
    assert parse_en.slots("My supervisor is Kim.") == parse_en.slots("My manager is Kim.")
