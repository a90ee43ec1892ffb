"""OpenAI Agents SDK session backed by memengine (issue #11 item 3; extra ``memengine[openai-agents]``).

    mem = await MemoryClient.connect("nats://127.0.0.1:4222", tenant="acme")
    session = MemengineSession("chat-42", mem, user_id="maya")
    result = await Runner.run(agent, "Where do I sit?", session=session)

``MemengineSession`` implements the SDK's ``Session`` protocol (``agents.memory.session``, openai-agents 0.24):
``session_id``, ``session_settings``, ``get_items(limit)``, ``add_items(items)``, ``pop_item()``,
``clear_session()``. The session is one memengine thread (``thread``: the session id when it is a valid subject
token, else ``oa-`` + a digest of it); the tenant is the ``MemoryClient``'s.

What maps to what:

- each Responses input item is one ``TurnRecorded`` fact. Its blocks are what memengine reads (context, recall,
  summaries): a message's text parts -> ``text`` (role user / assistant / system; ``developer`` -> system),
  ``function_call`` -> assistant ``tool_use`` (``id`` = ``call_id``, ``input`` = the parsed arguments),
  ``function_call_output`` -> tool ``tool_result``, ``reasoning`` -> ``thinking``, any other ``*_call`` /
  ``*_output`` item -> ``tool_use`` / ``tool_result`` named after its type. The item itself, as JSON, is kept in the
  fact's ``metadata["openai_agents"]["item"]`` (the envelope's free, verbatim JSON object: no new field), and history
  replies carry ``metadata`` (``engine.wire.replies.MessageOut``), so ``get_items`` returns exactly what was added.
- ``get_items`` reads ``rpc.history`` (oldest first, paged) with read-your-writes on the sequence of this session's
  last write; turns of the thread recorded by other clients (``MemoryClient.record_turn``) come back as plain
  ``{"role", "content"}`` messages when they hold text, and are skipped otherwise.
- ``pop_item`` / ``clear_session`` publish ``TurnsWithdrawn`` (``event_ids`` = [the last turn] / ``all_before``):
  compensating facts, the log keeps the turns, every read model drops them (issue #26 item 6): the transcript,
  recall (thread-scoped and tenant-wide, the neighbours' windows included), the memories derived only from them
  (retracted, so never placed in another thread's context), the episodes and summary that quoted them, the
  working-memory focus they set.
- adds are idempotent: the event id of an item is a UUIDv5 of (tenant, thread, the event id of the turn before the
  batch, the item's index in the batch, a digest of the item), so a retried ``add_items`` publishes the same ids. A
  retry first looks at the tail of the history: the part of the batch already recorded (all of it after a success,
  a prefix after a failure part-way) is not published again, the rest is, under the same ids (the server's dedup
  drops a repeat whose acknowledgement was lost). Issues openai-agents-python#1699 / #4181 were duplicated history.
  The one ambiguity left: an item identical to the turn just before it, added alone right after it, reads as a
  retry of that turn and is not recorded twice. An item withdrawn and then added again at the same place would
  reuse its old id, which the log already holds: the instance that withdrew it knows and takes the id's next
  variant; another instance finds the item missing after its publish (the server or the projector dropped the
  copy; a copy with another ``occurred_at`` is a repeat to the projectors, ``events.retry_digest``, and skipped),
  withdraws what of the batch landed after it and records the rest under the next variant.
- consistency across instances: an instance reads as of its own last write; a new instance of the session in
  another process (a web request) passes the previous one's ``last_seq`` as ``after_seq`` to read its writes,
  else it sees what the read model has applied (usually milliseconds behind the log).

Errors: memengine's ``RpcError`` family becomes ``MemengineSessionError`` (an ``agents.exceptions.AgentsException``),
message ``"[<code>] ..."``; ``InvalidToken`` (a bad ``thread``) is raised by the constructor. All events of a batch
are validated (``check_event``) before the first is published, so an invalid item writes nothing.

Costs: ``get_items`` (any ``limit``) and ``pop_item`` read the whole history (pages of 1000); ``add_items`` reads
it once before and the batch's rows once after publishing.

Not supported yet: ``run_compaction`` (the SDK's Responses compaction); the per-run ``wrapper`` argument; a turn
pruned from ``messages`` (``MEMORY_MAX_MESSAGES_PER_THREAD``) before being withdrawn comes back from the log in
history; ``thread_activity.message_count`` counts the turns recorded, withdrawn ones included (an activity count).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import uuid
from datetime import UTC, datetime
from typing import Any

import nats.errors
from agents.exceptions import AgentsException
from agents.items import TResponseInputItem
from agents.memory.session import SessionABC
from agents.memory.session_settings import SessionSettings, resolve_session_limit

from memengine.engine.client.checks import check_event
from memengine.engine.client.memory_client import MemoryClient
from memengine.engine.wire.errors import RpcError
from memengine.engine.wire.replies import MessageOut
from memengine.events import (
    Block,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    TurnRecorded,
    TurnsWithdrawn,
    check_token,
    new_event_id,
    stable_event_id,
)
from memengine.events.model import Role

#: key of ``TurnRecorded.metadata`` holding ``{"item": <the Responses item>, "session": <session id>}``
META_KEY = "openai_agents"
PRODUCER = "memengine-openai-agents"
_PAGE = 1000  # rpc.history's largest page (engine.wire.requests.HistoryRequest)
_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,128}")
_SHORT = 1024  # events.model.ShortText
_MAX_WITHDRAWN = 1000  # event ids per TurnsWithdrawn (events.model)
_VARIANTS = 4  # an item's id has this many variants (``_salted``): the first unused one records it
_ROLES: dict[str, Role] = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}


class MemengineSessionError(AgentsException):
    """A memengine call of the session failed. ``code`` is memengine's error code (``engine.wire.errors``), also at
    the start of the message (``"[unavailable] no memengine query handler is running"``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code


def session_thread(session_id: str) -> str:
    """The memengine thread of ``session_id``: itself when it is a subject token (letters, digits, ``_``, ``-``, at
    most 128), else ``oa-`` + the first 32 hex digits of its SHA-256."""
    if _TOKEN.fullmatch(session_id):
        return session_id
    return "oa-" + hashlib.sha256(session_id.encode()).hexdigest()[:32]


class MemengineSession(SessionABC):
    """The Agents SDK's ``Session`` over a memengine thread (module docstring: the mapping, idempotency, errors).

    ``session_id``: the SDK's session id; ``client``: a connected ``MemoryClient`` (its tenant is the session's);
    ``thread``: the memengine thread (default ``session_thread(session_id)``); ``user_id``: recorded on every turn
    (who the memories are about); ``session_settings``: the SDK's (``limit`` = the default of ``get_items``);
    ``after_seq``: a stream sequence the first read must reflect (``last_seq`` of an instance in another process:
    reads of an instance are as of its own last write, or of ``after_seq``; without either they see what the read
    model has applied, usually within milliseconds of the write).
    Calls on one instance are serialised; the instance never closes the client.
    """

    def __init__(self, session_id: str, client: MemoryClient, *, thread: str | None = None,
                 user_id: str | None = None, session_settings: SessionSettings | None = None,
                 after_seq: int | None = None) -> None:
        self.session_id = session_id
        self.session_settings = session_settings
        self.client = client
        self.thread = check_token("thread", thread or session_thread(session_id))
        self.user_id = user_id
        self._last_seq = after_seq  # read-your-writes: the stream sequence of the last write this instance knows
        self._lock = asyncio.Lock()
        # events of the latest batch by id: a retry republishes them byte for byte, so the server's dedup drops the
        # copies whose acknowledgement was lost (a new occurred_at would make them a conflicting event instead)
        self._sent: dict[str, TurnRecorded] = {}
        self._withdrawn: set[str] = set()  # ids of turns this instance withdrew: a new turn must not reuse them

    @property
    def last_seq(self) -> int | None:
        """Stream sequence of this instance's last write (or its ``after_seq``): hand it to the next instance of the
        session elsewhere (``MemengineSession(..., after_seq=...)``) so that it reads its writes."""
        return self._last_seq

    # -- the Session protocol ------------------------------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items oldest first; with ``limit`` (or ``session_settings.limit``) the latest ``limit``.
        ``MemengineSessionError`` when memengine cannot answer (or answers stale: the last write not yet read)."""
        n = resolve_session_limit(limit, self.session_settings)
        if n is not None and n <= 0:
            return []
        async with self._lock:
            items = [item for m in await self._messages() if (item := _item_of(m)) is not None]
        return items if n is None else items[-n:]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Record ``items`` as turns, in order, each acknowledged by JetStream and projected before this returns.
        Idempotent (a retry records nothing twice, module docstring). ``MemengineSessionError``: ``invalid_event``
        / ``payload_too_large`` for an item memengine cannot hold (nothing of the batch is written), ``conflict``
        when the items could not be recorded under any of their ids, or what the engine answered."""
        if not items:
            return
        plain = [_plain(item) for item in items]
        async with self._lock:
            done, anchor = self._recorded_prefix([m.event_id for m in await self._messages()], plain)
            for variant in range(_VARIANTS):
                ids = self._ids(_salted(anchor, variant), plain)
                if any(i in self._withdrawn for i in ids[done:]):
                    continue  # this instance withdrew one of these ids: it cannot be recorded again
                events = [self._event(ids[i], plain[i]) for i in range(done, len(plain))]
                if not events:
                    return  # a retry of a batch that was recorded in full
                for ev in events:
                    _check(ev)  # all or nothing: validate the batch before the first publish
                self._sent = {str(ev.event_id): ev for ev in events}
                seqs = [await _publish(self.client, ev) for ev in events]
                self._last_seq = max(self._last_seq or 0, *seqs)
                first = await self._missing(events, min(seqs) - 1)
                if first is None:
                    return
                # An id of this batch was used before by a turn withdrawn since (pop_item / clear_session, perhaps
                # in another process, then the same item at the same place): the log kept the old one, so the
                # server or the projector dropped the new one. Withdraw what landed after the gap, to keep the
                # order, and record the rest under the next variant of the ids.
                landed = [str(ev.event_id) for ev in events[first + 1:]]
                self._withdrawn.update(str(ev.event_id) for ev in events[first:])
                for at in range(0, len(landed), _MAX_WITHDRAWN):
                    await self._withdraw(event_ids=landed[at:at + _MAX_WITHDRAWN],
                                         reason="add_items: re-recorded under new ids")
                done += first
            raise MemengineSessionError("conflict", f"items of session {self.session_id!r} could not be recorded "
                                        f"under {_VARIANTS} variants of their event ids")

    async def pop_item(self) -> TResponseInputItem | None:
        """Withdraw the latest turn (a ``TurnsWithdrawn`` fact) and return its item; ``None`` when empty."""
        async with self._lock:
            messages = await self._messages()
            if not messages:
                return None
            last = messages[-1]
            await self._withdraw(event_ids=[last.event_id], reason="pop_item")
            self._withdrawn.add(last.event_id)
            return _item_of(last)

    async def clear_session(self) -> None:
        """Withdraw every turn of the thread recorded so far (``TurnsWithdrawn`` with ``all_before``)."""
        async with self._lock:
            self._withdrawn.update(m.event_id for m in await self._messages())
            await self._withdraw(event_ids=[], all_before=True, reason="clear_session")

    # -- helpers -------------------------------------------------------------------------------------------------

    async def _messages(self, from_seq: int = 0) -> list[MessageOut]:
        """Every message of the thread after ``from_seq``, oldest first, as of this instance's last write at
        least."""
        out: list[MessageOut] = []
        while True:
            try:
                page = await self.client.history(self.thread, limit=_PAGE, from_seq=from_seq,
                                                 after_seq=self._last_seq)
            except RpcError as e:
                if e.code == "unknown_thread":
                    return []
                raise MemengineSessionError(e.code, e.message) from e
            if page.stale:
                raise MemengineSessionError("unavailable", f"history of {self.thread!r} has not yet caught up with "
                                            f"seq {self._last_seq} (applied {page.applied_seq}); retry")
            out.extend(page.messages)
            if page.next_from_seq is None:
                return out
            from_seq = page.next_from_seq

    def _ids(self, anchor: str, items: list[dict[str, Any]]) -> list[str]:
        """Event ids of ``items`` recorded after the turn ``anchor`` (an event id, ``""`` for an empty history)."""
        return [str(stable_event_id("openai-agents", self.client.tenant, self.thread, anchor, str(i), _digest(item)))
                for i, item in enumerate(items)]

    def _recorded_prefix(self, history: list[str], items: list[dict[str, Any]]) -> tuple[int, str]:
        """How many leading ``items`` already end the history (a retry), and the anchor their ids derive from."""
        for done in range(min(len(items), len(history)), 0, -1):
            anchor = history[-done - 1] if len(history) > done else ""
            known = [self._ids(_salted(anchor, v), items[:done]) for v in range(_VARIANTS)]
            if all(h in {ids[i] for ids in known} for i, h in enumerate(history[-done:])):
                return done, anchor
        return 0, history[-1] if history else ""

    async def _missing(self, events: list[TurnRecorded], from_seq: int) -> int | None:
        """Index in the batch of the first of ``events`` that did not reach the history (``None``: all did)."""
        present = {m.event_id for m in await self._messages(from_seq)}
        return next((i for i, ev in enumerate(events) if str(ev.event_id) not in present), None)

    def _event(self, event_id: str, item: dict[str, Any]) -> TurnRecorded:
        sent = self._sent.get(event_id)
        if sent is not None:
            return sent
        role, blocks = _blocks(item)
        return TurnRecorded(
            event_id=_uuid(event_id), tenant_id=self.client.tenant, thread_id=self.thread,
            occurred_at=datetime.now(UTC), user_id=self.user_id, session_id=self.session_id[:_SHORT],
            producer=PRODUCER, metadata={META_KEY: {"item": item, "session": self.session_id}}, role=role,
            content=blocks)

    async def _withdraw(self, *, event_ids: list[str], all_before: bool = False, reason: str) -> None:
        ev = TurnsWithdrawn(event_id=new_event_id(), tenant_id=self.client.tenant, thread_id=self.thread,
                            occurred_at=datetime.now(UTC), user_id=self.user_id, session_id=self.session_id[:_SHORT],
                            producer=PRODUCER, event_ids=[_uuid(i) for i in event_ids], all_before=all_before,
                            reason=reason)
        self._last_seq = max(self._last_seq or 0, await _publish(self.client, ev))
        self._sent = {}


async def _publish(client: MemoryClient, event: TurnRecorded | TurnsWithdrawn) -> int:
    """Publish ``event``; its stream sequence. ``MemengineSessionError`` with the code of memengine's error, or
    ``unavailable`` when JetStream did not acknowledge (the publish may still have landed: a retry is safe)."""
    try:
        return (await client.publish(event)).seq
    except RpcError as e:
        raise MemengineSessionError(e.code, e.message) from e
    except (TimeoutError, nats.errors.Error) as e:
        raise MemengineSessionError("unavailable", f"no acknowledgement for {type(event).__name__} "
                                    f"{event.event_id}: {type(e).__name__} {e}") from e


def _check(event: TurnRecorded) -> None:
    try:
        check_event(event)
    except RpcError as e:
        raise MemengineSessionError(e.code, e.message) from e


def _salted(anchor: str, variant: int) -> str:
    return anchor if variant == 0 else f"{anchor}/again-{variant}"


def _uuid(s: str) -> uuid.UUID:
    return uuid.UUID(s)


def _plain(item: Any) -> dict[str, Any]:
    """The item as plain JSON values (what is stored and returned); pydantic models are dumped as the SDK does."""
    def default(o: Any) -> Any:
        if hasattr(o, "model_dump"):
            return o.model_dump(mode="json", exclude_unset=True)
        raise TypeError(f"not JSON serialisable: {type(o).__name__}")

    value = json.loads(json.dumps(item, default=default))
    if not isinstance(value, dict):
        raise MemengineSessionError("invalid_input", f"a session item must be a JSON object, not {type(item).__name__}")
    return value


def _digest(item: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(item, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _text(value: Any) -> str:
    """The readable text of a message's ``content`` (a string, or a list of parts)."""
    if isinstance(value, str):
        return value
    parts = []
    for part in value if isinstance(value, list) else []:
        if isinstance(part, dict):
            t = part.get("text") or part.get("refusal") or part.get("transcript")
            parts.append(t if isinstance(t, str) else f"[{part.get('type', 'part')}]")
    return "\n".join(parts)


def _blocks(item: dict[str, Any]) -> tuple[Role, list[Block]]:
    """(role, blocks) of a Responses item: what memengine's own readers see of it (module docstring)."""
    kind = item.get("type", "message")
    if kind == "message" or ("role" in item and "type" not in item):
        role = _ROLES.get(str(item.get("role")), "user")
        return role, [TextBlock(text=_text(item.get("content", "")))]
    call_id = str(item.get("call_id") or item.get("id") or kind)[:_SHORT]
    if kind == "function_call":
        args = item.get("arguments", "")
        try:
            parsed = json.loads(args) if isinstance(args, str) and args else {}
        except ValueError:
            parsed = None
        inp = parsed if isinstance(parsed, dict) else {"arguments": args}
        return "assistant", [ToolUseBlock(id=call_id, name=str(item.get("name", ""))[:_SHORT], input=inp)]
    if kind.endswith("_output"):
        out = item.get("output", "")
        return "tool", [ToolResultBlock(tool_use_id=call_id,
                                        content=out if isinstance(out, str) else json.dumps(out))]
    if kind == "reasoning":
        summary = "\n".join(s.get("text", "") for s in item.get("summary", []) if isinstance(s, dict))
        return "assistant", [ThinkingBlock(thinking=summary)]
    return "assistant", [ToolUseBlock(id=call_id, name=kind[:_SHORT])]


def _item_of(m: MessageOut) -> TResponseInputItem | None:
    """The Responses item of a history message: the one this session stored, else a plain text message."""
    meta = m.metadata if isinstance(m.metadata, dict) else {}
    stored = meta.get(META_KEY)
    if isinstance(stored, dict) and isinstance(stored.get("item"), dict):
        item: TResponseInputItem = stored["item"]
        return item
    blocks = m.content if isinstance(m.content, list) else []
    text = "\n".join(b["text"] for b in blocks if b.get("type") == "text")
    if not text or m.role not in ("user", "assistant", "system"):
        return None
    return {"role": m.role, "content": text}  # type: ignore[return-value]  # role checked above; `in` does not narrow
