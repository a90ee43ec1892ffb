"""Hypothesis strategies: hostile characters inserted into every string of every fact type (issue #26 item 3).

The string slots are found by walking the msgspec struct fields of a fully populated event of each type
(``events.FACT_TYPES``), so a field added to the contract later is covered without a change here: every optional
field is given a value, every union of blocks one member of each kind, every free-form ``dict[str, Any]`` a nested
object, and every string (value or key, at any depth) is a slot. A slot is *free text* unless its declared type
constrains it (a subject token's pattern, a ``Literal``); there the contract's own validation refuses most
characters anyway.

``unstorable(s)`` is the contract's rule (``events.codec``): U+0000 or a lone surrogate.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import msgspec
import msgspec.inspect as mi
from hypothesis import strategies as st

from memengine.events import FACT_TYPES, Event

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

#: What is inserted: U+0000, the other C0 controls and DEL, C1 controls, format characters (bidi overrides, zero
#: width), line and paragraph separators, noncharacters, and lone surrogates (which no UTF-8 text can carry).
HOSTILE = st.lists(
    st.sampled_from(["\x00", "\x00", "\t", "\n", "\r", "\x01", "\x08", "\x0b", "\x0c", "\x1b", "\x1f", "\x7f",
                     "\x80", "\x85", "\x9f", "\u200b", "\u200d", "\u202e", "\u2066", "\u2028", "\u2029", "\ufeff",
                     "\ufffe", "\uffff", "\U0010ffff", "\\", "\\u0000", '"'])
    | st.characters(codec="utf-8", categories=["Cc", "Cf"])
    | st.characters(categories=["Cs"]),  # lone surrogates
    min_size=1, max_size=6).map("".join)


def unstorable(s: str) -> bool:
    """The contract's rule: a string no projection can store (U+0000, or a lone surrogate: not Unicode text)."""
    if "\x00" in s:
        return True
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _sample(t: mi.Type) -> Any:
    """A valid value of type ``t`` with every optional part present."""
    if isinstance(t, mi.UnionType):
        kinds = [x for x in t.types if not isinstance(x, mi.NoneType)]
        return _sample(kinds[0])
    if isinstance(t, mi.StructType):
        return t.cls(**{f.name: _sample(f.type) for f in t.fields})
    if isinstance(t, mi.ListType):
        item = t.item_type
        if isinstance(item, mi.UnionType):  # e.g. content blocks: one of each kind
            return [_sample(x) for x in item.types if not isinstance(x, mi.NoneType)]
        return [_sample(item)]
    if isinstance(t, mi.DictType):
        return {"k": "v", "nested": {"deep key": ["v", {"w": "x"}]}}
    if isinstance(t, mi.StrType):
        return "x"
    if isinstance(t, mi.LiteralType):
        return t.values[0]
    if isinstance(t, mi.UUIDType):
        return uuid.uuid4()
    if isinstance(t, mi.DateTimeType):
        return NOW
    if isinstance(t, mi.BoolType):
        return False
    if isinstance(t, mi.IntType):
        return t.ge or 0
    if isinstance(t, mi.FloatType):
        return 0.5
    if isinstance(t, mi.AnyType):
        return "v"
    raise TypeError(f"no sample for {t!r}: teach tests/hostile_text.py this type")


def full_event(cls: type[Event], tenant: str, thread: str) -> Event:
    """An event of ``cls`` with every field, optional ones included, set to a valid value."""
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    values = {f.name: _sample(f.type) for f in info.fields if f.name != "v"}  # v: the type's current version
    values.update(tenant_id=tenant, thread_id=thread, event_id=uuid.uuid4(), occurred_at=NOW)
    return cls(**values)


@dataclass(frozen=True)
class Slot:
    """A string's place: ``path`` of steps (``("attr", name)``, ``("item", i)``, ``("key", k)``, ``("value", k)``)
    and whether it is free text (no pattern, no literal) in the contract."""

    path: tuple[tuple[str, Any], ...]
    free: bool


def _free(t: mi.Type | None) -> bool:
    if t is None:  # inside free-form JSON
        return True
    kinds = t.types if isinstance(t, mi.UnionType) else (t,)
    return any(isinstance(k, mi.StrType) and k.pattern is None for k in kinds)


def slots(value: Any, t: mi.Type | None = None, path: tuple[tuple[str, Any], ...] = ()) -> list[Slot]:
    """Every string slot of ``value`` (a struct, list, dict or str) whose declared type is ``t`` (``None`` inside
    free-form JSON)."""
    if isinstance(value, msgspec.Struct):
        info = mi.type_info(type(value))
        assert isinstance(info, mi.StructType)
        return [s for f in info.fields for s in slots(getattr(value, f.name), f.type, (*path, ("attr", f.name)))]
    if isinstance(value, str):
        return [Slot(path, _free(t))]
    item_t: mi.Type | None = None
    if isinstance(t, mi.UnionType):
        t = next((x for x in t.types if isinstance(x, mi.ListType | mi.DictType)), None)
    if isinstance(value, list):
        item_t = t.item_type if isinstance(t, mi.ListType) else None
        return [s for i, v in enumerate(value) for s in slots(v, item_t, (*path, ("item", i)))]
    if isinstance(value, dict):
        val_t = t.value_type if isinstance(t, mi.DictType) and not isinstance(t.value_type, mi.AnyType) else None
        out = []
        for k, v in value.items():
            out.append(Slot((*path, ("key", k)), True))
            out.extend(slots(v, val_t, (*path, ("value", k))))
        return out
    return []


def replace_at(value: Any, path: tuple[tuple[str, Any], ...], change: Any) -> Any:
    """``value`` with the string at ``path`` replaced by ``change(old)``; structs are rebuilt without validation
    (as a publisher's code builds them)."""
    if not path:
        return change(value)
    (kind, at), rest = path[0], path[1:]
    if kind == "attr":
        return msgspec.structs.replace(value, **{at: replace_at(getattr(value, at), rest, change)})
    if kind == "item":
        return [replace_at(v, rest, change) if i == at else v for i, v in enumerate(value)]
    if kind == "key":
        return {(change(k) if k == at else k): v for k, v in value.items()}
    return {k: (replace_at(v, rest, change) if k == at else v) for k, v in value.items()}


def string_at(value: Any, path: tuple[tuple[str, Any], ...]) -> str:
    for kind, at in path:
        value = getattr(value, at) if kind == "attr" else value[at] if kind in ("item", "value") else at
    assert isinstance(value, str)
    return value


@st.composite
def hostile_events(draw: st.DrawFn, tenant: str = "acme", thread: str = "hostile") -> tuple[Event, Slot, str]:
    """``(event, slot, new string)``: a fully populated fact with hostile characters inserted into one string."""
    cls = draw(st.sampled_from(FACT_TYPES))
    base = full_event(cls, tenant, thread)
    slot = draw(st.sampled_from(slots(base)))
    chars = draw(HOSTILE)
    old = string_at(base, slot.path)
    at = draw(st.integers(min_value=0, max_value=len(old)))
    new = old[:at] + chars + old[at:]
    return replace_at(base, slot.path, lambda _: new), slot, new
