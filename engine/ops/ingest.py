"""Readers that turn conversation files into fact events. Pure: no network, no database, no clock.

Two formats:

**LoCoMo** (``.json``): one conversation of the LoCoMo benchmark (Maharana et al., ACL 2024), the JSON top level
being the conversation object (``speaker_a``, ``speaker_b``, ``session_N``, ``session_N_date_time``, ...).
``read_locomo`` maps it as issue #2 (walking skeleton) §8 specifies; only the turns are read, never the
benchmark's answers (``qa``) or its generated annotations (``session_N_summary``, ``session_N_observation``,
``events_session_N``).

**JSONL** (``.jsonl``): one event per line in the event contract, i.e. the JSON object that ``events.encode``
produces (docs/agents/event-contract.md, DESIGN.md "Events")::

    // comment lines (first non-blank characters "//") and blank lines are skipped
    {"type": "ThreadLabelled", "thread_id": "demo", "occurred_at": "2026-03-02T09:00:00Z", "label": "Demo"}
    {"thread_id": "demo", "session_id": "s1", "occurred_at": "2026-03-02T09:15:00Z", "role": "user", "v": 1, "text":
    "hi"} {"thread_id": "demo", "session_id": "s1", "occurred_at": "2026-03-02T09:15:05Z", "role": "assistant", "v": 2,
     "content": [{"type": "thinking", "thinking": "..."}, {"type": "text", "text": "Hello!"}]}
    {"type": "SessionEnded", "thread_id": "demo", "session_id": "s1", "occurred_at": "2026-03-02T09:30:00Z"}

(the third line is wrapped here for reading; in a file every event is on one line). Before decoding, each object
gets these defaults for the keys it lacks:

- ``type`` -> ``"TurnRecorded"``;
- ``tenant_id`` -> the ``tenant`` argument;
- ``event_id`` -> ``events.stable_event_id(tenant, thread_id, "jsonl", <file stem>, str(<line number>))``, the
  line number being the 1-based physical line in the file (blank and comment lines count), so re-reading the same
  file gives the same ids and a re-import is deduplicated by the server (``Nats-Msg-Id``).

``thread_id`` and ``occurred_at`` are required (``occurred_at``: ISO 8601 with a zone, e.g.
``"2026-03-02T09:15:00Z"``). ``v`` is left as given: a missing ``v`` means version 1, and a ``TurnRecorded`` v1
with a plain ``"text"`` is upcast to a ``content`` of one text block by ``events.decode``. Everything else is
validated by ``events.decode`` (token patterns, roles, block shapes, sizes).

Every reader returns the events in file order and raises ``IngestFormatError`` (a ``ValueError``) for a bad file,
naming the file, the line (JSONL) or the key (LoCoMo) and the reason. A missing file raises ``OSError``
(``FileNotFoundError``) unchanged.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec

from memengine import events
from memengine.engine.wire.errors import InvalidInput

__all__ = ["IngestFormatError", "SAMPLE_CONVERSATION", "read_events", "read_jsonl", "read_locomo"]

#: The demo conversation shipped with the engine (JSONL, thread ``demo-maya``), written for this project.
SAMPLE_CONVERSATION = Path(__file__).resolve().parents[1] / "data" / "sample_conversation.jsonl"

LOCOMO_PRODUCER = "memengine-ingest/locomo"
#: Turn keys copied into ``metadata`` besides ``dia_id`` when present (issue #2 (walking skeleton) §8).
_LOCOMO_TURN_META = ("blip_caption", "img_url", "query")

_MONTHS = {
    name: i
    for i, names in enumerate(
        (
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
            ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
            ("october", "oct"), ("november", "nov"), ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
# "1:56 pm on 8 May, 2023" (locale-independent, unlike strptime's %B and %p).
_LOCOMO_DATE = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap])\.?\s*m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+)\.?,?\s+(\d{4})\s*$",
    re.IGNORECASE,
)
_SESSION_KEY = re.compile(r"^session_(\d+)(?:_date_time)?$")


class IngestFormatError(InvalidInput, ValueError):
    """A file that cannot be read into events.

    ``str(exc)`` is ``"<path>: line <n>: <reason>"`` (JSONL), ``"<path>: key <key>: <reason>"`` (LoCoMo) or
    ``"<path>: <reason>"`` for a whole-file problem. The parts are kept as ``path``, ``line``, ``key``, ``reason``.
    """

    def __init__(self, path: str | Path, reason: str, *, line: int | None = None, key: str | None = None) -> None:
        self.path = str(path)
        self.reason = reason
        self.line = line
        self.key = key
        where = f"line {line}: " if line is not None else f"key {key}: " if key is not None else ""
        super().__init__(f"{self.path}: {where}{reason}")


# --------------------------------------------------------------------------------------------------- LoCoMo


def parse_locomo_datetime(value: str) -> datetime:
    """Parse a LoCoMo session time such as ``"1:56 pm on 8 May, 2023"`` as a UTC-aware datetime.

    LoCoMo gives no zone; the time is taken as UTC (issue #2 (walking skeleton) §8). Raises ``ValueError`` for
    anything else.
    """
    m = _LOCOMO_DATE.match(value) if isinstance(value, str) else None
    if m is None:
        raise ValueError(f"not a LoCoMo date like '1:56 pm on 8 May, 2023': {value!r}")
    hour, minute, ampm, day, month_name, year = m.groups()
    month = _MONTHS.get(month_name.lower())
    if month is None:
        raise ValueError(f"unknown month {month_name!r} in {value!r}")
    h = int(hour)
    if not 1 <= h <= 12:
        raise ValueError(f"hour {h} is not a 12-hour clock hour in {value!r}")
    h = h % 12 + (12 if ampm.lower() == "p" else 0)
    return datetime(int(year), month, int(day), h, int(minute), tzinfo=UTC)


def _check_tokens(path: Path, tenant: str, thread: str, *, line: int | None = None) -> None:
    for what, value in (("tenant", tenant), ("thread", thread)):
        try:
            events.check_token(what, value)
        except events.InvalidToken as exc:
            raise IngestFormatError(path, str(exc), line=line) from None


def _session_numbers(conv: dict[str, Any]) -> list[int]:
    nums = {int(m.group(1)) for k in conv if (m := _SESSION_KEY.match(k))}
    return list(range(1, max(nums) + 1)) if nums else []


def read_locomo(path: str | Path, tenant: str) -> list[events.Event]:
    """Read one LoCoMo conversation file into fact events (issue #2 (walking skeleton) §8).

    Shape of the result, in order: one ``ThreadLabelled`` (label ``"LoCoMo <stem>: <speaker_a> & <speaker_b>"``),
    then for each session N with turns: one ``TurnRecorded`` per turn (role ``"user"``, ``user_id`` = the turn's
    speaker, ``session_id`` = ``"s<N>"``, content = one ``TextBlock`` of the turn's text, ``occurred_at`` = the
    session's ``session_N_date_time`` taken as UTC plus i seconds for the i-th turn, metadata = ``dia_id`` and
    ``blip_caption`` / ``img_url`` / ``query`` when present), then one ``SessionEnded`` one second after the last
    turn. All events are on thread ``locomo-<file stem>`` of ``tenant`` with producer
    ``"memengine-ingest/locomo"``; the label has the first turn's time.

    Sessions are numbered 1..max N seen in the keys; a session without turns (LoCoMo has ``session_N_date_time``
    keys with no ``session_N`` list) is skipped. Only the turns are read: ``qa``, ``session_N_summary``,
    ``session_N_observation`` and ``events_session_N`` never reach an event.

    Event ids are UUIDv5 (``events.stable_event_id``) of ``(tenant, thread, "locomo", dia_id)`` for turns,
    ``(..., "s<N>", "end")`` for session ends and ``(..., "label")`` for the label, so reading the same file twice
    gives identical events.

    Raises ``IngestFormatError`` when the file is not JSON, the top level is not a conversation object, a key is
    missing or has the wrong type (the message names the key, e.g. ``session_3[4].dia_id``), a date cannot be
    parsed, a ``dia_id`` repeats, there are no turns at all, ``tenant`` or the thread id is not a subject token
    (``[A-Za-z0-9_-]{1,128}``; a file stem with ``.`` is not), or an event fails the event contract's validation.
    ``OSError`` if the file cannot be read.
    """
    path = Path(path)
    thread = f"locomo-{path.stem}"
    _check_tokens(path, tenant, thread)
    try:
        conv = msgspec.json.decode(path.read_bytes())
    except msgspec.DecodeError as exc:
        raise IngestFormatError(path, f"not a JSON document: {exc}") from None
    if not isinstance(conv, dict):
        raise IngestFormatError(
            path,
            "the top level must be a LoCoMo conversation object (speaker_a, speaker_b, session_N, ...), "
            f"got {type(conv).__name__}; from upstream locomo10.json take one sample's 'conversation'",
        )
    speakers = []
    for key in ("speaker_a", "speaker_b"):
        value = conv.get(key)
        if not isinstance(value, str) or not value:
            raise IngestFormatError(path, "missing or not a non-empty string", key=key)
        speakers.append(value)

    def ident(*parts: str) -> Any:
        return events.stable_event_id(tenant, thread, "locomo", *parts)

    out: list[events.Event] = []
    seen_dia: dict[str, str] = {}
    for n in _session_numbers(conv):
        key = f"session_{n}"
        turns = conv.get(key)
        if turns is None or turns == []:
            continue
        if not isinstance(turns, list):
            raise IngestFormatError(path, f"expected a list of turns, got {type(turns).__name__}", key=key)
        date_key = f"{key}_date_time"
        if date_key not in conv:
            raise IngestFormatError(path, "missing (the session has turns)", key=date_key)
        try:
            start = parse_locomo_datetime(conv[date_key])
        except ValueError as exc:
            raise IngestFormatError(path, str(exc), key=date_key) from None
        session_id = f"s{n}"
        at = start
        for i, turn in enumerate(turns):
            where = f"{key}[{i}]"
            if not isinstance(turn, dict):
                raise IngestFormatError(path, f"a turn must be an object, got {type(turn).__name__}", key=where)
            for field in ("speaker", "dia_id", "text"):
                if not isinstance(turn.get(field), str):
                    raise IngestFormatError(path, "missing or not a string", key=f"{where}.{field}")
            dia_id = turn["dia_id"]
            if not dia_id:
                raise IngestFormatError(path, "empty", key=f"{where}.dia_id")
            if dia_id in seen_dia:
                raise IngestFormatError(
                    path, f"duplicate dia_id {dia_id!r} (first at {seen_dia[dia_id]})", key=f"{where}.dia_id"
                )
            seen_dia[dia_id] = where
            metadata: dict[str, Any] = {"dia_id": dia_id}
            for extra in _LOCOMO_TURN_META:
                if turn.get(extra) is not None:
                    metadata[extra] = turn[extra]
            at = start + timedelta(seconds=i)
            if not out:
                out.append(
                    events.ThreadLabelled(
                        event_id=ident("label"),
                        tenant_id=tenant,
                        thread_id=thread,
                        occurred_at=at,
                        producer=LOCOMO_PRODUCER,
                        label=f"LoCoMo {path.stem}: {speakers[0]} & {speakers[1]}",
                    )
                )
            out.append(
                _validated(
                    path,
                    where,
                    events.TurnRecorded(
                        event_id=ident(dia_id),
                        tenant_id=tenant,
                        thread_id=thread,
                        occurred_at=at,
                        user_id=turn["speaker"],
                        session_id=session_id,
                        producer=LOCOMO_PRODUCER,
                        metadata=metadata,
                        role="user",
                        content=[events.TextBlock(text=turn["text"])],
                    ),
                )
            )
        out.append(
            events.SessionEnded(
                event_id=ident(session_id, "end"),
                tenant_id=tenant,
                thread_id=thread,
                occurred_at=at + timedelta(seconds=1),
                session_id=session_id,
                producer=LOCOMO_PRODUCER,
            )
        )
    if not out:
        raise IngestFormatError(path, "no session_N list with turns: nothing to read")
    out[0] = _validated(path, "speaker_a", out[0])
    return out


def _validated(path: Path, key: str, event: events.Event) -> events.Event:
    """Round-trip through the codec so that every constraint of the contract (sizes, tokens) is checked."""
    try:
        return events.decode(events.encode(event))
    except events.EventDecodeError as exc:
        raise IngestFormatError(path, exc.reason, key=key) from None


# --------------------------------------------------------------------------------------------------- JSONL


def read_jsonl(path: str | Path, tenant: str) -> list[events.Event]:
    """Read a JSONL file of events in the event contract (format and defaults: this module's docstring).

    Returns one current-version fact event per non-blank, non-comment line, in file order. Each line is a JSON
    object; ``type`` defaults to ``"TurnRecorded"``, ``tenant_id`` to ``tenant`` and ``event_id`` to the UUIDv5
    ``stable_event_id(tenant, thread_id, "jsonl", <file stem>, str(<line number>))``; then the object goes through
    ``events.decode`` (upcasters included, so a ``"v": 1`` turn with a plain ``"text"`` becomes a text block).

    Raises ``IngestFormatError`` naming the file and the 1-based line for: bytes that are not UTF-8, a line that is
    not JSON or not a JSON object, a missing ``thread_id`` or ``occurred_at``, a tenant or thread id that is not a
    subject token (``[A-Za-z0-9_-]{1,128}``: no ``*``, ``>`` or ``.``), and anything ``events.decode`` rejects
    (``EventDecodeError``: unknown type or version, invalid field). ``OSError`` if the file cannot be read.
    Source: issue #2 (walking skeleton) §8 (importers); docs/agents/event-contract.md for the line shape.
    """
    path = Path(path)
    stem = path.stem
    try:
        events.check_token("tenant", tenant)
    except events.InvalidToken as exc:
        raise IngestFormatError(path, str(exc)) from None
    out: list[events.Event] = []
    for lineno, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
        if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise IngestFormatError(path, f"not UTF-8: {exc}", line=lineno) from None
        stripped = text.strip()
        if not stripped or stripped.startswith("//"):
            continue
        try:
            obj = msgspec.json.decode(stripped)
        except msgspec.DecodeError as exc:
            raise IngestFormatError(path, f"not valid JSON: {exc}", line=lineno) from None
        if not isinstance(obj, dict):
            raise IngestFormatError(path, f"expected a JSON object, got {type(obj).__name__}", line=lineno)
        if obj.get("occurred_at") is None:
            raise IngestFormatError(path, "missing occurred_at", line=lineno)
        if "thread_id" not in obj:
            raise IngestFormatError(path, "missing thread_id", line=lineno)
        thread = obj["thread_id"]
        obj.setdefault("type", "TurnRecorded")
        obj.setdefault("tenant_id", tenant)
        _check_tokens(path, obj["tenant_id"], thread, line=lineno)
        obj.setdefault("event_id", str(events.stable_event_id(tenant, thread, "jsonl", stem, str(lineno))))
        try:
            out.append(events.decode(msgspec.json.encode(obj)))
        except events.EventDecodeError as exc:
            raise IngestFormatError(path, exc.reason, line=lineno) from None
    return out


# --------------------------------------------------------------------------------------------------- dispatch

_FORMATS = {"locomo": read_locomo, "jsonl": read_jsonl}


def guess_format(path: str | Path) -> str:
    """``"locomo"`` or ``"jsonl"`` for ``path``: by suffix (``.json`` -> locomo; ``.jsonl`` / ``.ndjson`` -> jsonl),
    else by content (one JSON object with a ``speaker_a`` key -> locomo, anything else -> jsonl)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".json":
        return "locomo"
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    try:
        whole = msgspec.json.decode(path.read_bytes())
    except msgspec.DecodeError:
        return "jsonl"
    return "locomo" if isinstance(whole, dict) and "speaker_a" in whole else "jsonl"


def read_events(path: str | Path, tenant: str, fmt: str | None = None) -> list[events.Event]:
    """Read ``path`` as ``fmt`` (``"locomo"`` | ``"jsonl"``), or guess the format when ``fmt`` is None.

    The guess is by suffix, ``.json`` -> locomo and ``.jsonl`` -> jsonl, else by content (``guess_format``).
    Returns what ``read_locomo`` / ``read_jsonl`` return and raises what they raise (``IngestFormatError``,
    ``OSError``); ``ValueError`` for an unknown ``fmt``. Source: issue #2 (walking skeleton) §8.
    """
    if fmt is None:
        fmt = guess_format(path)
    reader = _FORMATS.get(fmt)
    if reader is None:
        raise ValueError(f"unknown ingest format {fmt!r}: expected one of {sorted(_FORMATS)}")
    return reader(path, tenant)
