"""Upcasters: pure functions that lift an old event shape one version up (pyeventsourcing's ``upcast_v1_v2``).

The chain runs on the raw JSON object before the typed decode, so projections only ever see current versions.
Register a new step as ``UPCASTERS[(type_name, from_version)] = fn``; ``fn`` returns the object at
``from_version + 1``. Never edit a published step: add one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Raw = dict[str, Any]


def upcast_turn_v1_v2(obj: Raw) -> Raw:
    """``TurnRecorded`` v1 -> v2: plain ``text`` becomes ``content = [{"type": "text", "text": ...}]``.

    v1 is the plain-text turn shape (``{"type": "TurnRecorded", "v": 1, "role": "user", "text": "hi", ...}``),
    kept so that the simplest producer can publish without building content blocks.
    """
    out = dict(obj)
    text = out.pop("text", None)
    if "content" not in out:
        out["content"] = [{"type": "text", "text": "" if text is None else text}]
    out["v"] = 2
    return out


UPCASTERS: dict[tuple[str, int], Callable[[Raw], Raw]] = {
    ("TurnRecorded", 1): upcast_turn_v1_v2,
}


def upcast(obj: Raw, current: dict[str, int]) -> Raw:
    """Apply the chain to ``obj`` until it reaches ``current[type]``.

    Raises ``LookupError`` when a step is missing, ``ValueError`` for a version newer than this code knows.
    """
    name = obj.get("type")
    v = obj.get("v", 1)
    target = current.get(name, 1) if isinstance(name, str) else 1
    if not isinstance(v, int) or isinstance(v, bool):
        raise ValueError(f"version must be an integer, got {v!r}")
    if v > target:
        raise ValueError(f"{name} v{v} is newer than this engine understands (v{target})")
    while v < target:
        step = UPCASTERS.get((name, v)) if isinstance(name, str) else None
        if step is None:
            raise LookupError(f"no upcaster for {name} v{v} -> v{v + 1}")
        obj = step(obj)
        v = obj.get("v", v + 1)
    return obj
