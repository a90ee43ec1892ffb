"""engine.ingest: LoCoMo and JSONL readers (issue #2 (walking skeleton) §8). Pure: no services."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec
import pytest

from memengine import events
from memengine.engine.ops.ingest import (
    SAMPLE_CONVERSATION,
    IngestFormatError,
    read_events,
    read_jsonl,
    read_locomo,
)
from tests.paths import SHARED_DATA

LOCOMO_DIR = SHARED_DATA / "locomo-dev"
TENANT = "acme"


def _locomo_file(name: str) -> Path:
    path = LOCOMO_DIR / name
    if not path.is_file():
        pytest.skip(f"LoCoMo dev file not available: {path}")
    return path


@pytest.fixture(scope="module")
def locomo26() -> tuple[dict, list[events.Event]]:
    path = _locomo_file("26.json")
    raw = json.loads(path.read_text(encoding="utf-8"))
    return raw, read_locomo(path, TENANT)


def _turns(evs: list[events.Event]) -> list[events.TurnRecorded]:
    return [e for e in evs if isinstance(e, events.TurnRecorded)]


def _texts(evs: list[events.Event]) -> list[str]:
    return [b.text for e in _turns(evs) for b in e.content if isinstance(b, events.TextBlock)]


# --------------------------------------------------------------------------------------------------- LoCoMo


def test_locomo_counts_and_order(locomo26):
    raw, evs = locomo26
    counts = Counter(type(e).__name__ for e in evs)
    assert counts == {"TurnRecorded": 419, "SessionEnded": 19, "ThreadLabelled": 1}
    assert isinstance(evs[0], events.ThreadLabelled)
    assert evs[0].label == f"LoCoMo 26: {raw['speaker_a']} & {raw['speaker_b']}"
    assert isinstance(evs[-1], events.SessionEnded) and evs[-1].session_id == "s19"
    assert {e.thread_id for e in evs} == {"locomo-26"}
    assert {e.tenant_id for e in evs} == {TENANT}
    # each session's turns are followed by its SessionEnded
    sessions = [e.session_id for e in evs[1:] if isinstance(e, events.SessionEnded)]
    assert sessions == [f"s{n}" for n in range(1, 20)]


def test_locomo_first_turn(locomo26):
    raw, evs = locomo26
    first = evs[1]
    assert isinstance(first, events.TurnRecorded)
    assert first.metadata["dia_id"] == "D1:1"
    assert first.session_id == "s1"
    assert first.user_id == raw["speaker_a"]
    assert first.role == "user"
    assert first.producer == "memengine-ingest/locomo"
    assert first.occurred_at == datetime(2023, 5, 8, 13, 56, 0, tzinfo=UTC)
    assert first.occurred_at.utcoffset() == timedelta(0)
    assert first.content == [events.TextBlock(text=raw["session_1"][0]["text"])]
    assert first.event_id == events.stable_event_id(TENANT, "locomo-26", "locomo", "D1:1")


def test_locomo_turn_times_step_one_second(locomo26):
    raw, evs = locomo26
    s1 = [e for e in _turns(evs) if e.session_id == "s1"]
    assert len(s1) == len(raw["session_1"])
    start = datetime(2023, 5, 8, 13, 56, 0, tzinfo=UTC)
    assert [e.occurred_at for e in s1] == [start + timedelta(seconds=i) for i in range(len(s1))]
    end = next(e for e in evs if isinstance(e, events.SessionEnded) and e.session_id == "s1")
    assert end.occurred_at == s1[-1].occurred_at + timedelta(seconds=1)
    assert end.event_id == events.stable_event_id(TENANT, "locomo-26", "locomo", "s1", "end")
    # session 2 starts from its own date (1:14 pm on 25 May, 2023)
    s2_first = next(e for e in _turns(evs) if e.session_id == "s2")
    assert s2_first.occurred_at == datetime(2023, 5, 25, 13, 14, 0, tzinfo=UTC)


def test_locomo_keeps_image_metadata(locomo26):
    raw, evs = locomo26
    by_dia = {e.metadata["dia_id"]: e for e in _turns(evs)}
    with_caption = [t for n in range(1, 20) for t in raw[f"session_{n}"] if "blip_caption" in t]
    assert with_caption, "26.json has turns with images"
    for turn in with_caption:
        meta = by_dia[turn["dia_id"]].metadata
        assert meta["blip_caption"] == turn["blip_caption"]
        for key in ("img_url", "query"):
            if turn.get(key) is not None:
                assert meta[key] == turn[key]
            else:
                assert key not in meta
    allowed = {"dia_id", "blip_caption", "img_url", "query"}
    assert all(set(e.metadata) <= allowed for e in _turns(evs))
    assert all(e.metadata == {} for e in evs if not isinstance(e, events.TurnRecorded))


def test_locomo_reads_only_the_turns(locomo26):
    raw, evs = locomo26
    texts = _texts(evs)
    # exactly the turns' texts, in order, and nothing else
    raw_turns = [t for n in range(1, 20) for t in raw[f"session_{n}"]]
    assert texts == [t["text"] for t in raw_turns]
    assert [e.user_id for e in _turns(evs)] == [t["speaker"] for t in raw_turns]
    assert {e.user_id for e in _turns(evs)} == {raw["speaker_a"], raw["speaker_b"]}
    summary = raw["session_1_summary"]
    assert summary and not any(summary in t for t in texts)
    observations = {o[0] for k, v in raw.items() if k.endswith("_observation") for lst in v.values() for o in lst}
    assert observations and not observations & set(texts)
    for qa in raw["qa"]:
        assert not any(qa["question"] in t for t in texts)
        answer = qa.get("answer", qa.get("adversarial_answer"))
        assert str(answer) not in texts
    wire = b"\n".join(events.encode(e) for e in evs)
    for key in (b'"qa"', b'"question"', b'"evidence"', b'"adversarial_answer"', b'"category"'):
        assert key not in wire
    assert summary.encode() not in wire


def test_locomo_is_deterministic(locomo26):
    _, evs = locomo26
    again = read_locomo(_locomo_file("26.json"), TENANT)
    assert again == evs
    assert [e.event_id for e in again] == [e.event_id for e in evs]
    assert len({e.event_id for e in evs}) == len(evs)
    # another tenant gets other ids
    other = read_locomo(_locomo_file("26.json"), "other-tenant")
    assert not {e.event_id for e in other} & {e.event_id for e in evs}


def test_locomo_events_roundtrip_the_codec(locomo26):
    _, evs = locomo26
    assert [events.decode(events.encode(e)) for e in evs] == evs


def test_locomo_second_file_and_guess():
    path = _locomo_file("30.json")
    evs = read_events(path, TENANT)
    assert Counter(type(e).__name__ for e in evs) == {"TurnRecorded": 369, "SessionEnded": 19, "ThreadLabelled": 1}
    assert evs[0].thread_id == "locomo-30"


def _write_locomo(tmp_path: Path, name: str, conv: dict) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(conv), encoding="utf-8")
    return path


def _tiny_conv(**extra) -> dict:
    conv = {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "12:05 am on 1 January, 2024",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "hi"},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "hello"},
        ],
        "session_2_date_time": "12:30 pm on 2 Feb, 2024",
        "session_2": [],
        "session_3_date_time": "11:59 pm on 3 March, 2024",
        "session_3": [{"speaker": "Bob", "dia_id": "D3:1", "text": "bye", "img_url": None}],
        "session_4_date_time": "1:00 pm on 4 March, 2024",
    }
    conv.update(extra)
    return conv


def test_locomo_skips_sessions_without_turns_and_parses_12h_clock(tmp_path):
    evs = read_locomo(_write_locomo(tmp_path, "tiny.json", _tiny_conv()), TENANT)
    kinds = [(type(e).__name__, e.session_id) for e in evs]
    assert kinds == [
        ("ThreadLabelled", None),
        ("TurnRecorded", "s1"),
        ("TurnRecorded", "s1"),
        ("SessionEnded", "s1"),
        ("TurnRecorded", "s3"),
        ("SessionEnded", "s3"),
    ]
    assert evs[1].occurred_at == datetime(2024, 1, 1, 0, 5, tzinfo=UTC)  # 12:05 am
    assert evs[4].occurred_at == datetime(2024, 3, 3, 23, 59, tzinfo=UTC)
    assert evs[4].metadata == {"dia_id": "D3:1"}  # img_url None is not "present"


@pytest.mark.parametrize(
    ("name", "conv", "needle"),
    [
        ("bad.date.json", _tiny_conv(), "thread"),
        ("t.json", _tiny_conv(session_1_date_time="yesterday"), "session_1_date_time"),
        ("t.json", _tiny_conv(speaker_b=None), "speaker_b"),
        ("t.json", _tiny_conv(session_3=[{"speaker": "Bob", "text": "x"}]), "session_3[0].dia_id"),
        ("t.json", _tiny_conv(session_3=[{"speaker": "Bob", "dia_id": "D1:1", "text": "x"}]), "duplicate"),
        ("t.json", {"speaker_a": "A", "speaker_b": "B"}, "no session"),
    ],
)
def test_locomo_errors_name_the_key(tmp_path, name, conv, needle):
    path = _write_locomo(tmp_path, name, conv)
    with pytest.raises(IngestFormatError) as info:
        read_locomo(path, TENANT)
    assert str(path) in str(info.value)
    assert needle in str(info.value)


def test_locomo_rejects_bad_tenant_and_non_object(tmp_path):
    path = _write_locomo(tmp_path, "t.json", _tiny_conv())
    with pytest.raises(IngestFormatError, match="tenant"):
        read_locomo(path, "acme.*")
    lst = tmp_path / "list.json"
    lst.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(IngestFormatError, match="conversation object"):
        read_locomo(lst, TENANT)


# --------------------------------------------------------------------------------------------------- JSONL sample


@pytest.fixture(scope="module")
def sample() -> list[events.Event]:
    return read_jsonl(SAMPLE_CONVERSATION, TENANT)


def test_sample_shape(sample):
    assert SAMPLE_CONVERSATION.stat().st_size < 60 * 1024
    assert isinstance(sample[0], events.ThreadLabelled)
    assert sample[0].label == "Maya: Lisbon trip and data scripts"
    assert {e.thread_id for e in sample} == {"demo-maya"}
    assert {e.tenant_id for e in sample} == {TENANT}
    turns = _turns(sample)
    assert 40 <= len(turns) <= 60
    ends = [e for e in sample if isinstance(e, events.SessionEnded)]
    assert [e.session_id for e in ends] == ["s1", "s2", "s3"]
    assert {e.session_id for e in turns} == {"s1", "s2", "s3"}
    assert len({e.occurred_at.date() for e in turns}) == 3
    # each SessionEnded comes after all the turns of its session
    for end in ends:
        assert all(t.occurred_at < end.occurred_at for t in turns if t.session_id == end.session_id)
    times = [e.occurred_at for e in sample]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert {t.user_id for t in turns if t.role == "user"} == {"maya"}
    assert {t.role for t in turns} == {"user", "assistant", "tool"}


def test_sample_content_blocks(sample):
    turns = _turns(sample)
    blocks = [(t, b) for t in turns for b in t.content]
    thinking = [b for t, b in blocks if isinstance(b, events.ThinkingBlock)]
    assert thinking and all(t.role == "assistant" for t, b in blocks if isinstance(b, events.ThinkingBlock))
    uses = [(i, b) for i, t in enumerate(turns) for b in t.content if isinstance(b, events.ToolUseBlock)]
    results = {
        b.tool_use_id: (i, b) for i, t in enumerate(turns) for b in t.content if isinstance(b, events.ToolResultBlock)
    }
    assert uses and len(uses) == len(results)
    for i, use in uses:
        j, result = results[use.id]
        assert j == i + 1 and turns[j].role == "tool", f"{use.id} is answered by the next turn"
    assert {u.name for _, u in uses} >= {"run_sql", "search_flights", "read_file"}
    assert sum(len(r.content) > 400 for _, r in results.values()) >= 3
    assert [r.tool_use_id for _, r in results.values() if r.is_error]


def test_sample_ids_are_stable(sample):
    again = read_events(SAMPLE_CONVERSATION, TENANT)  # guessed from the .jsonl suffix
    assert again == sample
    assert len({e.event_id for e in sample}) == len(sample)
    lines = SAMPLE_CONVERSATION.read_text(encoding="utf-8").split("\n")
    first_event_line = next(i for i, line in enumerate(lines, 1) if line.startswith("{"))
    assert sample[0].event_id == events.stable_event_id(
        TENANT, "demo-maya", "jsonl", "sample_conversation", str(first_event_line)
    )


# --------------------------------------------------------------------------------------------------- JSONL rules


def _jsonl(tmp_path: Path, *lines: str, name: str = "conv.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


GOOD = '{"thread_id": "t1", "occurred_at": "2026-03-02T09:15:00Z", "role": "user", "v": 1, "text": "hi"}'


def test_jsonl_v1_plain_text_is_upcast(tmp_path):
    path = _jsonl(tmp_path, "// a comment", "", "   ", GOOD)
    (ev,) = read_jsonl(path, TENANT)
    assert isinstance(ev, events.TurnRecorded)
    assert ev.v == 2
    assert ev.content == [events.TextBlock(text="hi")]
    assert ev.tenant_id == TENANT
    assert ev.occurred_at == datetime(2026, 3, 2, 9, 15, tzinfo=UTC)
    assert ev.event_id == events.stable_event_id(TENANT, "t1", "jsonl", "conv", "4")


def test_jsonl_keeps_given_fields(tmp_path):
    given = events.ThreadLabelled(
        event_id=events.new_event_id(),
        tenant_id="elsewhere",
        thread_id="t1",
        occurred_at=datetime(2026, 1, 1, tzinfo=UTC),
        label="given",
    )
    path = _jsonl(tmp_path, events.encode(given).decode())
    assert read_jsonl(path, TENANT) == [given]


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ('{"thread_id": "t1", "occurred_at": ', "not valid JSON"),
        ('{"thread_id": "t1", "role": "user", "text": "hi"}', "occurred_at"),
        (GOOD.replace('"t1"', '"t1.x"'), "thread"),
        (GOOD.replace('"t1"', '"t*"'), "thread"),
        (GOOD.replace('"t1"', '"t>"'), "thread"),
        ('{"occurred_at": "2026-03-02T09:15:00Z", "role": "user", "text": "hi"}', "thread_id"),
        ('[1, 2]', "JSON object"),
        (GOOD.replace('"user"', '"robot"'), "TurnRecorded"),
        (GOOD.replace('"v": 1', '"v": 9'), "newer"),
        ('{"type": "Nope", "thread_id": "t1", "occurred_at": "2026-03-02T09:15:00Z"}', "unknown event type"),
        (GOOD.replace("2026-03-02T09:15:00Z", "2026-03-02T09:15:00"), "TurnRecorded"),
    ],
)
def test_jsonl_errors_name_file_and_line(tmp_path, line, needle):
    path = _jsonl(tmp_path, "// header", GOOD, line, GOOD)
    with pytest.raises(IngestFormatError) as info:
        read_jsonl(path, TENANT)
    err = info.value
    assert err.line == 3
    assert str(path) in str(err) and "line 3" in str(err)
    assert needle in str(err)


def test_jsonl_rejects_bad_tenant_and_bad_utf8(tmp_path):
    with pytest.raises(IngestFormatError, match="tenant"):
        read_jsonl(_jsonl(tmp_path, GOOD), "a.b")
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(GOOD.encode() + b"\n" + GOOD.replace("hi", "ol\xe1").encode("latin-1") + b"\n")
    with pytest.raises(IngestFormatError, match="line 2"):
        read_jsonl(path, TENANT)


def test_read_events_format_choice(tmp_path):
    path = _jsonl(tmp_path, GOOD, name="conv.txt")
    assert len(read_events(path, TENANT)) == 1  # guessed from content
    assert len(read_events(path, TENANT, fmt="jsonl")) == 1
    with pytest.raises(ValueError, match="unknown ingest format"):
        read_events(path, TENANT, fmt="csv")
    conv = tmp_path / "tiny"
    conv.write_bytes(msgspec.json.encode(_tiny_conv()))
    assert read_events(conv, TENANT)[0].thread_id == "locomo-tiny"
