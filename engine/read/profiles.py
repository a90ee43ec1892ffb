"""MEMORY.md and USER.md (seed 004 "MEMORY.md / USER.md"): Markdown profiles rendered from a user's current memory
items.

MEMORY.md is the core memory an agent loads every time: permanent rules and key facts (type RULE, priority
PERMANENT, or importance >= 0.8). USER.md is the user profile: who they are, what they prefer, stable facts and open
tasks. Only active items count (not quarantined, not superseded, not expired at the request's ``as_of``); each line ends
with its memory id so that ``memengine audit`` leads from any line to the turns it came from.

The profiles are rendered on read from ``memory_items`` rather than stored: a stored copy would be a second read
model that must equal the first; a rendering of the current rows cannot drift.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

KEY_IMPORTANCE = 0.8
_USER_SECTIONS = (("Profile", {"PROFILE"}), ("Preferences", {"PREFERENCE"}), ("Facts", {"FACT", "EPISODIC"}),
                  ("Skills", {"SKILL", "PATTERN"}), ("Open tasks", {"TASK"}))


def _line(item: dict[str, Any]) -> str:
    return f"- {item['text'].strip()} `[{item['memory_id'][:8]}]`"


def _order(items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(items, key=lambda i: (-float(i["importance"]), i["valid_at"], i["memory_id"]))


def render_profiles(user: str, items: Sequence[dict[str, Any]], *, expired_left_out: int = 0) -> dict[str, str]:
    """``{"MEMORY.md": ..., "USER.md": ...}`` for ``user`` from ``items`` (dicts as ``rpc.memories`` returns them:
    memory_id, type, text, importance, priority, status, valid_at): the caller passes the items valid at its
    ``as_of`` (``MemoryQueries.profile``; issue #15 item 2). ``expired_left_out``: how many active items the caller
    left out as expired, said in USER.md's header so that an imported old conversation is not cut silently.
    Deterministic for the same arguments."""
    active = [i for i in items if i["status"] == "active"]
    core = [i for i in active if i["type"] == "RULE" or i["priority"] == "PERMANENT"
            or float(i["importance"]) >= KEY_IMPORTANCE]
    rules = _order([i for i in core if i["type"] == "RULE"])
    key_facts = _order([i for i in core if i["type"] != "RULE"])
    memory = [f"# MEMORY.md — {user}", "",
              f"_Core memory: {len(core)} of {len(active)} active memories (rules, permanent items, importance >= "
              f"{KEY_IMPORTANCE}). Rendered by memengine; `memengine audit ID` shows where a line came from._", ""]
    memory += ["## Rules", *([_line(i) for i in rules] or ["- (none)"]), ""]
    memory += ["## Key facts", *([_line(i) for i in key_facts] or ["- (none)"]), ""]
    user_md = [f"# USER.md — {user}", "",
               f"_User profile from {len(active)} active memories. Rendered by memengine; `memengine audit ID` shows "
               f"where a line came from._", ""]
    if expired_left_out:
        user_md[-1:-1] = [f"_{expired_left_out} expired memories left out (their expires_at has passed; "
                          "`memengine profile --include-expired` shows them)._"]
    for title, types in _USER_SECTIONS:
        section = _order([i for i in active if i["type"] in types])
        if section:
            user_md += [f"## {title}", *(_line(i) for i in section), ""]
    return {"MEMORY.md": "\n".join(memory), "USER.md": "\n".join(user_md)}
