"""MEMORY.md / USER.md rendering: which items go where, order, and that inactive items never show."""

from __future__ import annotations

from memengine.engine.read.profiles import render_profiles


def item(mid: str, type_: str, text: str, importance: float = 0.5, priority: str = "LONG_TERM",
         status: str = "active", valid_at: str = "2026-01-01T00:00:00+00:00") -> dict:
    return {"memory_id": mid, "type": type_, "text": text, "importance": importance, "priority": priority,
            "status": status, "valid_at": valid_at}


def test_sections_and_filters() -> None:
    items = [
        item("r1aaaaaaaa", "RULE", "Always answer in English.", priority="PERMANENT"),
        item("p1aaaaaaaa", "PREFERENCE", "Maya prefers aisle seats.", importance=0.9),
        item("p2aaaaaaaa", "PREFERENCE", "Maya likes tea."),
        item("f1aaaaaaaa", "FACT", "Maya lives in Denver.", status="superseded"),
        item("f2aaaaaaaa", "FACT", "Maya lives in Boston."),
        item("q1aaaaaaaa", "FACT", "Maybe Maya likes jazz.", status="quarantined"),
        item("t1aaaaaaaa", "TASK", "Maya must send the report by Friday."),
    ]
    out = render_profiles("maya", items)
    mem, user = out["MEMORY.md"], out["USER.md"]
    assert "Always answer in English. `[r1aaaaaa]`" in mem.split("## Key facts")[0]
    assert "aisle seats" in mem.split("## Key facts")[1]  # importance >= 0.8 is a key fact
    assert "likes tea" not in mem
    assert "Denver" not in mem + user and "jazz" not in mem + user  # superseded and quarantined never show
    assert user.index("aisle seats") < user.index("likes tea")  # more important first
    assert "## Open tasks\n- Maya must send the report by Friday." in user
    assert render_profiles("maya", list(reversed(items))) == out  # deterministic


def test_empty_profile() -> None:
    out = render_profiles("nobody", [])
    assert "## Rules\n- (none)" in out["MEMORY.md"] and out["USER.md"].startswith("# USER.md — nobody")


def test_expired_left_out_is_said() -> None:
    """Issue #15 item 2: items left out as expired are counted in USER.md's header, never dropped silently."""
    items = [item("p1aaaaaaaa", "PREFERENCE", "Maya likes tea.")]
    user = render_profiles("maya", items, expired_left_out=3)["USER.md"]
    assert "_3 expired memories left out" in user and "--include-expired" in user
    assert "expired" not in render_profiles("maya", items)["USER.md"]
