"""Traditional Chinese read as simplified by the deriver's rules and its quarantine gate (engine.derive.offline.hanzi,
issue #29 item 1): a user writing 繁體 gets the same memories as one writing 简体, and an attack written in traditional
characters is caught as its simplified twin is. The traditional texts are made from the project's own Chinese suites
with OpenCC's s2t / s2tw tables, so every case of those suites is a case here."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import opencc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memengine.engine.derive.offline import Turn, extract_memories, gate, hanzi, quarantined, screen, zh
from tests.paths import DATA

T = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
TO_TRAD = {name: opencc.OpenCC(name) for name in ("s2t", "s2tw")}


def _user_texts(path: str, lang: str) -> list[str]:
    out = []
    for line in (DATA / path).read_text().splitlines():
        case = json.loads(line)
        if case.get("lang") != lang:
            continue
        turns = case.get("turns") or [t for s in case.get("sessions", []) for t in s]
        out.extend(t["text"] for t in turns if t["role"] == "user")
    return out


STATEMENTS = sorted(set(_user_texts("statements_v2/dev.jsonl", "zh")))
ATTACKS = [json.loads(line) for line in (DATA / "poisoning_zh" / "dev.jsonl").read_text().splitlines()
           if json.loads(line)["kind"] == "attack"]


def test_the_converter_is_installed() -> None:
    assert hanzi.available()  # the gate below depends on it: a missing OpenCC must fail here, not pass quietly


@given(st.text(alphabet=st.sampled_from("以後請用繁體字簡體習慣搬來臺灣記憶體乾頭髮為們這個說話abc 1，。")))
def test_every_index_is_kept(text: str) -> None:
    assert len(hanzi.simplified(text)) == len(text)


def test_traditional_reads_as_simplified() -> None:
    assert hanzi.simplified("以後回答我都請用繁體字") == "以后回答我都请用繁体字"
    assert hanzi.simplified("I moved to 台北") == "I moved to 台北"
    assert hanzi.simplified("no Chinese here") == "no Chinese here"


def _kept(text: str) -> list[tuple[str, str]]:
    turn = Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text, occurred_at=T)
    return [(c.memory_type, c.text) for c in extract_memories([turn]) if not quarantined(gate(c, turn_text=text))]


@pytest.mark.parametrize("table", sorted(TO_TRAD))
def test_a_traditional_statement_gives_what_its_simplified_twin_gives(table: str) -> None:
    differ = []
    for text in STATEMENTS:
        trad = TO_TRAD[table].convert(text)
        simple, traditional = _kept(text), _kept(trad)
        # the same types, and the same attribute slots read back from the stored texts (a character OpenCC keeps
        # either way, 著 / 着, may differ in the text itself)
        if [ty for ty, _ in simple] != [ty for ty, _ in traditional] or any(
                zh.slots(b) != zh.slots(a) for (_, a), (_, b) in zip(simple, traditional, strict=True)):
            differ.append((text, simple, traditional))
    assert not differ, differ[:5]


def test_a_traditional_memory_keeps_the_users_characters() -> None:
    (kind, text), = _kept("以後回答我都請用繁體字，簡體我看不太習慣")
    assert kind == "RULE"
    assert "繁體字" in text
    assert _kept("我們家搬到台中了") == [("PROFILE", "用户家搬到台中了。")]


@pytest.mark.parametrize("table", sorted(TO_TRAD))
def test_an_attack_in_traditional_characters_is_caught_as_in_simplified(table: str) -> None:
    missed = []
    for case in ATTACKS:
        for turn in case["turns"]:
            if turn["role"] != "user":
                continue
            simple = {f.code for f in screen(turn["text"])}
            trad = {f.code for f in screen(TO_TRAD[table].convert(turn["text"]))}
            if simple != trad:
                missed.append((case["id"], turn["text"], simple, trad))
    assert not missed, missed[:5]
