"""Derivers: who turns transcript into summaries, topics and typed memories.

``OfflineDeriver`` (the default, no network) wraps ``engine.derive.offline``. ``OpenAIDeriver`` asks any
OpenAI-compatible chat-completions endpoint (``API_BASE_URL``, ``API_KEY``, ``MEMORY_LLM_MODEL``) for JSON constrained
by a JSON schema (``response_format: json_schema``, accepted by OpenAI and llama.cpp's server alike; issue #29 item 3),
validates it with msgspec, retries transport failures with backoff, bounds every call with a timeout
(``MEMENGINE_LLM_TIMEOUT_S``, ``MEMENGINE_LLM_ATTEMPTS``), and counts calls, tokens, turns and fallbacks by reason.
Switching between them is configuration, not code (issue #4 §1).

Failures follow seed 000 §6 ("LLM 摘要调用失败 -> warning 日志，使用旧摘要或跳过 Tier 1"): ``summarize`` raises
``DerivationUnavailable``, the enricher logs a warning, keeps the old summary and leaves the messages pending (they
are summarised with the next batch: nothing is lost); memory extraction and merge decisions fall back to the offline
rules for that turn. Whatever the model returns instead of a valid answer (invalid JSON, wrong types, ids that are not
among the candidate's peers, empty output, a refusal, a cut-off answer, a timeout) is one of ``FALLBACK_REASONS``: it is
counted in ``Usage.fallbacks`` and recorded on what the offline rules produced instead (``data["llm_fallback"]`` on
the memory, the merge decision's reason), and nothing the model said is written.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Protocol

import msgspec
import structlog
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential_jitter

from memengine.engine.derive import offline
from memengine.engine.derive.policy import MEMORY_TYPES, PRIORITIES
from memengine.engine.wire.errors import Unavailable
from memengine.events.derived import MergeAction
from memengine.projections.tokens import count_tokens

log = structlog.get_logger("memengine.llm")

PROMPT_VERSION = "llm-2"  # llm-2: JSON-schema constrained output (issue #29)

#: why a model's answer was not used (the key of ``Usage.fallbacks``, ``memengine_llm_fallbacks_total{reason}``)
FALLBACK_REASONS = ("timeout", "unreachable", "api_error", "refusal", "empty", "truncated", "invalid_json",
                    "wrong_type", "unknown_ids")


class DerivationUnavailable(Unavailable, RuntimeError):
    """The model could not be reached or answered with something unusable (after retries); ``reason`` is one of
    ``FALLBACK_REASONS``."""

    def __init__(self, message: str, reason: str = "api_error") -> None:
        super().__init__(message)
        self.reason = reason


class _BadOutput(Exception):
    """The model answered, but not with a usable value (not retried: at temperature 0 it would answer the same)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


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


_Unit = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
_Text = Annotated[str, msgspec.Meta(max_length=2000)]
_Label = Annotated[str, msgspec.Meta(max_length=80)]
_MemoryType = Literal["PROFILE", "PREFERENCE", "FACT", "TASK", "RULE", "SKILL", "ERROR"]
_Priority = Literal["TRANSIENT", "SHORT_TERM", "LONG_TERM", "PERMANENT"]
_Action = Literal["add", "merge", "supersede", "replace", "keep_both", "ignore"]


class _Summary(msgspec.Struct, forbid_unknown_fields=True):
    summary: _Text
    topics: Annotated[list[_Label], msgspec.Meta(max_length=16)] = []


class _Memory(msgspec.Struct, forbid_unknown_fields=True):
    type: _MemoryType
    text: _Text
    importance: _Unit = 0.5
    confidence: _Unit = 0.7
    tags: Annotated[list[_Label], msgspec.Meta(max_length=16)] = []
    priority: _Priority = "LONG_TERM"


class _Memories(msgspec.Struct, forbid_unknown_fields=True):
    memories: Annotated[list[_Memory], msgspec.Meta(max_length=32)] = []


class _Decision(msgspec.Struct, forbid_unknown_fields=True):
    action: _Action
    target_ids: Annotated[list[str], msgspec.Meta(max_length=50)] = []
    reason: _Text = ""


def _obj(props: dict[str, Any]) -> dict[str, Any]:
    """A closed JSON-schema object with every property required (the shape OpenAI's structured outputs want)."""
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def _str(max_length: int) -> dict[str, Any]:
    return {"type": "string", "maxLength": max_length}


def summary_schema(max_chars: int) -> dict[str, Any]:
    """JSON schema of a summary answer; the bounds keep a small model from rambling until ``max_tokens``."""
    return _obj({"summary": _str(max_chars), "topics": {"type": "array", "items": _str(40), "maxItems": 8}})


#: JSON schema of an extraction answer (tags, which the model need not fill, keep their default)
EXTRACT_SCHEMA = _obj({"memories": {"type": "array", "maxItems": 4, "items": _obj({
    "type": {"type": "string", "enum": ["PROFILE", "PREFERENCE", "FACT", "TASK", "RULE", "SKILL", "ERROR"]},
    "text": _str(160), "importance": {"type": "number", "minimum": 0, "maximum": 1},
    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    "priority": {"type": "string", "enum": ["TRANSIENT", "SHORT_TERM", "LONG_TERM", "PERMANENT"]}})}})


#: tokens for a merge decision: the largest answer ``decide_schema`` allows (four ids of about 25 tokens each, a
#: reason of 160 characters, up to about 160 tokens in Chinese, and the JSON around them). 160 cut a valid answer of
#: two ids and a long reason, which then fell back as "truncated" (CI rehearsal, session 24: the ids are new each run)
DECIDE_MAX_TOKENS = 400


def decide_schema(ids: list[str]) -> dict[str, Any]:
    """JSON schema of a merge decision: ``target_ids`` may only name the given peers (the grammar of a llama.cpp
    server cannot produce another id; an answer that does anyway is refused as ``unknown_ids``)."""
    return _obj({"action": {"type": "string", "enum": ["add", "merge", "supersede", "keep_both", "ignore"]},
                 "target_ids": {"type": "array", "maxItems": 4, "items": {"type": "string", "enum": ids}},
                 "reason": _str(160)})


SUMMARY_PROMPT = """You maintain the rolling summary of a conversation (seed 000 §3.1).
Merge the previous summary and the new messages into one summary of at most {max_tokens} tokens: keep facts, decisions,
names, dates and open tasks; drop small talk. Then list up to 8 short topic labels.
Answer with JSON only: {{"summary": "...", "topics": ["...", ...]}}"""

EXTRACT_PROMPT = """Extract long-term memories about the user from the user's messages below (seed 001, seed 004).
Types: PROFILE, PREFERENCE, FACT, TASK, RULE, SKILL, ERROR. Only what the user states about themselves or asks you to
remember; no questions, no small talk. Write each memory in the third person with the user's name if known.
Each memory is one short sentence with one fact; importance is 0..1; confidence is 0..1, how plainly the user said it
(0.9 for a plain statement); priority is TRANSIENT (moods), SHORT_TERM (plans), LONG_TERM or PERMANENT (identity,
family, health, standing rules). No facts: {"memories": []}.
Answer with JSON only: {"memories": [{"type": "...", "text": "...", "importance": 0.5, "confidence": 0.9,
"priority": "LONG_TERM"}]}"""

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
    turns: int = 0  # user turns given to the model for extraction (the denominator of the per-turn figures)
    fallbacks: dict[str, int] = field(default_factory=dict)  # "task:reason" -> answers not used (FALLBACK_REASONS)

    def fell_back(self, task: str, reason: str) -> str:
        """Count one fallback of ``task`` for ``reason``; returns the ``"task: reason"`` label that is recorded."""
        key = f"{task}:{reason}"
        self.fallbacks[key] = self.fallbacks.get(key, 0) + 1
        return f"{task}: {reason}"


class OpenAIDeriver:
    """Derivations by an OpenAI-compatible chat model. One call per summary (summary and topics together), one
    per extracted turn, and one merge decision per extracted memory that has peers (same user, same kind of memory)
    and is not stored word for word already (issue #15 item 1), so calls grow linearly with turns: about
    1 + 1/threshold per user turn, plus one per memory that may update an existing belief."""

    prompt_version = PROMPT_VERSION

    def __init__(self, *, base_url: str, api_key: str, model: str, timeout: float = 30.0, attempts: int = 3,
                 fallback: OfflineDeriver | None = None) -> None:
        """``timeout`` (seconds) bounds each call, ``attempts`` counts tries of a call that failed in transport
        (timeout, connection, HTTP 429/5xx); an unusable answer is not tried again."""
        import openai

        self.model = model
        self.client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key or "none", timeout=timeout,
                                         max_retries=0)
        self.attempts = attempts
        self.fallback = fallback or OfflineDeriver()
        self.usage = Usage()
        self._topics_cache: dict[str, list[str]] = {}

    async def _json(self, task: str, system: str, user: str, into: type, schema: dict[str, Any],
                    max_tokens: int) -> Any:
        """One constrained call: the answer decoded into ``into``. Raises ``DerivationUnavailable`` with its
        ``reason`` (counted in ``usage.fallbacks``) when there is no usable answer."""
        import openai

        t0 = time.monotonic()
        try:
            async for attempt in AsyncRetrying(
                retry=retry_if_exception_type((openai.APIConnectionError, openai.RateLimitError,
                                               openai.InternalServerError)),
                wait=wait_exponential_jitter(multiplier=0.2, max=5.0, jitter=0.2),
                stop=stop_after_attempt(self.attempts), reraise=True,
            ):
                with attempt:
                    self.usage.calls += 1
                    self.usage.by_task[task] = self.usage.by_task.get(task, 0) + 1
                    self.usage.prompt_tokens_sent += count_tokens(system) + count_tokens(user)
                    resp = await self.client.chat.completions.create(
                        model=self.model, temperature=0, max_tokens=max_tokens,
                        # strict off: OpenAI's strict mode refuses length and numeric bounds (HTTP 400, so every
                        # call would fall back), while llama.cpp's server turns the whole schema into a grammar
                        # either way; the answer is validated here in both cases
                        response_format={"type": "json_schema",
                                         "json_schema": {"name": task, "schema": schema, "strict": False}},
                        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}])
                    return self._decode(resp, into)
        except Exception as exc:  # every failure mode degrades the same way (seed 000 §6)
            reason = _reason(exc)
            self.usage.failures += 1
            label = self.usage.fell_back(task, reason)
            log.warning("llm call failed", task=task, model=self.model, reason=reason, error=repr(exc)[:500],
                        ms=round((time.monotonic() - t0) * 1000))
            raise DerivationUnavailable(label, reason) from exc
        finally:
            log.info("llm call", task=task, model=self.model, calls=self.usage.calls,
                     prompt_tokens=self.usage.prompt_tokens, completion_tokens=self.usage.completion_tokens)
        raise DerivationUnavailable(task)  # pragma: no cover - AsyncRetrying either returns or raises

    def _decode(self, resp: Any, into: type) -> Any:
        """The first choice's content as ``into``, or ``_BadOutput`` naming what was wrong with it."""
        usage = getattr(resp, "usage", None)
        if usage is not None:
            self.usage.prompt_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
            self.usage.completion_tokens += int(getattr(usage, "completion_tokens", 0) or 0)
        choices = getattr(resp, "choices", None) or []
        if not choices:
            raise _BadOutput("empty", "no choice")
        message = choices[0].message
        if getattr(message, "refusal", None):
            raise _BadOutput("refusal", str(message.refusal)[:200])
        content = message.content if isinstance(message.content, str) else ""
        if not content.strip():
            raise _BadOutput("empty")
        try:
            return msgspec.json.decode(content.encode(), type=into)
        except msgspec.ValidationError as exc:
            raise _BadOutput("wrong_type", str(exc)) from exc
        except msgspec.DecodeError as exc:
            cut = choices[0].finish_reason == "length"
            raise _BadOutput("truncated" if cut else "invalid_json", str(exc)) from exc

    async def summarize(self, turns: list[offline.Turn], max_tokens: int, previous: str | None) -> str:
        lines = "\n".join(f"[{t.occurred_at:%Y-%m-%d}] {t.user_id or t.role}: {t.text}" for t in turns)
        user = f"Previous summary:\n{previous or '(none)'}\n\nNew messages:\n{lines}"
        out: _Summary = await self._json("summary", SUMMARY_PROMPT.format(max_tokens=max_tokens), user, _Summary,
                               summary_schema(min(4 * max_tokens, 2000)), max_tokens + 120)
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
        self.usage.turns += len(user_turns)
        try:
            out = await self._json("extract", EXTRACT_PROMPT, text, _Memories, EXTRACT_SCHEMA, 400)
        except DerivationUnavailable as exc:
            return await self._offline_extract(turns, str(exc))  # nothing lost: the offline rules cover this turn
        ids = [t.event_id for t in user_turns]
        who = user_turns[0].user_id
        return [
            offline.Candidate(
                memory_type=m.type if m.type in MEMORY_TYPES else "FACT", text=" ".join(m.text.split()),
                importance=m.importance, confidence=m.confidence, tags=[t.strip() for t in m.tags if t.strip()],
                priority=m.priority if m.priority in PRIORITIES else "LONG_TERM", user_id=who, source_event_ids=ids,
                data={"dedupe_hash": offline.dedupe_hash(who, m.text)})
            for m in out.memories if m.text.strip()
        ], self.model, self.prompt_version

    async def _offline_extract(self, turns: list[offline.Turn],
                               label: str) -> tuple[list[offline.Candidate], str, str]:
        """The offline rules' candidates for ``turns``, each recording why the model's were not used."""
        candidates, model, version = await self.fallback.extract(turns)
        return [msgspec.structs.replace(c, data={**c.data, "llm_fallback": label}) for c in candidates], model, version


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
        ids = [e.memory_id for e in peers[-50:]]
        try:
            out = await self._json("decide", DECIDE_PROMPT, body, _Decision, decide_schema(ids), DECIDE_MAX_TOKENS)
            if any(t not in ids for t in out.target_ids):  # never act on an item the model was not shown
                self.usage.failures += 1
                raise DerivationUnavailable(self.usage.fell_back("decide", "unknown_ids"), "unknown_ids")
        except DerivationUnavailable as exc:
            v = offline.decide_merge(candidate, existing)
            # the offline verdict whole: a fold or a combined text is part of the decision, not only its action
            return msgspec.structs.replace(v, reason=f"llm fallback ({exc}); {v.reason}"[:1000])
        action: MergeAction = "replace" if out.action == "supersede" else out.action
        return offline.MergeVerdict(action, list(dict.fromkeys(out.target_ids)),
                                    f"{self.model}: {out.reason}".strip()[:1000])


def _reason(exc: BaseException) -> str:
    """The ``FALLBACK_REASONS`` entry for what ``_json`` caught."""
    import openai

    if isinstance(exc, _BadOutput):
        return exc.reason
    if isinstance(exc, openai.APITimeoutError):  # a subclass of APIConnectionError: test it first
        return "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return "unreachable"
    return "api_error"


def build_deriver(settings: Any, count_tokens: Any = None) -> Deriver:
    """``OpenAIDeriver`` when ``API_BASE_URL`` is set and ``MEMENGINE_DERIVER`` is not ``offline``; else offline."""
    offline_deriver = OfflineDeriver(count_tokens)
    choice = getattr(settings, "deriver", "auto")
    if choice == "offline" or (choice == "auto" and not settings.api_base_url):
        return offline_deriver
    if not settings.api_base_url:
        raise ValueError("MEMENGINE_DERIVER=openai needs API_BASE_URL")
    return OpenAIDeriver(base_url=settings.api_base_url, api_key=str(settings.api_key), model=settings.llm_model,
                         timeout=settings.llm_timeout_s, attempts=settings.llm_attempts,
                         fallback=offline_deriver)
