"""The enricher: facts in, derived events out (a process manager, not a projection).

It follows ``MEMORY_FACTS`` with its own durable consumer and checkpoint, and for each batch, once the core
projections have applied it (it reads their transcript) and the derived projections have applied what it published
before (it reads existing memories to decide merges):

- every user turn -> typed memory candidates with merge decisions -> ``MemoriesExtracted`` (seed 001 "写入",
  seed 002 §4.1, seed 004 §6);
- every ``MEMORY_SUMMARY_THRESHOLD`` new messages of a thread -> ``SummaryUpdated`` (rolling, recursive
  compression at ``MEMORY_MAX_SUMMARY_TOKENS``, seed 000 §3.1) and ``TopicsExtracted``;
- every ``SessionEnded`` -> ``EpisodeRecorded`` (seed 004 §4), and a turn more than
  ``MEMENGINE_EPISODE_IDLE_SECONDS`` after the previous turn of its session (event time, never the wall clock, so a
  re-derivation decides the same) -> ``EpisodeRecorded(closed_by="idle")`` for the turns before it;
- ``MemoryAsserted`` facts -> ``MemoriesExtracted`` (model ``explicit``, confidence 1, merge decision as for
  extracted candidates); ``MemoryRetracted`` / ``MemoryPromoted`` facts -> ``MemoriesRevised`` (retract / promote,
  seed 003 quarantine). So ``memory_items`` has one writer, the derived projector, and a rebuild replays it all;
- a thread whose live transcript exceeds ``MEMORY_MAX_MESSAGES_PER_THREAD`` -> ``MessagesPruned`` for the oldest
  ``total - max + 20`` turns, never beyond what a published summary covers (seed 000 §3.1);
- ``TurnsWithdrawn`` -> ``SourcesWithdrawn`` (``engine.derive.withdrawal``, issue #26 item 6): the memories left
  without live evidence are retracted, the episodes and summary quoting the turns dropped (the summary re-derived
  from the turns left), the working-memory focus they set removed; a turn withdrawn later in the same batch is not
  mined at all.

Side effect outside the log, by design: a new active TASK memory of a recent turn becomes the thread's current focus
in the working-memory KV (``engine.derive.working_memory``, ephemeral, TTL 24 h, seed 003 / seed 004 Scratchpad).

Everything it derives is published on ``MEMORY_DERIVED`` *before* any read model changes, with a deterministic
event id (``Nats-Msg-Id`` = ``events.msg_id``: ``<tenant>:<event id>``), so a redelivered batch publishes nothing
twice; the derived projector folds those events.
Derivations come from a ``Deriver`` (``engine.derive.llm``): the offline default (extractive, keyphrase, rule-based)
or an OpenAI-compatible model when ``API_BASE_URL`` is set; episodes are always extractive.

State that cannot be rebuilt from the log: none. Its decisions are recorded in the events it publishes.

Beside it in ``engine.derive``: ``summaries`` (when a thread is summarised), ``episodes`` (when an episode closes),
``pruning`` (when turns are pruned), ``turns`` (turns read from ``messages``), ``policy`` (lifetimes, quarantine).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any, cast

import asyncpg
import msgspec
import nats.errors
import nats.js.errors
import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from memengine.engine.adapters import jetstream as bus
from memengine.engine.adapters.checkpoints import CheckpointStore
from memengine.engine.adapters.postgres import is_transient
from memengine.engine.adapters.settings import Settings
from memengine.engine.derive import offline, working_memory
from memengine.engine.derive.episodes import Episodes
from memengine.engine.derive.lifetimes import lifetime_priority
from memengine.engine.derive.llm import DerivationUnavailable, Deriver, build_deriver
from memengine.engine.derive.policy import MEMORY_TYPES, PRIORITIES, PRIORITY_DURATION, PRIORITY_TTL
from memengine.engine.derive.pruning import prune
from memengine.engine.derive.summaries import rolling_summaries
from memengine.engine.derive.withdrawal import is_withdrawn, withdrawal, withdrawn_ahead
from memengine.engine.read.transcript import FactLog
from memengine.engine.runtime.dead_letters import DeadLetter, record_dead_letters
from memengine.engine.runtime.follower import Follower
from memengine.events import (
    EventDecodeError,
    ExtractedMemory,
    MemoriesExtracted,
    MemoriesRevised,
    MemoryAsserted,
    MemoryChange,
    MemoryPromoted,
    MemoryRetracted,
    MergeDecision,
    SessionEnded,
    StreamNames,
    Subjects,
    TextBlock,
    ToolResultBlock,
    TurnRecorded,
    TurnsWithdrawn,
    decode_derived,
    decode_fact,
    derived_event_id,
    encode,
    msg_id,
)
from memengine.events.derived import ChangeAction, MemoryType, Priority
from memengine.projections.registry import DERIVED_PROJECTIONS
from memengine.projections.tokens import count_tokens

log = structlog.get_logger("memengine.enricher")

NAME = "enricher"
#: model name recorded on derived events that only restate an explicit fact (no model was involved).
EXPLICIT_MODEL = "explicit"
EXPLICIT_PROMPT_VERSION = "fact-1"


def _transient(exc: BaseException) -> bool:
    """Failures a retry of the batch can fix (PostgreSQL, NATS, the model unreachable): never dead-lettered."""
    return is_transient(exc) or isinstance(exc, (nats.errors.Error, DerivationUnavailable))


class Enricher(Follower):
    """Derives memory from facts; see the module docstring. One live enricher per deployment (advisory lock).

    Its lock / bind-at-checkpoint / run / stop loop is the runtime's ``Follower``; its policy: a checkpoint row of
    its own (``enricher``), and on a failed step it stops (releasing the lock) and starts again after a backoff."""

    def __init__(self, *, nc: NATS, js: JetStreamContext, pool: asyncpg.Pool, streams: StreamNames,
                 subjects: Subjects, settings: Settings, core: str = "core", derived: str = "derived",
                 batch_size: int = 500, deriver: Deriver | None = None) -> None:
        super().__init__(name=NAME, nc=nc, js=js, pool=pool)
        self.streams, self.subjects, self.settings = streams, subjects, settings
        self.core, self.derived = core, derived
        self.batch_size = batch_size
        self.deriver = deriver or build_deriver(settings, count_tokens)
        self.checkpoint = 0
        self.published = 0  # derived events published since start
        self._derived_seq = 0  # last MEMORY_DERIVED sequence we published
        self.log = FactLog(js, streams, subjects)
        self._focus: list[tuple[str, str, str]] = []  # (tenant, thread, text) for the working-memory KV
        self._unfocus: list[tuple[str, str, list[str]]] = []  # (tenant, thread, texts): focus of withdrawn turns
        self._ahead: Any = ({}, {})  # withdrawals of the batch being derived (withdrawal.withdrawn_ahead)
        self._resets: dict[tuple[str, str], str] = {}  # threads whose summary a withdrawal of the batch dropped
        self._partitioned = False  # the facts stream stores six-token subjects (set by try_start)
        self.dead = 0  # facts dead-lettered since start (derivation raised)
        self.episodes = Episodes(pool=pool, settings=settings, log=self.log)
        self._failures = 0  # consecutive failed steps of run()

    async def start(self) -> None:
        """Create the enricher's checkpoint row, read it, and (re-)create the consumer at the checkpoint + 1.
        Called under the lock (``Follower.try_start``)."""
        store = CheckpointStore(self.pool)
        await store.ensure(NAME, self.streams.facts)
        self.checkpoint = await store.position(NAME)
        # What an earlier incarnation published must be folded before this one decides anything (merge decisions
        # and rolling summaries read memory_items / conversation_summaries): without this, a restarted enricher
        # read stale state while the derived projector was still behind, and decided differently (test_faults).
        self._derived_seq = max(self._derived_seq, (await self.js.stream_info(self.streams.derived)).state.last_seq)
        self._partitioned = await bus.stores_partitioned(self.js, self.streams.facts)
        await self._bind(self.streams.facts, self.subjects.all_facts, self.checkpoint, batch_size=self.batch_size,
                         description="memengine enricher", ack_wait=120)

    # -- run(): Follower.run with the enricher's recovery policy ------------------------------------------------

    def _stepped(self) -> None:
        self._failures = 0

    async def _step_failed(self, exc: Exception) -> None:
        """Keep deriving (nothing is acked before it is published): log, stop (releasing the lock), back off
        0.2 s per consecutive failure (at most 5 s); the next round of ``run()`` starts again at the checkpoint."""
        self._failures += 1
        log.warning("enricher step failed; resuming from the checkpoint", error=repr(exc))
        await self.stop()
        await asyncio.sleep(min(5.0, 0.2 * self._failures))

    async def catch_up(self, timeout: float = 600.0) -> int:
        """Derive until the facts stream's current end; returns the checkpoint reached."""
        target = (await self.js.stream_info(self.streams.facts)).state.last_seq
        deadline = asyncio.get_running_loop().time() + timeout
        idle = 0
        while self.checkpoint < target:
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"enricher at {self.checkpoint} of {target}")
            if await self.step(timeout=0.5) == 0:
                idle += 1
                if idle >= 3:
                    break
            else:
                idle = 0
        return self.checkpoint

    async def step(self, timeout: float) -> int:
        """Derive from one fetched batch: publish what it derives, dead-letter the facts it cannot derive from,
        advance the checkpoint, ack; returns the number of messages fetched (0 when none arrived).

        Every fact goes through ``events.decode_fact``, the decode-and-verify step the projectors use: a fact it
        rejects (undecodable, or a body naming another tenant, thread or type than its subject: issue #17 defect 1)
        is skipped, never acted on. It is not dead-lettered here: the verdict is the same function's on the same
        bytes, so the core and recall projectors' dead letters already hold it, and a retry or corrected payload
        comes back through the facts stream to this consumer too. A fact that decodes but whose derivation raises
        is dead-lettered as consumer ``enricher`` and the batch goes on (issue #17 defect 3); transient failures
        (PostgreSQL, NATS, the model) fail the step, which resumes from the checkpoint."""
        assert self._sub is not None
        msgs = await self._sub.fetch(timeout=timeout)
        if not msgs:
            return 0
        last = msgs[-1].metadata.sequence.stream
        if not self._partitioned and any(m.subject.count(".") == 5 for m in msgs):  # re-partitioned since start?
            self._partitioned = await bus.stores_partitioned(self.js, self.streams.facts)
        facts: list[tuple[int, Msg, Any]] = []
        for m in msgs:
            seq = m.metadata.sequence.stream
            if seq <= self.checkpoint:
                continue
            try:
                facts.append((seq, m, decode_fact(m.subject, m.data, self.subjects, partitioned=self._partitioned)))
            except EventDecodeError as exc:
                log.info("fact not derived from: rejected at decode", seq=seq, stage=exc.stage, reason=exc.reason)
        await self._wait_for_projections(last)
        derived, dead = await self._derive(facts)
        for ev in derived:
            ack = await self.js.publish(self.subjects.derived(ev.tenant_id, ev.thread_id, type(ev).__name__),
                                        encode(ev), headers={"Nats-Msg-Id": msg_id(ev.tenant_id, ev.event_id)},
                                        stream=self.streams.derived)
            self._derived_seq = max(self._derived_seq, ack.seq)
            self.published += 0 if ack.duplicate else 1
        await self._write_focus()
        async with self.pool.acquire() as conn, conn.transaction():
            if dead:
                await record_dead_letters(conn, self.js, self.subjects, consumer=NAME, stream=self.streams.facts,
                                          dead=dead, max_payload=self.nc.max_payload)
            await CheckpointStore(conn).advance([NAME], last)
        self.dead += len(dead)
        self.checkpoint = max(self.checkpoint, last)
        await msgs[-1].ack()
        return len(msgs)

    async def _wait_for_projections(self, facts_seq: int, timeout: float = 60.0) -> None:
        """The transcript must hold this batch, and our earlier derived events must be folded, before deciding."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            core, drv = await CheckpointStore(self.pool).lows(["thread_activity", "messages"],
                                                               [p.name for p in DERIVED_PROJECTIONS])
            if (core or 0) >= facts_seq and (self._derived_seq == 0 or (drv or 0) >= self._derived_seq):
                return
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError("projections did not catch up with the enricher")
            await asyncio.sleep(0.02)

    # -- derivations -------------------------------------------------------------------------------------------

    async def _derive(self, facts: list[tuple[int, Msg, Any]]) -> tuple[list[Any], list[DeadLetter]]:
        """The derived events of a batch, and the dead letters of the facts whose derivation raised.

        One fact's failure isolates that fact (issue #17 defect 3): the batch state it may have half-changed
        (merge overlay, session bounds, working-memory focus, output) is put back as it was before it, and the
        others are derived as if it were absent. Summaries and pruning, which are per thread rather than per fact,
        are skipped for this batch on failure (logged); the thread's next batch tries again."""
        out: list[Any] = []
        dead: list[DeadLetter] = []
        touched: dict[tuple[str, str], int] = {}
        overlay: dict[tuple[str, str | None], list[offline.ExistingItem]] = {}
        last_turn: dict[tuple[str, str, str], tuple[int, Any]] = {}  # (tenant, thread, session) -> (seq, time)
        bounds: dict[tuple[str, str, str], int] = {}  # last seq covered by an episode published in this batch
        self._ahead, self._resets = withdrawn_ahead(facts), {}
        for seq, msg, ev in facts:
            saved = (len(out), {k: list(v) for k, v in overlay.items()}, dict(last_turn), dict(bounds),
                     len(self._focus), len(self._unfocus), dict(self._resets))
            try:
                await self._derive_one(seq, ev, out, touched, overlay, last_turn, bounds)
            except Exception as exc:  # one fact must not stop derivation for every tenant
                if _transient(exc):
                    raise
                n_out, saved_overlay, saved_turns, saved_bounds, n_focus, n_unfocus, saved_resets = saved
                del out[n_out:]
                overlay.clear()
                overlay.update(saved_overlay)
                last_turn.clear()
                last_turn.update(saved_turns)
                bounds.clear()
                bounds.update(saved_bounds)
                del self._focus[n_focus:]
                del self._unfocus[n_unfocus:]
                self._resets = saved_resets
                dead.append(DeadLetter(msg, seq, f"derive: {type(exc).__name__}: {exc}", str(ev.event_id)))
        if self.settings.enable_summary:
            for (tenant, thread), upto in touched.items():
                try:
                    out.extend(await rolling_summaries(self.pool, self.deriver, self.settings, tenant, thread, upto,
                                                       reset=self._resets.get((tenant, thread))))
                except Exception as exc:
                    if _transient(exc):
                        raise
                    log.warning("summary failed; skipped for this batch", tenant=tenant, thread=thread,
                                error=repr(exc))
        if self.settings.max_messages_per_thread > 0:
            for tenant, thread in touched:
                if (tenant, thread) in self._resets:
                    continue  # the dropped summary is not folded yet: the next batch prunes against the new one
                try:
                    pruned = await prune(self.pool, self.settings, tenant, thread, out)
                except Exception as exc:
                    if _transient(exc):
                        raise
                    log.warning("prune failed; skipped for this batch", tenant=tenant, thread=thread,
                                error=repr(exc))
                    continue
                if pruned is not None:
                    out.append(pruned)
        return out, dead

    async def _derive_one(self, seq: int, ev: Any, out: list[Any], touched: dict[tuple[str, str], int],
                          overlay: dict[tuple[str, str | None], list[offline.ExistingItem]],
                          last_turn: dict[tuple[str, str, str], tuple[int, Any]],
                          bounds: dict[tuple[str, str, str], int]) -> None:
        """Append to ``out`` what fact ``ev`` at ``seq`` derives (see the module docstring)."""
        if isinstance(ev, TurnRecorded):
            touched[(ev.tenant_id, ev.thread_id)] = seq
            idle = await self.episodes.idle_gap(seq, ev, last_turn, bounds)
            if idle is not None:
                out.append(idle)
            if ev.role == "user" and not is_withdrawn(seq, ev, self._ahead):
                mem = await self._memories(seq, ev, overlay)
                if mem is not None:
                    out.append(mem)
        elif isinstance(ev, SessionEnded) and ev.session_id:
            episode = await self.episodes.session_ended(seq, ev, bounds)
            if episode is not None:
                out.append(episode)
        elif isinstance(ev, MemoryAsserted):
            out.append(await self._asserted(seq, ev, overlay))
        elif isinstance(ev, (MemoryRetracted, MemoryPromoted)):
            revised = await self._revised(seq, ev, out, overlay)
            if revised is not None:
                out.append(revised)
        elif isinstance(ev, TurnsWithdrawn):
            w = await withdrawal(self.pool, self.log, seq, ev, out, fetch=self._derived_at)
            out.extend(w.events)
            gone = set(w.retracted)
            for items in overlay.values():  # a later candidate of the batch must not merge into a retracted item
                items[:] = [x for x in items if x.memory_id not in gone]
            for mid, kind, text, user in w.restored:  # ... and sees a restored one
                if (ev.tenant_id, user) in overlay:
                    overlay[(ev.tenant_id, user)].append(offline.ExistingItem(memory_id=mid, memory_type=kind,
                                                                              text=text, user_id=user))
            if w.tasks:
                self._unfocus.append((ev.tenant_id, ev.thread_id, w.tasks))
            if w.reset:
                self._resets[(ev.tenant_id, ev.thread_id)] = str(ev.event_id)
            if w.events:
                touched[(ev.tenant_id, ev.thread_id)] = max(touched.get((ev.tenant_id, ev.thread_id), 0), seq)

    async def _memories(self, seq: int, ev: TurnRecorded,
                        overlay: dict[tuple[str, str | None], list[offline.ExistingItem]]) -> MemoriesExtracted | None:
        """Typed memory candidates of a user turn, each through the inbound gate (``offline.gate``, seed 003 +
        issue #18 item 4) whichever deriver proposed it: a model must not be able to activate a poisoned memory.

        Only the user's own words are mined: the turn's text blocks. A ``tool_result`` block inside a user message
        (the Anthropic shape of a tool's answer) is a tool's output, not the user's statement, so it is left out,
        as tool turns are (and its words cannot taint the user's candidates either).

        A turn nothing was drawn from whose words (tool results included) trip the gate becomes one quarantined
        candidate itself (``offline.held_turn``, issue #26 item 5): later contexts quote a user's past turns that no
        item came from, and a poisoned one must not reach every new thread that way."""
        own = "\n".join(b.text for b in ev.content if isinstance(b, TextBlock))
        candidates: list[offline.Candidate] = []
        model, prompt_version = offline.OFFLINE_MODEL, offline.PROMPT_VERSION
        if own.strip():
            turn = offline.Turn(event_id=str(ev.event_id), seq=seq, role=ev.role, user_id=ev.user_id, text=own,
                                occurred_at=ev.occurred_at, before=await self._said_before(seq, ev, own))
            candidates, model, prompt_version = await self.deriver.extract([turn])
        if all(c.data.get("unsure") for c in candidates):  # (an unsure one may be dropped: ``_decide``)
            quoted = "\n".join(b.text if isinstance(b, TextBlock) else b.content for b in ev.content
                                if isinstance(b, (TextBlock, ToolResultBlock)))
            held = offline.held_turn(quoted, user_id=ev.user_id, event_id=str(ev.event_id))
            if held is None and not candidates:
                return None
            candidates = [held] if held is not None else candidates
        out = await self._decide(seq, ev, candidates, overlay, model, prompt_version, role=ev.role, turn_text=own,
                                 after_refusal=await self._refused_before(seq, ev))
        return out if out.memories else None

    async def _refused_before(self, seq: int, ev: TurnRecorded) -> bool:
        """Whether the turn just before this one in the thread's session (from the transcript, which holds this
        batch: ``_wait_for_projections``) is the assistant declining something (``offline.refuses``): the gate then
        reads this user turn at the learned reader's lower bar (``attack_reader.REFUSED_THRESHOLD``)."""
        row = await self.pool.fetchrow(
            "SELECT role, text FROM messages WHERE tenant_id = $1 AND thread_id = $2 AND session_id IS NOT DISTINCT"
            " FROM $3::text AND seq < $4 ORDER BY seq DESC LIMIT 1", ev.tenant_id, ev.thread_id, ev.session_id, seq)
        return row is not None and row["role"] == "assistant" and offline.refuses(str(row["text"] or "")) is not None

    async def _said_before(self, seq: int, ev: TurnRecorded, text: str) -> str:
        """The same user's previous turn in the thread's session, from the transcript (``messages``, which holds every
        turn before this batch's: ``_wait_for_projections``), when ``text`` has a Chinese 他 / 她 to read against it
        (``offline.zh_people``: "我妹天天熬夜背书", then "她在读临床医学"); "" otherwise, without a query."""
        if not offline.names_someone(text):
            return ""
        row = await self.pool.fetchrow(
            "SELECT text FROM messages WHERE tenant_id = $1 AND thread_id = $2 AND session_id IS NOT DISTINCT FROM"
            " $3::text AND role = 'user' AND user_id IS NOT DISTINCT FROM $4 AND seq < $5 ORDER BY seq DESC LIMIT 1",
            ev.tenant_id, ev.thread_id, ev.session_id, ev.user_id, seq)
        return str(row["text"]) if row else ""

    async def _decide(self, seq: int, ev: Any, candidates: list[offline.Candidate],
                      overlay: dict[tuple[str, str | None], list[offline.ExistingItem]], model: str,
                      prompt_version: str, *, role: str = "user", turn_text: str = "",
                      merge: bool = True, after_refusal: bool = False) -> MemoriesExtracted:
        """Merge decisions (seed 002 §4.1) of ``candidates`` from fact ``ev`` against the user's active items;
        ``merge=False``: every candidate is an ``add`` (a keyed store item is its own identity, see ``_asserted``).

        The one door of the enricher into ``memory_items``: every candidate, whatever proposed it (offline rules, a
        model, an explicit or keyed assertion), passes the inbound gate here (``offline.gate`` with the turn's
        ``role`` and ``turn_text``), and its status is the gate's verdict alone: nothing a publisher or a deriver
        wrote in a candidate (``data["quarantined"]``, ``metadata.store``, a confidence) can skip it (issue #26
        item 5; ``tests/unit/test_one_gate.py`` checks that every ``ExtractedMemory`` is made behind it)."""
        key = (ev.tenant_id, ev.user_id)
        if key not in overlay:
            rows = await self.pool.fetch(
                "SELECT memory_id, type, text, user_id, valid_at, expires_at FROM memory_items WHERE tenant_id = $1"
                " AND user_id IS NOT DISTINCT FROM $2 AND status = 'active'", ev.tenant_id, ev.user_id)
            overlay[key] = [offline.ExistingItem(memory_id=r["memory_id"], memory_type=r["type"], text=r["text"],
                                                 user_id=r["user_id"], said_on=r["valid_at"].date().isoformat(),
                                                 lasting=r["expires_at"] is None,
                                                 lifetime_days=None if r["expires_at"] is None else
                                                 (r["expires_at"] - r["valid_at"]).days)
                            for r in rows]
        existing = overlay[key]
        memories = []
        # one turn, one verdict: a sibling held for an attack holds the rest of the turn's candidates (safety)
        gated = offline.taint_siblings([offline.gate(c, role=role, turn_text=turn_text, after_refusal=after_refusal)
                                        for c in candidates],
                                       turn_text=turn_text)
        for i, c in enumerate(gated):
            quarantined = offline.quarantined(c)
            # the deriver decides (a model when configured, issue #15 item 1); checked_verdict keeps it to the
            # user's active items and compatible types, so no deriver can make an episode overwrite a preference
            d = (offline.checked_verdict(await self.deriver.decide(c, existing), c, existing) if merge
                 else offline.MergeVerdict("add", [], "keyed store item: its key is its identity"))
            memory_id = (d.target_ids[0] if d.action == "merge" and d.target_ids
                         else str(derived_event_id(ev.tenant_id, str(ev.event_id), "memory", str(i))))
            if not c.data.get("asserted"):  # the lifetime follows what the fact is, whatever the deriver proposed
                # (issue #29 item 1); an explicit assertion keeps the priority its caller chose
                prio = lifetime_priority(c.memory_type, c.text, c.priority, c.tags)
                if prio != c.priority:
                    c = msgspec.structs.replace(c, priority=prio, data={**c.data, "duration": PRIORITY_DURATION[prio]}
                                                if "duration" in c.data and c.memory_type != "ERROR" else c.data)
            ttl = PRIORITY_TTL.get(c.priority)
            if quarantined and d.action in ("merge", "replace"):  # it must not rewrite (merge) or close (replace)
                # an active item: that would put its text in active memory, or silence a true one, unreleased (seed 003)
                d = offline.MergeVerdict("add", [], f"quarantined, kept apart: would have been {d.action} of "
                                                    f"{', '.join(d.target_ids)} ({d.reason})")
                memory_id = str(derived_event_id(ev.tenant_id, str(ev.event_id), "memory", str(i)))
            if c.data.get("unsure") and not c.data.get("verbatim") and not quarantined and not d.fold and not (
                    d.action == "replace" and d.text):
                continue  # an unsure statement is kept only beside the item on its topic (``offline.fold``)
            text = d.text if d.action == "replace" and d.text else c.text  # an unsure supersede keeps both
            if d.action == "merge":  # a merge keeps the richer wording of the two (issue #15 item 1)
                text = offline.richer_text(c.text, next(x.text for x in existing if x.memory_id == memory_id))
            elif d.action == "replace" and d.fold and (old := [x for x in existing if x.memory_id in d.target_ids]):
                # an unsure change: the old text stays, the user's newer words beside it, dated, under the old type
                said = str(c.data.get("sentence") or c.text)  # (``offline.fold``, issue #29 item 1)
                text = offline.folded([x.text for x in old], str(c.data.get("subject") or "User"),
                                      offline.words_of(said, turn_text), ev.occurred_at)
                c = msgspec.structs.replace(c, memory_type=old[0].memory_type, data={**c.data, "folded": True})
            if d.action == "replace" and (d.fold or d.text) and any(x.lasting for x in existing if x.memory_id in
                                                                     d.target_ids):  # the older words' lifetime
                c, ttl = msgspec.structs.replace(c, priority="PERMANENT"), None
            m = ExtractedMemory(
                # a candidate's type and priority are plain str, drawn from policy.MEMORY_TYPES / PRIORITIES by
                # every producer (the rule tables, the model's output checked in engine.derive.llm, an assertion's
                # type checked in _asserted)
                memory_id=memory_id, user_id=c.user_id, memory_type=cast(MemoryType, c.memory_type), text=text,
                importance=c.importance, confidence=c.confidence, tags=list(c.tags),
                priority=cast(Priority, c.priority),
                expires_at=ev.occurred_at + ttl if ttl else None,
                dedupe_hash=(str(c.data.get("dedupe_hash") or offline.dedupe_hash(c.user_id, c.text)) if text == c.text
                             else offline.dedupe_hash(c.user_id, text)),
                data={k: v for k, v in c.data.items() if k != "dedupe_hash"},
                status="quarantined" if offline.quarantined(c) else "active",
                decision=MergeDecision(action=d.action, target_ids=list(d.target_ids), reason=d.reason[:1000]),
                source_event_ids=[ev.event_id])
            memories.append(m)
            if c.memory_type == "TASK" and not quarantined and d.action != "ignore":
                self._note_focus(ev, c.text)
            if quarantined or d.action == "ignore":
                continue
            if d.action == "replace":
                existing[:] = [x for x in existing if x.memory_id not in d.target_ids]
            kind = (next(x.memory_type for x in existing if x.memory_id == memory_id) if d.action == "merge"
                    else c.memory_type)  # a merge keeps the target's type (the projection does not change it)
            if d.action == "merge":
                existing[:] = [x for x in existing if x.memory_id != memory_id]
            existing.append(offline.ExistingItem(memory_id=memory_id, memory_type=kind, text=text, user_id=c.user_id,
                                                 said_on=ev.occurred_at.date().isoformat(), lasting=not ttl,
                                                 lifetime_days=ttl.days if ttl else None))
        return MemoriesExtracted(
            event_id=derived_event_id(ev.tenant_id, ev.thread_id, "memories", str(ev.event_id)),
            tenant_id=ev.tenant_id, thread_id=ev.thread_id, occurred_at=ev.occurred_at, user_id=ev.user_id,
            session_id=ev.session_id, producer="memengine-enricher", causation_id=ev.event_id,
            source_event_ids=[ev.event_id], source_seq_range=[seq, seq], model=model,
            prompt_version=prompt_version, memories=memories)

    # -- explicit memory facts ---------------------------------------------------------------------------------

    async def _asserted(self, seq: int, ev: MemoryAsserted,
                        overlay: dict[tuple[str, str | None], list[offline.ExistingItem]]) -> MemoriesExtracted:
        """``MemoryAsserted`` -> ``MemoriesExtracted`` with one candidate: confidence 1, the asserted type (unknown
        types become FACT, the given name kept in ``data.asserted_type``), priority from ``metadata.priority`` else
        PERMANENT (an explicit "remember this" is meant to last, seed 004 §6).

        A keyed write (``metadata.store`` an object: ``{"namespace", "key", "value"}``, written by a key-value
        adapter such as ``engine.integrations.langgraph``) is kept in ``data.store`` and always added, never merged
        into or deduplicated against another item: two keys with the same text are two entries of a key-value store,
        and the adapter retracts the key's previous item itself. It passes the content gate like every candidate
        (``_decide``): ``metadata`` is the publisher's to write, so no field of it may switch the gate off (issue #26
        item 5: a keyed value that trips it is kept, quarantined, and the store still returns it)."""
        mtype = ev.memory_type.strip().upper()
        data: dict[str, Any] = {"asserted": True}
        if mtype not in MEMORY_TYPES:
            data["asserted_type"] = ev.memory_type
            mtype = "FACT"
        meta = ev.metadata if isinstance(ev.metadata, dict) else {}
        store = meta.get("store")
        if isinstance(store, dict):
            data["store"] = store
        priority = str(meta.get("priority") or "PERMANENT").upper()
        if priority not in PRIORITIES:
            priority = "PERMANENT"
        cand = offline.Candidate(memory_type=mtype, text=ev.text.strip(), importance=ev.importance, confidence=1.0,
                                 tags=list(ev.tags), priority=priority, user_id=ev.user_id,
                                 source_event_ids=[str(ev.event_id)], data=data)
        return await self._decide(seq, ev, [cand], overlay, EXPLICIT_MODEL, EXPLICIT_PROMPT_VERSION,
                                  merge=not isinstance(store, dict))

    async def _revised(self, seq: int, ev: MemoryRetracted | MemoryPromoted, out: list[Any],
                       overlay: dict[tuple[str, str | None], list[offline.ExistingItem]]) -> MemoriesRevised | None:
        """``MemoryRetracted`` / ``MemoryPromoted`` -> ``MemoriesRevised``, when the change applies to the item as it
        stands (retract: active or quarantined; promote: quarantined). Otherwise nothing is derived (logged)."""
        action: ChangeAction = "retract" if isinstance(ev, MemoryRetracted) else "promote"
        status = await self._status(ev.tenant_id, ev.memory_id, out)
        allowed = ("active", "quarantined") if action == "retract" else ("quarantined",)
        if status not in allowed:
            log.warning("memory change not applicable; nothing derived", action=action, memory_id=ev.memory_id,
                        status=status)
            return None
        if action == "retract":
            for items in overlay.values():
                items[:] = [x for x in items if x.memory_id != ev.memory_id]
        reason = ev.reason or ("retracted" if action == "retract" else "promoted from quarantine")
        return MemoriesRevised(
            event_id=derived_event_id(ev.tenant_id, ev.thread_id, "revised", str(ev.event_id)),
            tenant_id=ev.tenant_id, thread_id=ev.thread_id, occurred_at=ev.occurred_at, user_id=ev.user_id,
            session_id=ev.session_id, producer="memengine-enricher", causation_id=ev.event_id,
            source_event_ids=[ev.event_id], source_seq_range=[seq, seq], model=EXPLICIT_MODEL,
            prompt_version=EXPLICIT_PROMPT_VERSION,
            changes=[MemoryChange(memory_id=ev.memory_id, action=action, reason=reason[:1000])])

    async def _status(self, tenant: str, memory_id: str, out: list[Any]) -> str | None:
        """Status of an item as the derived events published so far leave it (this batch's first, newest last)."""
        status: str | None = None
        found = False
        for d in out:
            if d.tenant_id != tenant:
                continue
            if isinstance(d, MemoriesExtracted):
                for m in d.memories:
                    if m.memory_id == memory_id and m.decision.action in ("add", "keep_both", "replace"):
                        status, found = m.status, True
            elif isinstance(d, MemoriesRevised):
                for c in d.changes:
                    if c.memory_id == memory_id:
                        status, found = ("retracted" if c.action == "retract" else "active"), True
        if found:
            return status
        stored: str | None = await self.pool.fetchval(
            "SELECT status FROM memory_items WHERE tenant_id = $1 AND memory_id = $2", tenant, memory_id)
        return stored

    async def _derived_at(self, seq: int) -> Any:
        """The derived event at ``MEMORY_DERIVED`` sequence ``seq``; ``None`` when purged or unreadable."""
        try:
            msg = await self.js.get_msg(self.streams.derived, seq=seq)
            return decode_derived(msg.data or b"")
        except (nats.js.errors.NotFoundError, EventDecodeError):
            return None


    # -- working memory (ephemeral, engine.working_memory) -----------------------------------------------------

    def _note_focus(self, ev: Any, text: str) -> None:
        """Remember a TASK as the thread's focus, if the fact is recent (a replay of old turns must not set it)."""
        age = (datetime.now(UTC) - ev.occurred_at).total_seconds()
        if -60 <= age <= self.settings.working_memory_ttl:
            self._focus.append((ev.tenant_id, ev.thread_id, text))

    async def _write_focus(self) -> None:
        """Best effort: the KV is a cache of the moment, never a reason to hold back derived memory."""
        focus, self._focus = self._focus, []
        for tenant, thread, text in focus:
            try:
                await working_memory.put(self.js, tenant, thread, "focus", text, prefix=self.settings.stream_prefix,
                                         ttl=self.settings.working_memory_ttl,
                                         max_entries=self.settings.working_memory_max)
            except Exception as exc:  # noqa: BLE001 - the focus is a hint: a KV failure must not fail the batch
                log.warning("working-memory focus not written", thread=thread, error=repr(exc))
        unfocus, self._unfocus = self._unfocus, []
        for tenant, thread, texts in unfocus:  # after the writes: a withdrawn turn's focus set in this batch goes too
            try:
                await working_memory.drop(self.js, tenant, thread, "focus", texts,
                                          prefix=self.settings.stream_prefix, ttl=self.settings.working_memory_ttl)
            except Exception as exc:  # noqa: BLE001 - the focus is a hint: a KV failure must not fail the batch
                log.warning("working-memory focus of a withdrawn turn not dropped", thread=thread, error=repr(exc))

