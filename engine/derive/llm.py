"""Derivers: who turns transcript into summaries, topics and typed memories.

``OfflineDeriver`` (the default, no network) wraps ``engine.derive.offline``. ``OpenAIDeriver`` asks any
OpenAI-compatible chat-completions endpoint (``API_BASE_URL``, ``API_KEY``, ``MEMORY_LLM_MODEL``) for JSON, validates it
with msgspec, retries with backoff, bounds every call with a timeout, and counts calls and tokens. Switching between
them is configuration, not code (issue #4 §1).

Failures follow seed 000 §6 ("LLM 摘要调用失败 -> warning 日志，使用旧摘要或跳过 Tier 1"): ``summarize`` raises
``DerivationUnavailable``, the enricher logs a warning, keeps the old summary and leaves the messages pending (they
are summarised with the next batch: nothing is lost); memory extraction falls back to the offline rules for that turn.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec
import structlog
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential_jitter

from memengine.engine.derive import offline
from memengine.engine.derive.policy import MEMORY_TYPES, PRIORITIES
from memengine.engine.wire.errors import Unavailable
from memengine.projections.tokens import count_tokens

log = structlog.get_logger("memengine.llm")

PROMPT_VERSION = "llm-1"


class DerivationUnavailable(Unavailable, RuntimeError):
    """The model could not be reached or answered with something unusable (after retries)."""


class Deriver(Protocol):
    """What the enricher needs. ``model`` and ``prompt_version`` are recorded on every derived event."""

    model: str
    prompt_version: str

    async def summarize(self, turns: list[offline.Turn], max_tokens: int, previous: str | None) -> str: ...

    async def topics(self, turns: list[offline.Turn]) -> list[str]: ...

    async def extract(self, turns: list[offline.Turn]) -> tuple[list[offline.Candidate], str, str]:
        """Candidates plus the ``(model, prompt_version)`` that actually produced them (a fallback says so)."""
        ...

    async def decide(self, candidate: offline.Candidate, existing: list[offline.ExistingItem]) -> offline.MergeVerdict:
        """Seed 002 §4.1 merge decision of ``candidate`` against the user's active items: add | merge | replace
        (supersede) | keep_both | ignore. The enricher passes it through ``offline.checked_verdict``."""
        ...


class OfflineDeriver:
    """Extractive summary, YAKE topics, rule-based extraction (``engine.derive.offline``); deterministic."""

    model = offline.OFFLINE_MODEL
    prompt_version = offline.PROMPT_VERSION

    def __init__(self, count_tokens: Any = None) -> None:
        self.count_tokens = count_tokens

    async def summarize(self, turns: list[offline.Turn], max_tokens: int, previous: str | None) -> str:
        return offline.summarize(turns, max_tokens, previous, count_tokens=self.count_tokens)

    async def topics(self, turns: list[offline.Turn]) -> list[str]:
        return offline.topics(turns)

    async def extract(self, turns: list[offline.Turn]) -> tuple[list[offline.Candidate], str, str]:
        return offline.extract_memories(turns), self.model, self.prompt_version

    async def decide(self, candidate: offline.Candidate, existing: list[offline.ExistingItem]) -> offline.MergeVerdict:
        return offline.decide_merge(candidate, existing)


class _Summary(msgspec.Struct):
    summary: str
    topics: list[str] = []


class _Memory(msgspec.Struct):
    type: str
    text: str
    importance: float = 0.5
    confidence: float = 0.7
    tags: list[str] = []
    priority: str = "LONG_TERM"


class _Memories(msgspec.Struct):
    memories: list[_Memory] = []


class _Decision(msgspec.Struct):
    action: str
    target_ids: list[str] = []
    reason: str = ""



SUMMARY_PROMPT = """You maintain the rolling summary of a conversation (seed 000 §3.1).
Merge the previous summary and the new messages into one summary of at most {max_tokens} tokens: keep facts, decisions,
names, dates and open tasks; drop small talk. Then list up to 8 short topic labels.
Answer with JSON only: {{"summary": "...", "topics": ["...", ...]}}"""

EXTRACT_PROMPT = """Extract long-term memories about the user from the user's messages below (seed 001, seed 004).
Types: PROFILE, PREFERENCE, FACT, TASK, RULE, SKILL, ERROR. Only what the user states about themselves or asks you to
remember; no questions, no small talk. Write each memory in the third person with the user's name if known.
importance and confidence are 0..1; priority is TRANSIENT, SHORT_TERM, LONG_TERM or PERMANENT.
Answer with JSON only: {"memories": [{"type": "...", "text": "...", "importance": 0.5, "confidence": 0.8,
"tags": ["..."], "priority": "LONG_TERM"}]}"""

DECIDE_PROMPT = """You make the memory merge decision for a new memory about a user (seed 002 §4.1, issue #15).
You get the new memory and the user's active memories of the same kind, each with its id. Decide one action:
- "ignore": the new memory says nothing an existing one does not (target_ids: [that id]);
- "merge": it is the same statement with more detail (target_ids: [that id]);
- "supersede": it gives a new value for the same attribute of the same person (prefers aisle -> prefers window seats,
  lives in Lisbon -> moved to Porto, works at X -> works at Y, likes -> no longer likes): the old one stops being true
  (target_ids: the ids it supersedes);
- "keep_both": related but both true (target_ids: the related ids);
- "add": unrelated (target_ids: []).
Answer with JSON only: {"action": "...", "target_ids": ["..."], "reason": "..."}"""


@dataclass
class Usage:
    """LLM accounting since start: ``calls``, ``failures``, ``prompt_tokens``, ``completion_tokens``."""

    calls: int = 0
    failures: int = 0
    prompt_tokens: int = 0  # as the server reports them
    completion_tokens: int = 0
    prompt_tokens_sent: int = 0  # counted here (cl100k_base) on what was sent, whatever the server says
    by_task: dict[str, int] = field(default_factory=dict)


class OpenAIDeriver:
    """Derivations by an OpenAI-compatible chat model. One call per summary (summary and topics together), one
    per extracted turn, and one merge decision per extracted memory that has peers (same user, same kind of memory)
    and is not stored word for word already (issue #15 item 1), so calls grow linearly with turns: about
    1 + 1/threshold per user turn, plus one per memory that may update an existing belief."""

    prompt_version = PROMPT_VERSION

    def __init__(self, *, base_url: str, api_key: str, model: str, timeout: float = 30.0, attempts: int = 3,
                 fallback: OfflineDeriver | None = None) -> None:
        import openai

        self.model = model
        self.client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key or "none", timeout=timeout,
                                         max_retries=0)
        self.attempts = attempts
        self.fallback = fallback or OfflineDeriver()
        self.usage = Usage()
        self._topics_cache: dict[str, list[str]] = {}

    async def _json(self, task: str, system: str, user: str, into: type) -> Any:
        import openai

        t0 = time.monotonic()
        try:
            async for attempt in AsyncRetrying(
                retry=retry_if_exception_type((openai.APIError, openai.APITimeoutError, msgspec.ValidationError,
                                               msgspec.DecodeError)),
                wait=wait_exponential_jitter(multiplier=0.2, max=5.0, jitter=0.2),
                stop=stop_after_attempt(self.attempts), reraise=True,
            ):
                with attempt:
                    self.usage.calls += 1
                    self.usage.by_task[task] = self.usage.by_task.get(task, 0) + 1
                    self.usage.prompt_tokens_sent += count_tokens(system) + count_tokens(user)
                    resp = await self.client.chat.completions.create(
                        model=self.model, temperature=0, response_format={"type": "json_object"},
                        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}])
                    if resp.usage is not None:
                        self.usage.prompt_tokens += resp.usage.prompt_tokens or 0
                        self.usage.completion_tokens += resp.usage.completion_tokens or 0
                    content = resp.choices[0].message.content or ""
                    return msgspec.json.decode(content.encode(), type=into)
        except Exception as exc:  # noqa: BLE001 - every failure mode degrades the same way (seed 000 §6)
            self.usage.failures += 1
            log.warning("llm call failed", task=task, model=self.model, error=repr(exc),
                        ms=round((time.monotonic() - t0) * 1000))
            raise DerivationUnavailable(f"{task}: {exc}") from exc
        finally:
            log.info("llm call", task=task, model=self.model, calls=self.usage.calls,
                     prompt_tokens=self.usage.prompt_tokens, completion_tokens=self.usage.completion_tokens)
        raise DerivationUnavailable(task)  # pragma: no cover - AsyncRetrying either returns or raises

    async def summarize(self, turns: list[offline.Turn], max_tokens: int, previous: str | None) -> str:
        lines = "\n".join(f"[{t.occurred_at:%Y-%m-%d}] {t.user_id or t.role}: {t.text}" for t in turns)
        user = f"Previous summary:\n{previous or '(none)'}\n\nNew messages:\n{lines}"
        out = await self._json("summary", SUMMARY_PROMPT.format(max_tokens=max_tokens), user, _Summary)
        self._topics_cache[turns[-1].event_id] = [t.strip().lower() for t in out.topics if t.strip()][:8]
        return out.summary.strip()

    async def topics(self, turns: list[offline.Turn]) -> list[str]:
        cached = self._topics_cache.pop(turns[-1].event_id, None)
        return cached if cached is not None else await self.fallback.topics(turns)

    async def extract(self, turns: list[offline.Turn]) -> tuple[list[offline.Candidate], str, str]:
        user_turns = [t for t in turns if t.role == "user"]
        if not user_turns:
            return [], self.model, self.prompt_version
        text = "\n".join(f"{t.user_id or 'user'}: {t.text}" for t in user_turns)
        try:
            out = await self._json("extract", EXTRACT_PROMPT, text, _Memories)
        except DerivationUnavailable:
            return await self.fallback.extract(turns)  # nothing lost: the offline rules cover this turn
        ids = [t.event_id for t in user_turns]
        who = user_turns[0].user_id
        return [
            offline.Candidate(
                memory_type=m.type.upper() if m.type.upper() in MEMORY_TYPES else "FACT", text=m.text.strip(),
                importance=min(1.0, max(0.0, m.importance)), confidence=min(1.0, max(0.0, m.confidence)),
                tags=[t for t in m.tags if isinstance(t, str)][:16],
                priority=m.priority if m.priority in PRIORITIES else "LONG_TERM", user_id=who, source_event_ids=ids,
                data={"dedupe_hash": offline.dedupe_hash(who, m.text)})
            for m in out.memories if m.text.strip()
        ], self.model, self.prompt_version


    async def decide(self, candidate: offline.Candidate, existing: list[offline.ExistingItem]) -> offline.MergeVerdict:
        """The model decides among the candidate's peers (same user, compatible type: ``offline.compatible``); no
        call when there are none or the text is already stored (same ``dedupe_hash``), and the offline rule decides
        when the model cannot be reached (seed 000 §6). ``supersede`` is recorded as ``replace``."""
        mine = [e for e in existing if (e.user_id or None) == (candidate.user_id or None)]
        peers = [e for e in mine if offline.compatible(e.memory_type, candidate.memory_type)]
        h = offline.dedupe_hash(candidate.user_id, candidate.text)
        if not peers or any(offline.dedupe_hash(e.user_id, e.text) == h for e in peers):
            return offline.decide_merge(candidate, existing)
        body = msgspec.json.encode({
            "new": {"type": candidate.memory_type, "text": candidate.text},
            "existing": [{"id": e.memory_id, "type": e.memory_type, "text": e.text} for e in peers[-50:]]}).decode()
        try:
            out = await self._json("decide", DECIDE_PROMPT, body, _Decision)
        except DerivationUnavailable:
            return offline.decide_merge(candidate, existing)
        action = {"supersede": "replace", "replace": "replace"}.get(out.action.strip().lower(), out.action.strip().lower())
        return offline.MergeVerdict(action, [str(t) for t in out.target_ids][:50],
                                    f"{self.model}: {out.reason}".strip()[:1000])


def build_deriver(settings: Any, count_tokens: Any = None) -> Deriver:
    """``OpenAIDeriver`` when ``API_BASE_URL`` is set and ``MEMENGINE_DERIVER`` is not ``offline``; else offline."""
    offline_deriver = OfflineDeriver(count_tokens)
    choice = getattr(settings, "deriver", "auto")
    if choice == "offline" or (choice == "auto" and not settings.api_base_url):
        return offline_deriver
    if not settings.api_base_url:
        raise ValueError("MEMENGINE_DERIVER=openai needs API_BASE_URL")
    return OpenAIDeriver(base_url=settings.api_base_url, api_key=str(settings.api_key), model=settings.llm_model,
                         fallback=offline_deriver)
