"""Working memory (scratchpad): the current focus and recent completions of each thread, in a NATS KV bucket.

Requirements: seed 003 "工作记忆（Working Memory）" (a Redis list with a 24-hour TTL and at most 50 entries,
"自动TTL（24小时）和LRU修剪（保留最新50条）"); seed 004 §3/§4 "工作记忆 (Scratchpad)": "当前任务" (current focus,
updated every turn) and "近期完成" (recent completions, at most 5 shown), injected into the system prompt.

Layout: bucket ``<STREAM_PREFIX>_WORKING`` (``MEMORY_WORKING`` by default), one key ``<tenant>.<thread>`` per thread
whose value is a JSON list of entries ``{"kind": "focus" | "done" | "note", "text", "at"}``, oldest first, trimmed
to the newest ``max_entries`` on every write (LTRIM) and updated with compare-and-set (concurrent writers never lose
an entry). The bucket's ``max_age`` is the TTL: a thread's value disappears ``ttl`` seconds after its last write (the
Redis EXPIRE of seed 003), and reads also drop single entries older than ``ttl``.

**Ephemeral by design.** KV content is NOT an event and is NOT rebuilt from the log: it is the state of the moment
and expires (TTL). A rebuild of the read models leaves it alone; forgetting a thread must call ``purge_thread``
(it removes every revision of the key, not just the latest).

Writers: agents through ``MemoryClient.scratchpad_put`` (RPC ``<root>.rpc.scratchpad``), and the enricher, which sets
the focus from a new active TASK memory of a recent turn (and drops it when that turn is withdrawn, ``drop``). Readers:
context assembly (Tier 1 "[Working Memory]").
"""

from __future__ import annotations

import dataclasses
import weakref
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig, StorageType
from nats.js.errors import BadRequestError, KeyNotFoundError, KeyWrongLastSequenceError, NotFoundError
from nats.js.kv import KeyValue

from memengine.engine.wire.requests import SCRATCHPAD_MAX_TEXT, ScratchpadKind, ScratchpadRequest
from memengine.events import check_token

DEFAULT_TTL = 24 * 3600.0  # seed 003: 24 h
DEFAULT_MAX = 50  # seed 003: at most 50 entries
SHOWN_DONE = 5  # seed 004: "近期完成 ... 最多 5 条"
SHOWN_NOTES = 5
MAX_TEXT = SCRATCHPAD_MAX_TEXT  # characters per entry (the request's limit, engine.wire.requests)
Kind = ScratchpadKind
KINDS: tuple[str, ...] = ("focus", "done", "note")

_enc = msgspec.json.Encoder()


class Entry(msgspec.Struct, frozen=True, kw_only=True):
    """One scratchpad entry: ``kind`` (focus | done | note), ``text`` (<= 2,000 chars), ``at`` (UTC, when written)."""

    kind: str
    text: str
    at: datetime


_dec = msgspec.json.Decoder(list[Entry])


def bucket_name(prefix: str = "MEMORY") -> str:
    """KV bucket of a deployment: ``<STREAM_PREFIX>_WORKING``."""
    return f"{prefix}_WORKING"


def _key(tenant: str, thread: str) -> str:
    return f"{check_token('tenant', tenant)}.{check_token('thread', thread)}"


_buckets: "weakref.WeakKeyDictionary[Any, dict[str, KeyValue]]" = weakref.WeakKeyDictionary()


async def bucket(js: JetStreamContext, *, prefix: str = "MEMORY", ttl: float = DEFAULT_TTL) -> KeyValue:
    """The deployment's KV bucket, created on first use with ``max_age = ttl`` seconds (history 1, file storage).

    An existing bucket with another TTL gets the new one (its stream's ``max_age`` is updated), so
    ``MEMENGINE_WORKING_MEMORY_TTL`` always holds. Handles are cached per JetStream context."""
    name = bucket_name(prefix)
    cache = _buckets.setdefault(js, {})
    kv = cache.get(name)
    if kv is not None:
        return kv
    try:
        kv = await js.create_key_value(KeyValueConfig(bucket=name, ttl=ttl, history=1, storage=StorageType.FILE,
                                                      description="memengine working memory (ephemeral, TTL)"))
    except BadRequestError:  # exists with another configuration: bind, then align the TTL
        kv = await js.key_value(name)
        info = await js.stream_info(f"KV_{name}")
        if info.config.max_age != ttl:
            await js.update_stream(dataclasses.replace(info.config, max_age=ttl))
    cache[name] = kv
    return kv


def _live(items: list[Entry], ttl: float, now: datetime) -> list[Entry]:
    cutoff = now - timedelta(seconds=ttl)
    return [e for e in items if e.at > cutoff]


async def _read(kv: KeyValue, key: str) -> tuple[list[Entry], int | None]:
    try:
        got = await kv.get(key)
    except KeyNotFoundError:  # also KeyDeletedError (purged / deleted)
        return [], None
    if not got.value:
        return [], got.revision
    try:
        return _dec.decode(got.value), got.revision
    except msgspec.DecodeError:
        return [], got.revision


async def put(js: JetStreamContext, tenant: str, thread: str, kind: str, text: str, *, prefix: str = "MEMORY",
              ttl: float = DEFAULT_TTL, max_entries: int = DEFAULT_MAX, now: datetime | None = None) -> list[Entry]:
    """Append an entry to the thread's working memory and return the entries kept (oldest first, <= max_entries).

    ``kind``: ``focus`` (the current task; the newest focus is the current one), ``done`` (a completed task) or
    ``note``. ``text`` is stripped and cut to 2,000 characters. Raises ``ValueError`` for an unknown kind or empty
    text, ``InvalidToken`` for a bad tenant/thread; NATS errors propagate."""
    if kind not in KINDS:
        raise ValueError(f"unknown scratchpad kind {kind!r}; expected one of {KINDS}")
    text = " ".join(text.split())[:MAX_TEXT]
    if not text:
        raise ValueError("empty scratchpad text")
    key = _key(tenant, thread)
    kv = await bucket(js, prefix=prefix, ttl=ttl)
    now = now or datetime.now(UTC)
    for _ in range(10):  # compare-and-set: retry when another writer got in between
        items, rev = await _read(kv, key)
        items = _live(items, ttl, now)
        items.append(Entry(kind=kind, text=text, at=now))
        items = items[-max_entries:]
        try:
            if rev is None:
                await kv.create(key, _enc.encode(items))
            else:
                await kv.update(key, _enc.encode(items), last=rev)
            return items
        except KeyWrongLastSequenceError:
            continue
    raise RuntimeError(f"working memory of {tenant}/{thread}: too many concurrent writers")


async def drop(js: JetStreamContext, tenant: str, thread: str, kind: str, texts: list[str], *,
               prefix: str = "MEMORY", ttl: float = DEFAULT_TTL) -> int:
    """Remove the thread's entries of ``kind`` whose text is one of ``texts`` (as ``put`` stores them: whitespace
    collapsed, cut to 2,000 characters); returns how many went. The enricher drops the focus a withdrawn turn set
    (issue #26 item 6). Compare-and-set like ``put``; NATS errors propagate."""
    wanted = {" ".join(t.split())[:MAX_TEXT] for t in texts}
    key = _key(tenant, thread)
    kv = await bucket(js, prefix=prefix, ttl=ttl)
    for _ in range(10):
        items, rev = await _read(kv, key)
        kept = [e for e in items if not (e.kind == kind and e.text in wanted)]
        if rev is None or len(kept) == len(items):
            return 0
        try:
            await kv.update(key, _enc.encode(kept), last=rev)
            return len(items) - len(kept)
        except KeyWrongLastSequenceError:
            continue
    raise RuntimeError(f"working memory of {tenant}/{thread}: too many concurrent writers")


async def entries(js: JetStreamContext, tenant: str, thread: str, *, prefix: str = "MEMORY",
                  ttl: float = DEFAULT_TTL, now: datetime | None = None) -> list[Entry]:
    """The thread's live entries, oldest first (``[]`` when none or expired)."""
    kv = await bucket(js, prefix=prefix, ttl=ttl)
    items, _ = await _read(kv, _key(tenant, thread))
    return _live(items, ttl, now or datetime.now(UTC))


async def purge_thread(js: JetStreamContext, tenant: str, thread: str, *, prefix: str = "MEMORY") -> bool:
    """Remove the thread's working memory, every revision of it (for forgetting a thread). ``True`` if the bucket
    existed; a missing bucket means there was nothing to forget."""
    name = bucket_name(prefix)
    try:
        kv = _buckets.get(js, {}).get(name) or await js.key_value(name)
    except (NotFoundError, BadRequestError):
        return False
    await kv.purge(_key(tenant, thread))
    return True


def view(items: list[Entry]) -> dict[str, Any]:
    """What context shows of the entries (seed 004 Scratchpad ``to_markdown``): ``focus`` (newest focus text or
    ``None``), ``completed`` (newest ``SHOWN_DONE`` done texts, newest first), ``notes`` (newest ``SHOWN_NOTES``)."""
    focus = next((e.text for e in reversed(items) if e.kind == "focus"), None)
    done = [e.text for e in reversed(items) if e.kind == "done"][:SHOWN_DONE]
    notes = [e.text for e in reversed(items) if e.kind == "note"][:SHOWN_NOTES]
    return {"focus": focus, "completed": done, "notes": notes}


def render_lines(items: list[Entry]) -> list[str]:
    """Lines of the Tier-1 "[Working Memory]" section, most important first (the budget trims from the end)."""
    v = view(items)
    lines = []
    if v["focus"]:
        lines.append(f"Current focus: {v['focus']}")
    lines.extend(f"Recently completed: {t}" for t in v["completed"])
    lines.extend(f"Note: {t}" for t in v["notes"])
    return lines


async def handle(js: JetStreamContext, req: ScratchpadRequest, *, prefix: str = "MEMORY", ttl: float = DEFAULT_TTL,
                 max_entries: int = DEFAULT_MAX) -> dict[str, Any]:
    """Serve ``rpc.scratchpad``: ``{"tenant", "thread", "entries": [...], "focus", "completed", "notes"}``.

    Raises ``ValueError`` for a ``put`` without ``kind`` or ``text`` (the handler maps it to ``invalid_request``)."""
    if req.op == "put":
        if req.kind is None or req.text is None:
            raise ValueError("op put needs kind and text")
        items = await put(js, req.tenant, req.thread, req.kind, req.text, prefix=prefix, ttl=ttl,
                          max_entries=max_entries)
    elif req.op == "clear":
        await purge_thread(js, req.tenant, req.thread, prefix=prefix)
        items = []
    else:
        items = await entries(js, req.tenant, req.thread, prefix=prefix, ttl=ttl)
    return {"tenant": req.tenant, "thread": req.thread, "entries": [msgspec.to_builtins(e) for e in items],
            **view(items)}
