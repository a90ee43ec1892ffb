"""Offline default for derived memory: extractive summaries, keyphrase topics, rule-based typed memories, episodes.

No network, no LLM, no clock, no I/O: every function here is a pure, deterministic function of its arguments, so the
derived events it feeds (``SummaryUpdated``, ``TopicsExtracted``, ``MemoriesExtracted``, ``EpisodeRecorded``) are
reproducible. They record ``model = OFFLINE_MODEL`` and ``prompt_version = PROMPT_VERSION`` so that a later
re-derivation with an LLM is an explicit, traceable choice (DESIGN.md "Models": "deterministic extractive methods,
clearly named as such").

Modules (callers import the names below from this package: ``offline.summarize``, ``offline.Turn``, ...):

* ``structures``: ``Turn`` in; ``Candidate``, ``ExistingItem``, ``MergeVerdict``, ``Episode``;
* ``text``: normalisation, sentences, words, stemming, Jaccard, token estimates, relative dates, speaker names;
* ``extraction``: rule-based typed memories (``extract_memories``);
* ``selfstatements``: plain first-person self-statements and their later changes ("I drive a Passat", "my partner
  is called Ana", "I moved to Porto"), consulted first by ``extraction`` (issue #18 item 5);
* ``sentences_en``: the sentences of a turn as the extraction reads them (moods and request leads apart);
* ``reframe``: clefts said the plain way ("Where I live now is X" -> "I live in X now") before a sentence is read;
* ``quantities``: what a stated amount is of (income, rent, a commute, 公斤), the key of its attribute slot;
* ``summaries``: extractive rolling summaries (``summarize``);
* ``topics``: YAKE keyphrase topics (``topics``);
* ``episodes``: goal / outcome / entities / tools of a stretch of turns (``episode``);
* ``merge``: ``dedupe_hash``, type-aware merge and supersede decisions (``decide_merge``, ``attribute_slots``,
  ``compatible``, ``richer_text``), ``near_duplicate``;
* ``revision``: a change recognised from what two statements mean when no slot names it (shared frame, meaning
  class, or ``kinds``: what the values are, from the offline MiniLM, weights loaded once like the parser's);
* ``verbatim_en``: a lasting statement of the user's no rule or clause reading typed (a dropped subject, a fragment
  after a statement, "it's X now", a new value said as a comparison), kept in their words as said (issue #29 item 1);
* ``participants_en``: clauses about the user whose subject is another ("they moved me to X", "Dev runs the team");
* ``conventions_en``: what aspect of the replies a standing rule sets, so a newer rule replaces the older one;
* ``contractions_en``: a noun's "'s" written out as "is" / "has" for the parser ("my daughter's allergic");
* ``zh`` / ``zh_people`` / ``zh_revision``: Chinese statements, whom they are about, changes by meaning
  (``names_someone``: whether a turn has a 他 / 她 to read against the user's previous turn);
* ``safety``: the inbound memory gate (``screen``, ``gate``): quarantine with a reason code for poisoning shapes.
The lifecycle constants (types, priorities, lifetimes, quarantine) are in ``engine.derive.policy``.

Sources (requirement seeds in ``shared/seeds``):

* ``000_*.txt`` §3.1 "摘要递归压缩": when the old summary + the new one exceed ``MEMORY_MAX_SUMMARY_TOKENS`` the old
  one is compressed to about 1/3, merged with the new one, and the whole compressed again if still over;
  §1.2 ``memory_topics`` / §4.4 Tier 1 ``[Recallable Topics]``: short topic labels; §6 token counts are estimates.
* ``001_*.txt`` "字段定义：memory_items": types PROFILE / TASK / FACT / EPISODIC, ``importance`` 0..1, ``tags``,
  ``data`` (structured payload), ``dedupe_hash`` scoped by ``user_id``; "写入（记忆存储）" extract -> score ->
  dedupe decides add / merge / ignore; dedupe_hash = hash(normalize(text)).
* ``002_*.txt`` §3.2 memory types preference / fact / pattern / skill; §4.1 ``_merge_or_update``: replace / merge /
  keep_both; §2.2 "冲突的记忆 → 保留最新" (a contradiction replaces the old memory).
* ``003_*.txt`` "工作记忆": content under the 0.8 confidence threshold is held back (quarantine) instead of being
  promoted; here the candidate is flagged ``data["quarantined"]`` and the caller decides.
* ``004_*.txt`` §4 "记忆类型": FACT / PREFERENCE / SKILL / ERROR / RULE with ``subject``/``predicate``,
  ``importance_score``, ``confidence``; priorities TRANSIENT 1 d, SHORT_TERM 3 d, LONG_TERM 30 d, PERMANENT
  (``duration`` ``permanent|7d|24h|session``, ERROR kept 7 d); Episode = summary, goal, outcome, entities,
  tools_used, started_at, ended_at.

Keyphrases come from YAKE (``yake``: unsupervised, statistical, single-document; stop-word lists ship inside the
wheel, no model or corpus download). Everything else is plain ``re`` + arithmetic.
"""

from __future__ import annotations

from memengine.engine.derive.offline.episodes import episode
from memengine.engine.derive.offline.extraction import extract_memories
from memengine.engine.derive.offline.fold import folded, words_of
from memengine.engine.derive.offline.merge import (
    DUPLICATE_SIMILARITY,
    attribute_slots,
    checked_verdict,
    compatible,
    decide_merge,
    dedupe_hash,
    near_duplicate,
    richer_text,
    statement_type,
)
from memengine.engine.derive.offline.refusals import refuses
from memengine.engine.derive.offline.safety import CODES as QUARANTINE_CODES
from memengine.engine.derive.offline.safety import canonical, gate, held_turn, quarantined, screen
from memengine.engine.derive.offline.siblings import taint_siblings
from memengine.engine.derive.offline.structures import Candidate, Episode, ExistingItem, MergeVerdict, Turn
from memengine.engine.derive.offline.summaries import summarize
from memengine.engine.derive.offline.topics import topics
from memengine.engine.derive.offline.zh_people import names_someone

OFFLINE_MODEL = "offline-extractive-v1"  # recorded as `model` on derived events
PROMPT_VERSION = "1"

__all__ = [
    "DUPLICATE_SIMILARITY", "OFFLINE_MODEL", "PROMPT_VERSION", "QUARANTINE_CODES", "Candidate", "Episode",
    "ExistingItem", "MergeVerdict", "Turn", "attribute_slots", "canonical", "checked_verdict", "compatible",
    "decide_merge", "dedupe_hash", "episode", "extract_memories", "folded", "gate", "held_turn", "quarantined",
    "names_someone", "near_duplicate", "richer_text", "screen", "statement_type", "summarize", "taint_siblings",
    "topics", "words_of", "refuses",
]
