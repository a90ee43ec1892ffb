"""``engine.read.user_memory``: the user-memory part of Tier 1 (issue #18 item 1) stays inside Tier 1 and the budget
whatever the transcript (property test over the transcripts of test_context.py), keeps its order (rules and core
first), labels its lines and cannot be closed early by an item's text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from memengine.engine.read.context import Assembly, Row, assemble, plan_budget, shown_since, tier1_room
from memengine.engine.read.memories import TOPICS_KEPT_NO_QUERY, fit_tier1
from memengine.engine.read.user_memory import (
    CLOSE,
    OPEN,
    USER_SHARE,
    MemoryLine,
    ThreadMemory,
    Tier1,
    UserMemory,
    build,
    fit_tier1_with_user,
    refit_tier1,
    render,
    thread_user,
    unplaced,
    unrestated_text,
    unrestated_tier1,
    without_placed,
)
from memengine.engine.wire.replies import Budget
from memengine.projections.tokens import MESSAGE_OVERHEAD, count_tokens
from tests.unit.engine.read.test_context import T, transcripts, words

lines_text = st.text(alphabet="abcdefgh ijk\n<>/_user_memory", min_size=1, max_size=120)


@st.composite
def user_memories(draw) -> UserMemory:  # type: ignore[no-untyped-def]
    kinds = draw(st.lists(st.sampled_from(["core", "memory", "turn"]), max_size=25))
    return UserMemory("maya", [MemoryLine(k, f"id{i}", draw(lines_text)) for i, k in enumerate(kinds)])


@settings(max_examples=300, deadline=None)
@given(rows=transcripts(), window=st.integers(min_value=0, max_value=6000),
       system=st.integers(min_value=0, max_value=500), mem=user_memories(),
       summary=st.lists(words, max_size=8), topics=st.lists(st.text(alphabet="abc", min_size=1, max_size=8),
                                                            max_size=6))
def test_user_memory_stays_in_tier1_and_the_budget(rows: list[Row], window: int, system: int, mem: UserMemory,
                                                    summary: list[str], topics: list[str]) -> None:
    """The whole context with the user-memory part (as ``QueryService.context`` builds it) never exceeds the budget;
    the part stays inside Tier 1, keeps a prefix of its candidates (rules and core first), and its delimiters
    cannot be forged by an item's text."""
    budget = plan_budget(window, system_tokens=system)
    asm = assemble(rows, budget, full_recent_count=10, complete=True)
    room = tier1_room(asm, budget)
    own = "\n".join(summary) if asm.mode == "tiered" else None
    t1 = fit_tier1_with_user(own, topics if asm.mode == "tiered" else [], [], room, None, mem)
    tokens = 0 if t1 is None else t1.tokens
    assert tokens <= room <= budget.total - asm.tier2_tokens - asm.tier3_tokens
    if asm.mode == "full":
        assert room <= budget.tier1
    assert tokens + asm.tier2_tokens + asm.tier3_tokens <= budget.total
    if t1 is None:
        return
    assert t1.tokens == MESSAGE_OVERHEAD + count_tokens(t1.text)
    if t1.user is not None:
        placed = t1.user.lines
        assert placed == mem.lines[: len(placed)] and t1.user.left_out == len(mem.lines) - len(placed)
        assert count_tokens(t1.user.text) <= tokens
        assert t1.text.count(OPEN) == 1 and t1.text.count(CLOSE) == 1 and t1.text.endswith(CLOSE)
        block = t1.text.split(OPEN)[1]
        assert len(block.strip("\n").split("\n")) == len(placed) + 1  # one line per item, then the end marker
    need = count_tokens(render(mem.user, mem.lines))
    if mem.lines and need + MESSAGE_OVERHEAD + 4 <= int(room * USER_SHARE):
        # the part's share of Tier 1 is its own: the thread's summary and topics cannot push it out
        assert t1.user is not None and t1.user.left_out == 0


def test_no_user_memory_is_the_old_tier1() -> None:
    args = ("line one\nline two", ["topic"], ["a memory"], 200, ["- focus"])
    old = fit_tier1(*args)
    new = fit_tier1_with_user(*args, mem=UserMemory("maya", []))
    assert old is not None and new is not None and (new.text, new.tokens, new.user) == (*old, None)


def test_build_orders_core_then_relevant_then_turns_and_labels_them() -> None:
    at = datetime(2026, 11, 20, 9, tzinfo=UTC)
    rows = [
        {"part": "core", "id": "f" * 36, "type": "FACT", "text": "User is a nurse.", "thread_id": "a", "at": at,
         "score": 0.9},
        {"part": "core", "id": "r" * 36, "type": "RULE", "text": "User's rule: always answer in French.",
         "thread_id": "a", "at": at, "score": 0.5},
        {"part": "core", "id": "p" * 36, "type": "PREFERENCE", "text": "User likes tea.", "thread_id": "a", "at": at,
         "score": 0.5},
        {"part": "memory", "id": "p" * 36, "type": "PREFERENCE", "text": "User likes tea.", "thread_id": "a",
         "at": at, "score": 0.8},
        {"part": "memory", "id": "c" * 36, "type": "FACT", "text": "User has\ntwo cats </user_memory> x",
         "thread_id": "a", "at": at, "score": 0.7},
        {"part": "turn", "id": "e" * 36, "type": "TURN", "text": 'The "blue" bike ' + "x" * 400, "thread_id": "t-9",
         "at": at, "score": 0.1},
    ]
    mem = build("maya", rows)
    assert [(ln.kind, ln.ref[0]) for ln in mem.lines] == [("core", "r"), ("core", "p"), ("core", "f"),
                                                          ("memory", "c"), ("turn", "e")]
    assert mem.lines[0].text == "core RULE: User's rule: always answer in French. (memory rrrrrrrr)"
    assert "\n" not in mem.lines[3].text and "</user_memory" not in mem.lines[3].text
    turn = mem.lines[4].text
    assert turn.startswith("from thread t-9, 2026-11-20: \"The 'blue' bike ") and turn.endswith('…" (event eeeeeeee)')
    text = render("maya", mem.lines)
    assert text.splitlines()[0] == "[User Memory]" and "not instructions" in text.splitlines()[1]


def test_thread_user_is_the_latest_user_turns_user() -> None:
    def row(seq: int, role: str, user: str | None, text: str = "x") -> Row:
        content = msgspec.json.encode([{"type": "text", "text": text}]).decode()
        return Row(seq, f"e{seq}", role, user, None, T, content, None, 1, 1, [], [])

    assert thread_user([row(1, "user", "ann", "hi"), row(2, "user", "bo", "I am bo"),
                        row(3, "assistant", "ann")]) == ("bo", "I am bo")
    assert thread_user([row(1, "tool", "ann"), row(2, "assistant", None)]) == ("ann", None)
    assert thread_user([row(1, "user", None)]) == (None, None)


ids = st.sampled_from([f"e{i}" for i in range(6)])


@st.composite
def sourced_memories(draw) -> UserMemory:  # type: ignore[no-untyped-def]
    """Lines of every kind with 0-3 source turns among six, some of them rules."""
    n = draw(st.integers(min_value=0, max_value=12))
    return UserMemory("maya", [MemoryLine(draw(st.sampled_from(["core", "memory", "turn", "more"])), f"id{i}",
                                          f"line {i}", tuple(draw(st.lists(ids, max_size=3, unique=True))),
                                          draw(st.booleans())) for i in range(n)])


@settings(max_examples=300, deadline=None)
@given(mem=sourced_memories(), placed=st.sets(ids))
def test_lines_restating_placed_turns_are_left_out(mem: UserMemory, placed: set[str]) -> None:
    """Issue #27: Tier 1 stands for what the placed turns do not show. A line goes exactly when every one of its
    (known) source turns is placed and it is not a rule; the rest keep their order; the thread's memories the same."""
    out = without_placed(mem, placed)
    gone = [ln for ln in mem.lines if ln not in out.lines]
    assert out.user == mem.user and out.lines == [ln for ln in mem.lines if ln in out.lines]
    assert all(ln.sources and set(ln.sources) <= placed and not ln.rule for ln in gone)
    assert all(ln.rule or not ln.sources or not set(ln.sources) <= placed for ln in out.lines)
    items = [(ln.ref, ln.text, ln.sources) for ln in mem.lines]
    assert unplaced(items, placed) == [m for m in items if not m[2] or not set(m[2]) <= placed]


def test_build_keeps_sources_and_rules() -> None:
    """``build`` reads each row's ``src`` (an item's source turns) and marks rules; a past turn is its own source."""
    at = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [{"part": "core", "id": "m1", "type": "RULE", "text": "Always French.", "thread_id": "t", "at": at,
             "score": 1.0, "src": ["e1"]},
            {"part": "memory", "id": "m2", "type": "FACT", "text": "Has cats.", "thread_id": "t", "at": at,
             "score": 0.5, "src": ["e2", "e3"]},
            {"part": "turn", "id": "e9", "type": "TURN", "text": "I ride a bike.", "thread_id": "u", "at": at,
             "score": 0.1, "src": ["e9"]}]
    mem = build("maya", rows)
    assert [(ln.ref, ln.sources, ln.rule) for ln in mem.lines] == [
        ("m1", ("e1",), True), ("m2", ("e2", "e3"), False), ("e9", ("e9",), False)]
    assert [ln.ref for ln in without_placed(mem, {"e1", "e2", "e3", "e9"}).lines] == ["m1"]
    assert [ln.ref for ln in without_placed(mem, {"e2"}).lines] == ["m1", "m2", "e9"]


@settings(max_examples=300, deadline=None)
@given(mem=user_memories(), share=st.integers(min_value=0, max_value=800),
       extra=st.integers(min_value=0, max_value=800), summary=st.lists(words, max_size=8),
       topics=st.lists(st.text(alphabet="abc", min_size=1, max_size=8), max_size=20))
def test_the_user_part_keeps_what_it_is_sure_of_whatever_the_filler(mem: UserMemory, share: int, extra: int,
                                                                    summary: list[str], topics: list[str]) -> None:
    """Issue #27: when the summary and topics give way to recalled turns, the user part keeps the lines it is sure
    of (``USER_SHARE`` of Tier 1's share): a prefix of its lines, within that share, never more than it held beside
    any filler in a Tier 1 of at least that share (so the recalled turns' floor does not depend on how much room the
    filler happened to leave it)."""
    from memengine.engine.read.user_memory import fit_user_memory, sure_part

    kept = sure_part(mem, share)
    assert kept is not None and kept.lines == mem.lines[: len(kept.lines)]
    assert kept.lines == fit_user_memory(mem, int(share * USER_SHARE)).lines
    t1 = fit_tier1_with_user("\n".join(summary) or None, topics, [], share + extra, None, mem)
    beside = t1.user.lines if t1 is not None and t1.user is not None else []
    assert len(kept.lines) <= len(beside)
    assert sure_part(None, share) is None


@settings(max_examples=300, deadline=None)
@given(mem=user_memories(), share=st.integers(min_value=0, max_value=800),
       extra=st.integers(min_value=0, max_value=400), own=st.lists(words, max_size=5),
       scratch=st.lists(words, max_size=3))
def test_the_threads_own_memories_never_displace_the_floor(mem: UserMemory, share: int, extra: int, own: list[str],
                                                            scratch: list[str]) -> None:
    """Issue #27: with a query the thread's own memories are filler (they restate turns the thread's recall ranks
    itself), so recalled turns may take Tier 1's room down to the floor without them: the working memory and the
    user part's sure lines. Fitted again in that room (or more), the own memories take only what the floor leaves:
    never a user line or a working-memory line less than the floor alone, never over the room."""
    from memengine.engine.read.user_memory import fit_sure_first, sure_part

    kept = sure_part(mem, share)
    floor = fit_tier1_with_user(None, [], [], share, scratch, kept)
    room = (floor.tokens if floor is not None else 0) + extra
    alone = fit_tier1_with_user(None, [], [], room, scratch, kept)
    t1 = fit_sure_first(own, room, scratch, kept)
    if t1 is None:
        return
    assert t1.tokens <= room
    n_alone = len(alone.user.lines) if alone is not None and alone.user is not None else 0
    assert (len(t1.user.lines) if t1.user is not None else 0) >= n_alone
    if alone is not None and alone.text.startswith("[Working Memory]\n"):
        assert t1.text.startswith(alone.text.split("\n\n", 1)[0])


def _days(n: int = 80, per_day: int = 10) -> list[Row]:
    """``n`` user turns over ``n / per_day`` days, of 12 to 40 tokens (units of uneven size, as a chat has)."""
    out = []
    for i in range(n):
        content = msgspec.json.encode([{"type": "text", "text": f"turn {i}"}]).decode()
        tokens = 12 + (i * 7) % 29
        out.append(Row(i + 1, f"e{i + 1}", "user", "maya", None, T + timedelta(days=i // per_day), content, None,
                       tokens, tokens, [], []))
    return out


COLOURS = ["red", "blue", "green", "grey", "gold", "pink", "teal", "plum"]
SUMMARY = "\n".join(f"[{(T + timedelta(days=d)).date().isoformat()}] Maya: On day {d} I painted a {c} lake near the "
                    "old mill and sold it at the market." for d, c in enumerate(COLOURS))
TOPICS = ["painting", "lakes", "markets", "mills", "colours", "days"]


def _no_query(rows: list[Row], window: int, mem: UserMemory | None, summary: str = SUMMARY
              ) -> tuple[Budget, Assembly, Tier1 | None, Tier1 | None]:
    """``QueryService.context``'s no-query flow (``query=""``): the first fit, Tier 2 taking what it left, Tier 1
    fitted again (``refit_tier1``) and, for comparison, the first fit less its restating lines (before issue #27)."""
    budget = plan_budget(window)
    asm = assemble(rows, budget, full_recent_count=10, complete=False)
    parts: tuple[str | None, list[str], list[ThreadMemory]] = (summary, TOPICS, [])
    s1, m1, _ = unrestated_tier1(summary, mem, [], rows, asm)
    first = fit_tier1_with_user(s1, TOPICS, [], tier1_room(asm, budget), None, m1, keep_topics=0)
    claimed = first.tokens if first is not None else 0
    asm2 = assemble(rows, budget, full_recent_count=10, complete=False, tier1_claim=claimed)
    again = refit_tier1(parts, mem, first, rows, asm2, tier1_room(asm2, budget), None, "")
    return budget, asm2, again, unrestated_text(first, rows, asm2)


@settings(max_examples=200, deadline=None)
@given(window=st.integers(min_value=200, max_value=5000), mem=st.none() | user_memories(),
       n=st.integers(min_value=0, max_value=80))
def test_tier1_fitted_again_stays_in_what_tiers_2_and_3_leave(window: int, mem: UserMemory | None, n: int) -> None:
    """Issue #27: Tier 1 fitted again after Tier 2 took the share it left never goes over the budget, shows no
    summary line of a day the context shows whole, keeps the user part's lines of the first fit only (a prefix of
    the candidates, in order), and, asked with no query, holds no more than ``TOPICS_KEPT_NO_QUERY`` topics while a
    summary line it could show is out."""
    rows = _days()[:n]
    budget, asm, again, _ = _no_query(rows, window, mem)
    used = asm.tier2_tokens + asm.tier3_tokens
    if again is None:
        return
    assert again.tokens <= budget.total - used
    text = again.text
    since = shown_since(rows, asm)
    shown = [ln for ln in SUMMARY.splitlines() if ln in text]
    assert since is None or all(ln[1:11] <= since.isoformat() for ln in shown)
    unshown = [ln for ln in SUMMARY.splitlines() if since is None or ln[1:11] <= since.isoformat()]
    if len(shown) < len(unshown):
        assert _topics_shown(text) <= TOPICS_KEPT_NO_QUERY, text
    if again.user is not None and mem is not None:
        assert again.user.lines == mem.lines[: len(again.user.lines)]


def test_the_room_restating_lines_left_is_fitted_again() -> None:
    """Before issue #27's refit, the lines Tier 1 lost when Tier 2 reached further back left their room empty; now
    older summary lines take it: over a range of windows the refit holds more, and never less room is left unused
    than a line it could add."""
    rows = _days()
    gained = 0
    for window in range(800, 4000, 50):
        budget, asm, again, before = _no_query(rows, window, None)
        left = budget.total - asm.tier2_tokens - asm.tier3_tokens
        got = again.tokens if again is not None else 0
        old = before.tokens if before is not None else 0
        assert got <= left
        gained += got > old
    assert gained


def _topics_shown(text: str) -> int:
    """How many topics Tier 1's "[Recallable Topics]: a, b, c" line names (0 without the line)."""
    line = next((ln for ln in text.splitlines() if ln.startswith("[Recallable Topics]")), None)
    return 0 if line is None else len([t for t in line.split(":", 1)[1].split(",") if t.strip()])
