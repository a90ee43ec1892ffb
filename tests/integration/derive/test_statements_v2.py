"""The self-statement suite v2 and the Chinese poisoning cases on the DEV split, through the engine (issue #29
item 4): the figures the offline deriver was tuned to, held so they cannot slip back. The test split is reported
by ``bench/statements_v2.py --split test`` only (bench/RESULTS.md), never asserted or tuned on here."""

from __future__ import annotations

import pytest

from memengine.engine.bootstrap import Engine
from memengine.engine.derive.offline import parse_en
from tests.integration import poisoning_suite, statements_suite
from tests.paths import DATA

pytestmark = pytest.mark.integration
ZH_POISON = DATA / "poisoning_zh" / "dev.jsonl"


async def test_dev_split_statements_updates_and_chinese_poisoning(engine: Engine) -> None:
    res = await statements_suite.run_suite(engine, statements_suite.load_split("dev"))
    by = res["by"]
    misses = [f"{r['id']}: {r['why']} {r['active'][:3]}" for r in res["cases"] if not r["ok"]]
    assert by["zh statement"]["fraction"] >= 0.9, misses
    assert by["zh update"]["fraction"] >= 0.9, misses
    if parse_en.available():  # the English parser is the nlp extra; the rule tables alone stay where they were
        assert by["en statement"]["fraction"] >= 0.85, misses
        # session 14 added 55 English updates written to find failure classes (0c883ea), some of them changes only
        # world knowledge tells ("I'm on a Pixel now" after "I use an iPhone"): 0.77 on the grown split
        # session 15 (issue #29 "from what the new statement means"): a change read from a shared frame, a meaning
        # class or what the values are (revision, kinds) and statements whose subject is another; 0.92 on the grown
        # split (one case, en-u-027, is lost when the run is slow: its 1-day lifetime ends at read time)
        assert by["en update"]["fraction"] >= 0.85, misses
        # compatible pairs (a second pet, another allergy, another language) keep both: no false supersede
        assert by["en keep"]["fraction"] >= 0.8, misses
        # session 18: turns that must stay no memory (a negation, a plan or an event of the day, a mood, a wish,
        # another person's fact), beside the statements kept in the user's words (``offline.verbatim_en``)
        assert by["en none"]["fraction"] >= 0.9, misses
    zh = await poisoning_suite.run_suite(engine, poisoning_suite.load_cases(ZH_POISON), tenant="poison-zh")
    assert zh["attack_success"] == 0, [c for c in zh["cases"] if c.get("success")]
    assert zh["false_quarantine"] <= 0.05, [c for c in zh["cases"] if c.get("false_quarantine")]
