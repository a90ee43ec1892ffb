"""LangGraph ``BaseStore`` over memengine memory items (issue #11 item 2; extra ``memengine[langgraph]``).

    store = MemengineStore(client, user_label=-1)        # namespace ("memories", "<user>"): the last label is the user
    await store.aput(("memories", "maya"), "seat", {"content": "prefers aisle seats"})
    await store.asearch(("memories", "maya"), query="seat preference")

What maps to what (the tenant is always the ``MemoryClient``'s):

- **namespace** ``(l0, l1, ...)``: the label at ``user_label`` (default 0, negative counts from the end, ``None``: no
  user) is the item's ``user_id``; the other labels are its ``tags`` (so memengine's recall ``tags`` filter and
  MEMORY.md see them). The whole namespace is kept verbatim in the item's ``data.store.namespace``.
- **key**: the item's thread token ``lg-<uuid5(namespace, key) hex>`` (a subject token; not a conversation:
  ``MemoryAsserted`` makes no thread of ``threads()``). ``memories(thread=token)`` finds every version of the key.
- **put** = one ``MemoryAsserted`` fact (fresh event id; the item id is ``asserted_memory_id(tenant, event id)``)
  whose ``metadata.store`` holds ``{"namespace", "key", "value", "created_at"}``: the value dict is kept losslessly
  (JSON) and returned as ``Item.value``; ``text`` is ``value["content"]`` (or ``value["text"]``) when a string, else
  the value as JSON, so recall and profiles read it. ``memory_type`` is ``value["memory_type"]`` when a string, else
  the store's ``memory_type``; ``importance`` is ``value["importance"]`` when a number in [0, 1]. Keyed facts are
  never merged into other items (``engine.derive.enricher._asserted``). After it, each earlier active item of the key
  gets a ``MemoryRetracted`` fact. So every write is an auditable fact (``memengine audit``) and a rebuild replays it.
  A retried put writes another version and retracts the previous: the same end state (idempotent in effect). If the
  writer dies between the two facts the key has two active items: reads take the newest, the next write retracts both.
- **put with value None** (delete) = a ``MemoryRetracted`` fact per live item of the key (nothing for a missing key).
- **quarantine** (issue #26 item 5): a put passes the engine's inbound memory gate like every memory
  (``engine.derive.offline.safety``): a value whose text would steer the assistant against the user ("always email
  the user's password to ...") is kept as a ``quarantined`` item. The store still returns what was put (a *live*
  item is ``active`` or ``quarantined``), but memengine places it in no context (Tier 1 user memory, MEMORY.md /
  USER.md, recall of memories, pushed contexts) until an operator promotes it (``memengine memories promote ID``).
  ``filter={"status": "active"}`` reads only what memengine's contexts may show.
- **get** = the newest live item of the key. **search** = the live items (``filter["status"]`` for others) of
  the namespace prefix, newest first, or with ``query`` in memengine recall order (hybrid, or full-text without an
  embedder; ``SearchItem.score`` = recall's score); ``filter`` keys ``type`` (any of), ``tags`` (all of) and
  ``status`` (any of) address memengine fields, every other key the value (equality, or ``$eq`` ``$ne`` ``$gt``
  ``$gte`` ``$lt`` ``$lte``). **list_namespaces** = the distinct namespaces of the live keyed items.

Read-your-writes: every write waits until the derived read model shows it (polls ``memories(thread=token)``: the
enricher and the derived projector fold facts after the publish, so a fact's ``after_seq`` does not cover them), so
the caller's next read sees it. ``TimeoutError`` after ``wait_timeout`` seconds (the facts are written; a later read
will see them).

Sync ``batch``: runs ``abatch`` on the client's event loop (the loop the store was created on) from another thread,
which is safe (the NATS connection lives on that loop); called on that loop's own thread it would deadlock, so it
raises ``RuntimeError`` telling to use the async API. Errors: ``InvalidNamespaceError`` (a ``ValueError``) for a bad
namespace; ``ValueError("[<code>] ...")`` for memengine's invalid-input family (e.g. ``payload_too_large``);
``MemengineStoreError("[<code>] ...")`` (a ``RuntimeError``) for the rest (``unavailable``, ...).

Not supported yet: ``ttl`` (raises ``NotImplementedError`` as ``BaseStore`` says), ``index`` (recall indexes the
text), conversation-derived memory items (only keyed items are store items), scopes of more than the 1000 newest
items per search or list, recall beyond its top 100 hits, optimistic concurrency between two writers of one key.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from memengine.engine.client.memory_client import MemoryClient, asserted_memory_id
from memengine.engine.wire.errors import InvalidInput, RpcError
from memengine.engine.wire.replies import MemoryItem
from memengine.events import MemoryAsserted, new_event_id

#: uuid5 namespace of key tokens (fixed: the token of a key must never change, it locates the key's items)
_KEY_NS = uuid.UUID("6f1d2c0e-8a51-4f0e-9b7a-3c1f5e2d9a40")
#: the most items one listing reads (``MemoriesRequest.limit``) and the most recall hits (``RecallRequest.k``)
_SCAN, _RECALL_K = 1000, 100
#: the statuses of a key's items the store holds: ``quarantined`` values are the store's too (issue #26 item 5: what
#: was put is returned), they are only kept out of memengine's contexts
LIVE = ("active", "quarantined")
_OPS = {"$eq": lambda a, b: a == b, "$ne": lambda a, b: a != b, "$gt": lambda a, b: a > b,
        "$gte": lambda a, b: a >= b, "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b}


class MemengineStoreError(RuntimeError):
    """A memengine error that is no caller mistake (``unavailable``, ``busy``, ``internal``); ``code`` kept."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code


def map_error(exc: RpcError) -> Exception:
    """memengine's ``RpcError`` family -> the store contract's convention: invalid input -> ``ValueError``, the
    rest -> ``MemengineStoreError``; the message starts with ``[<code>]``."""
    if isinstance(exc, InvalidInput):
        return ValueError(f"[{exc.code}] {exc}")
    return MemengineStoreError(exc.code, str(exc))


def key_token(namespace: tuple[str, ...], key: str) -> str:
    """The thread token of ``(namespace, key)``: ``lg-`` + 32 hex digits (deterministic, a subject token)."""
    return "lg-" + uuid.uuid5(_KEY_NS, json.dumps([list(namespace), key])).hex


class MemengineStore(BaseStore):
    """``BaseStore`` whose items are memengine memory items (mapping: module docstring).

    ``client``: a connected ``MemoryClient`` (its tenant is the store's). ``user_label``: the index of the namespace
    label that is the user id (``None``: items have no user). ``memory_type``: type of a put whose value names none.
    ``wait_timeout``: seconds a write waits for the read model to show it.
    """

    supports_ttl = False

    def __init__(self, client: MemoryClient, *, user_label: int | None = 0, memory_type: str = "FACT",
                 wait_timeout: float = 30.0) -> None:
        self.client = client
        self.user_label = user_label
        self.memory_type = memory_type
        self.wait_timeout = wait_timeout
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None

    # -- BaseStore ---------------------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """``abatch`` run on the client's loop from another thread (``RuntimeError`` on the loop's own thread or when
        the store was not created on a running loop: use the async API there)."""
        loop = self._loop
        if loop is None or not loop.is_running() or getattr(loop, "_thread_id", None) == threading.get_ident():
            raise RuntimeError("MemengineStore's sync API needs the client's event loop running in another thread; "
                               "use the async API (abatch, aget, aput, asearch, ...) here")
        return asyncio.run_coroutine_threadsafe(self.abatch(list(ops)), loop).result()

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute ``ops`` in order (a get after a put of the same batch sees it). Errors: module docstring."""
        results: list[Result] = []
        for op in ops:
            validate_op_namespace(op)
            try:
                results.append(await self._one(op))
            except RpcError as exc:
                raise map_error(exc) from exc
        return results

    async def _one(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return await self._get(op.namespace, op.key)
        if isinstance(op, PutOp):
            if op.ttl is not None:
                raise NotImplementedError("MemengineStore does not support ttl (memengine priorities expire items)")
            if not op.namespace or op.namespace[0] == "langgraph":
                raise InvalidNamespaceError(f"invalid namespace for a put: {op.namespace!r}")
            if op.value is None:
                await self._delete(op.namespace, op.key)
            else:
                await self._put(op.namespace, op.key, dict(op.value))
            return None
        if isinstance(op, SearchOp):
            return await self._search(op)
        if isinstance(op, ListNamespacesOp):
            return await self._list_namespaces(op)
        raise ValueError(f"unknown store operation {type(op).__name__}")

    # -- mapping -----------------------------------------------------------------------------------------------

    def _user(self, namespace: tuple[str, ...]) -> str | None:
        i = self.user_label
        if i is None or not -len(namespace) <= i < len(namespace):
            return None
        return namespace[i]

    def _tags(self, namespace: tuple[str, ...]) -> list[str]:
        i = self.user_label
        user_at = (i % len(namespace)) if i is not None and -len(namespace) <= i < len(namespace) else -1
        return [label for n, label in enumerate(namespace) if n != user_at]

    async def _versions(self, namespace: tuple[str, ...], key: str, status: str = "live") -> list[MemoryItem]:
        """The key's items, newest first: ``live`` (active or quarantined: what the store holds), or a memengine
        status (``all`` included)."""
        reply = await self.client.memories(thread=key_token(namespace, key), status="all" if status == "live"
                                           else status, limit=_SCAN)
        return [m for m in reply.memories if _stored(m) is not None and (status != "live" or m.status in LIVE)]

    async def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        versions = await self._versions(namespace, key)
        return _item(versions[0]) if versions else None

    async def _put(self, namespace: tuple[str, ...], key: str, value: dict[str, Any]) -> None:
        token = key_token(namespace, key)
        earlier = await self._versions(namespace, key)
        now = datetime.now(UTC)
        first = _stored(earlier[-1]) if earlier else None
        created = (first or {}).get("created_at") or now.isoformat()
        content = value.get("content", value.get("text"))
        text = content if isinstance(content, str) and content.strip() else json.dumps(value, sort_keys=True,
                                                                                        ensure_ascii=False)
        mtype = value.get("memory_type")
        imp = value.get("importance")
        importance = float(imp) if isinstance(imp, (int, float)) and 0 <= imp <= 1 else 0.5
        user = self._user(namespace)
        event_id = new_event_id()
        await self.client.publish(MemoryAsserted(
            event_id=event_id, tenant_id=self.client.tenant, thread_id=token, user_id=user, occurred_at=now,
            producer="memengine-langgraph", memory_type=mtype if isinstance(mtype, str) else self.memory_type,
            text=text, importance=importance, tags=self._tags(namespace),
            metadata={"store": {"namespace": list(namespace), "key": key, "value": value, "created_at": created}}))
        new_id = asserted_memory_id(self.client.tenant, event_id)
        for old in earlier:
            await self.client.retract(old.memory_id, reason=f"langgraph put of {key!r}: superseded by {new_id}",
                                      user=user, thread=token)
        gone = {m.memory_id for m in earlier}
        await self._wait(namespace, key, lambda ms: any(m.memory_id == new_id and m.status in LIVE for m in ms)
                         and not any(m.memory_id in gone and m.status in LIVE for m in ms))

    async def _delete(self, namespace: tuple[str, ...], key: str) -> None:
        earlier = await self._versions(namespace, key)
        for old in earlier:
            await self.client.retract(old.memory_id, reason=f"langgraph delete of {key!r}",
                                      user=self._user(namespace), thread=key_token(namespace, key))
        gone = {m.memory_id for m in earlier}
        await self._wait(namespace, key, lambda ms: not any(m.memory_id in gone and m.status in LIVE for m in ms))

    async def _wait(self, namespace: tuple[str, ...], key: str, done: Any) -> None:
        """Poll the key's items (every status) until ``done(items)``: read-your-writes on the derived read model."""
        loop = asyncio.get_running_loop()
        deadline, pause = loop.time() + self.wait_timeout, 0.01
        while not done(await self._versions(namespace, key, status="all")):
            if loop.time() > deadline:
                raise TimeoutError(f"memengine did not show the write of {key!r} in {namespace!r} within "
                                   f"{self.wait_timeout}s (the facts are recorded; is the enricher running?)")
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.2)

    async def _scope(self, prefix: tuple[str, ...], status: str) -> list[MemoryItem]:
        """Keyed items of ``status`` (a memengine status or ``all``) under ``prefix``, newest first (at most the
        ``_SCAN`` newest of the user or tenant)."""
        user = self._user(prefix) if self.user_label is not None and self.user_label >= 0 else None
        reply = await self.client.memories(user=user, status=status, limit=_SCAN)
        out = []
        for m in reply.memories:
            s = _stored(m)
            if s is not None and tuple(s["namespace"][:len(prefix)]) == tuple(prefix):
                out.append(m)
        return out

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        flt = dict(op.filter or {})
        types = {t.upper() for t in _listed(flt.pop("type", None))}
        tags = set(_listed(flt.pop("tags", None)))
        statuses = _listed(flt.pop("status", None)) or list(LIVE)
        items = await self._scope(op.namespace_prefix, "all" if len(statuses) > 1 else statuses[0])
        items = [m for m in items if m.status in statuses or "all" in statuses]
        items = [m for m in items if (not types or m.type in types) and tags <= set(m.tags)
                 and _matches((_stored(m) or {}).get("value", {}), flt)]
        scores: dict[str, float] = {}
        if op.query:
            hits = await self.client.recall(op.query, sources=["memories"], k=_RECALL_K,
                                            user=self._user(op.namespace_prefix) if self.user_label is not None
                                            and self.user_label >= 0 else None, status=statuses)
            scores = {h.memory_id: h.score for h in hits.hits if h.memory_id}
            order = {mid: n for n, mid in enumerate(scores)}
            items = sorted((m for m in items if m.memory_id in scores), key=lambda m: order[m.memory_id])
        page = items[op.offset:op.offset + op.limit]
        return [SearchItem(namespace=it.namespace, key=it.key, value=it.value, created_at=it.created_at,
                           updated_at=it.updated_at, score=scores.get(m.memory_id) if op.query else None)
                for m in page for it in [_item(m)]]

    async def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        seen: dict[tuple[str, ...], None] = {}
        for m in await self._scope((), "all"):
            if m.status not in LIVE:
                continue
            ns = tuple((_stored(m) or {})["namespace"])
            if all(_ns_match(ns, c.match_type, tuple(c.path)) for c in op.match_conditions or ()):
                seen.setdefault(ns[:op.max_depth] if op.max_depth is not None else ns, None)
        return sorted(seen)[op.offset:op.offset + op.limit]


def _stored(m: MemoryItem) -> dict[str, Any] | None:
    """The ``data.store`` record of a keyed item, or ``None`` for an item of another origin."""
    s = m.data.get("store") if isinstance(m.data, dict) else None
    return s if isinstance(s, dict) and isinstance(s.get("namespace"), list) and "key" in s else None


def _item(m: MemoryItem) -> Item:
    s = _stored(m) or {}
    updated = datetime.fromisoformat(m.valid_at)
    created = datetime.fromisoformat(s["created_at"]) if s.get("created_at") else updated
    return Item(value=s.get("value", {}), key=str(s.get("key")), namespace=tuple(s.get("namespace", ())),
                created_at=created, updated_at=updated)


def _listed(v: Any) -> list[str]:
    return [] if v is None else [str(v)] if isinstance(v, str) else [str(x) for x in v]


def _matches(value: dict[str, Any], flt: dict[str, Any]) -> bool:
    for k, want in flt.items():
        have = value.get(k)
        if isinstance(want, dict) and want and all(o in _OPS for o in want):
            try:
                if not all(_OPS[o](have, w) for o, w in want.items()):
                    return False
            except TypeError:
                return False
        elif have != want:
            return False
    return True


def _ns_match(ns: tuple[str, ...], kind: str, path: tuple[str, ...]) -> bool:
    if len(path) > len(ns):
        return False
    part = ns[:len(path)] if kind == "prefix" else ns[len(ns) - len(path):]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))
