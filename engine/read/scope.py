"""User scope on the server (issue #26 item 4): a request that carries ``bound_user`` is answered for that user only.

The binding is the application's (``MemoryClient.for_user``, ``memengine mcp --user``, an HTTP key bound to a user;
``engine.wire.requests``), so the query handler enforces it whatever the rest of the request names, instead of
trusting each client library to filter what it was sent:

- a ``user`` filter (``recall``, ``memories``, ``profile``) may repeat the bound user, never name another
  (``forbidden``); left out, it becomes the bound user;
- a thread (``context``, ``history``, ``summary``, ``episodes``, ``scratchpad``) must be the bound user's: its owner
  in ``thread_activity.owner_user`` (the user of its first turn naming one, ``projections.thread_activity``) is the
  bound user, or nobody has claimed it yet (no row, or no turn). Another user's thread, or one whose turns name no
  user (the operator's), is ``forbidden`` (the convention of the client's checks since issue #18);
- ``threads`` lists the bound user's threads only (``QueryService.threads``);
- ``audit`` of a memory about another user (or about nobody) is ``forbidden``;
- the user-memory part of a context is the bound user's, never the latest speaker's
  (``QueryService._user_memory``).

Forbidden, not "not found": the client library answered so before, and a thread id is not a secret (it is in the
subject of every fact). A request without ``bound_user`` is operator scope: the whole tenant, as before.
"""

from __future__ import annotations

from typing import Any

import msgspec

from memengine.engine.wire.errors import RpcError
from memengine.engine.wire.requests import (
    AuditRequest,
    ContextRequest,
    HistoryRequest,
    ScratchpadRequest,
    ThreadRequest,
)

#: Requests about one thread: the thread must be the bound user's.
_THREAD_REQUESTS = (ContextRequest, HistoryRequest, ThreadRequest, ScratchpadRequest)

_OWNER_SQL = "SELECT owner_user, message_count FROM thread_activity WHERE tenant_id = $1 AND thread_id = $2"


def owns(owner: str | None, message_count: int, user: str) -> bool:
    """Whether ``user`` may use a thread whose ``thread_activity`` row has ``owner`` and ``message_count`` (module
    docstring): its owner, or a thread nobody has claimed (no turn yet: a label or a session end only)."""
    return owner == user or (owner is None and message_count == 0)


async def thread_allowed(db: Any, tenant: str, thread: str, user: str) -> bool:
    """``owns`` for the thread's row in ``db`` (a pool or connection); ``True`` for a thread with no row."""
    row = await db.fetchrow(_OWNER_SQL, tenant, thread)
    return row is None or owns(row["owner_user"], row["message_count"], user)


def forbidden_thread(thread: str, user: str) -> RpcError:
    """The error for a thread outside ``user``'s scope (it does not say whose it is)."""
    return RpcError("forbidden", f"thread {thread!r} is not a thread of user {user!r}")


async def admit(db: Any, req: Any) -> Any:
    """``req`` narrowed to its ``bound_user`` (unchanged without one). Raises ``RpcError("forbidden")`` for a
    ``user`` naming another user or a thread of another user (module docstring)."""
    user = getattr(req, "bound_user", None)
    if user is None:
        return req
    if hasattr(req, "user"):
        if req.user is not None and req.user != user:
            raise RpcError("forbidden", f"this request is bound to user {user!r}; it cannot read {req.user!r}")
        if req.user is None:
            req = msgspec.structs.replace(req, user=user)
    if isinstance(req, _THREAD_REQUESTS) and not await thread_allowed(db, req.tenant, req.thread, user):
        raise forbidden_thread(req.thread, user)
    return req


def check_result(req: Any, result: Any) -> None:
    """``RpcError("forbidden")`` when a bound request's ``audit`` reply is about another user (or about nobody)."""
    user = getattr(req, "bound_user", None)
    if user is None or not isinstance(req, AuditRequest) or not isinstance(result, dict):
        return
    memory = result.get("memory")
    if isinstance(memory, dict) and memory.get("user_id") != user:
        raise RpcError("forbidden", f"memory {memory.get('memory_id')} is not about user {user!r}")
