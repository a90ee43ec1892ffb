"""Issue #28 (session 18): document-side translation and MiniLM's dense list across scripts, prototyped on the
research harness (``xling_variants.py``) before any fold change.

After ingest, each recall row of the scratch store gets ``xl_tsv``: the english parse of the CC-CEDICT glosses of
its Chinese words and the Chinese headwords of its English words (``DOC`` bounds), and ``xw_tsv`` the +-1 window's
concatenation of them; ``zh``: the row is mostly CJK (``composite.mostly_latin`` gives ""). A variant adds lists
``bx`` (turn) / ``bxw`` (window) over them, matched by the question's OWN lexemes (never the query-side bridge's),
and / or weighs MiniLM's dense list for rows of the other script than the question.

    MEMENGINE_HOME=/tmp/home-xl28 PYTHONPATH=<dir holding memengine> .venv/bin/python \\
        bench/recall_research/doc_xl.py --set tests/data/zh_recall:dev --variants base,bx1 [--locomo]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import xling_variants as X

from memengine.engine.embedding.composite import mostly_latin
from memengine.engine.read import crosslingual
from memengine.projections.segment import CJK_RUN

#: document side: headwords per English word, glosses per Chinese word
DOC: dict[str, int] = {"heads": 3, "glosses": 3}
XCFG: dict[str, Any] = {}
ANY = False


def doc_text(bridge: crosslingual.Bridge, body: str) -> str:
    """The row's words in the other language: glosses of its Chinese words, headwords of its English words."""
    parts: list[str] = []
    if CJK_RUN.search(body):
        old = crosslingual.GLOSSES_PER_WORD
        crosslingual.GLOSSES_PER_WORD = DOC["glosses"]
        try:
            parts += [g.lower() for g in bridge.english(body)]
        finally:
            crosslingual.GLOSSES_PER_WORD = old
    latin = CJK_RUN.sub(" ", body)
    for token in crosslingual._TOKEN.findall(latin.lower()):
        for w in crosslingual._WORD.findall(token):
            if w in crosslingual.EN_STOP:
                continue
            heads = bridge.headwords.get(crosslingual.lookup_key(w, bridge.stem), ())
            parts += [h for h in heads[:DOC["heads"]] if h not in parts]
    return " ".join(parts)


async def annotate(engine: Any, tenant: str) -> None:
    bridge = crosslingual.bridge()
    assert bridge is not None
    pool = engine.pool
    await pool.execute("ALTER TABLE memory_vectors ADD COLUMN IF NOT EXISTS xl_tsv tsvector;"
                       " ALTER TABLE memory_vectors ADD COLUMN IF NOT EXISTS xw_tsv tsvector;"
                       " ALTER TABLE memory_vectors ADD COLUMN IF NOT EXISTS zh bool;"
                       " ALTER TABLE memory_vectors ADD COLUMN IF NOT EXISTS zhw bool")
    rows = await pool.fetch("SELECT seq, piece, emb_text FROM memory_vectors WHERE tenant_id = $1", tenant)
    vals = []
    for r in rows:
        body = r["piece"].split(": ", 1)[1] if ": " in r["piece"] else r["piece"]
        zh = bool(CJK_RUN.search(body)) if XCFG.get("anycjk") else mostly_latin(body) == ""
        vals.append((tenant, r["seq"], doc_text(bridge, body), zh, mostly_latin(r["emb_text"]) == ""))
    await pool.executemany("UPDATE memory_vectors SET xl_tsv = to_tsvector('english', $3), zh = $4, zhw = $5"
                           " WHERE tenant_id = $1 AND seq = $2", vals)
    await pool.execute("""UPDATE memory_vectors m SET xw_tsv = coalesce(p.xl_tsv, ''::tsvector) || m.xl_tsv
                          || coalesce(n.xl_tsv, ''::tsvector)
                          FROM memory_vectors m2 LEFT JOIN memory_vectors p ON p.tenant_id = m2.tenant_id
                               AND p.seq = m2.prev_seq
                          LEFT JOIN memory_vectors n ON n.tenant_id = m2.tenant_id AND n.seq = m2.next_seq
                         WHERE m.tenant_id = $1 AND m2.tenant_id = $1 AND m2.seq = m.seq""", tenant)


ORIG_INGEST = X._ingest


async def _ingest(engine: Any, path: Path, tag: str) -> tuple[str, str, Any]:
    got = await ORIG_INGEST(engine, path, tag)
    await asyncio.to_thread(crosslingual.prepare)
    await annotate(engine, got[0])
    return got


X._ingest = _ingest
ORIG_SUMMARY = X.summarize_set


def _summary(rows: Any, ks: Any) -> dict[str, Any]:
    """``summarize_set`` plus the cross-lingual questions by the question's language (``xzh``: a Chinese question
    about an English turn, ``xen`` the reverse)."""
    out = ORIG_SUMMARY(rows, ks)
    for name, lang in (("xzh", "zh"), ("xen", "en")):
        sel = [r for q, r in rows if q["cross"] and q["lang"] == lang]
        out[name] = {"questions": len(sel),
                     "recall_at": {str(k): round(sum(r[k] for r in sel) / len(sel), 4) for k in ks} if sel else {}}
    return out


X.summarize_set = _summary
X.GROUPS += ["xzh", "xen"]

QZH = ("(3 * length(regexp_replace(split_part($6, chr(31), 1), '[^\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]', '', 'g'))"
       " > length(regexp_replace(split_part($6, chr(31), 1), '[^A-Za-z]', '', 'g')))")


def _xpatch(s: str) -> str:
    lists = XCFG.get("lists", ())
    dw = XCFG.get("dense_x")  # weight of MiniLM's list for cross-script rows (None: 1); "drop": out of the list
    if not lists and dw is None and not XCFG.get("no_bridge"):
        return s
    old_th = "d.turn_text ~ '[?？][[:space:]]*$' AS ask"
    assert old_th in s
    extra = [old_th, "d.zh <> (SELECT qz FROM qz) AS xs", "d.zhw AS zhw", "d.zh AS zh"]
    if lists:
        extra += [X.RT.only_query("d.xl_tsv", "qo") + " AS tx", X.RT.only_query("d.xw_tsv", "qo") + " AS txw"]
    s = s.replace(old_th, ", ".join(extra), 1)
    s = s.replace("FROM qq, memory_vectors d WHERE", "FROM qq, qo, memory_vectors d WHERE", 1)
    head = f"""qz AS MATERIALIZED (SELECT {QZH} AS qz),
qo AS MATERIALIZED (SELECT array_agg(l) AS ls FROM (SELECT DISTINCT l
        FROM unnest(tsvector_to_array(memengine_tsv(split_part($6, chr(31), 1)))) l) x),
th AS MATERIALIZED ("""
    s = s.replace("th AS MATERIALIZED (", head, 1)
    if XCFG.get("no_bridge"):  # bt / bw read the question's own lexemes only
        old = "memengine_tsv($6::text))) l) ql)"
        assert old in s
        s = s.replace(old, "memengine_tsv(split_part($6, chr(31), 1)))) l) ql)", 1)
    fused_add = ""
    for name, col, w in lists:
        tpl = f"""m_{name} AS MATERIALIZED (SELECT th.seq, u.lexeme, cardinality(u.positions)::float8 AS tf
          FROM th CROSS JOIN LATERAL unnest(th.{col}) u),
df_{name} AS MATERIALIZED (SELECT lexeme, count(*)::float8 AS df FROM m_{name} GROUP BY lexeme),
{name} AS (SELECT seq, row_number() OVER (ORDER BY s DESC, seq) AS r FROM (
        SELECT m.seq, sum(ln(1 + (st.n - df.df + 0.5) / (df.df + 0.5)) * m.tf * 2.2 / (m.tf + 1.2)) AS s
          FROM m_{name} m JOIN df_{name} df USING (lexeme) CROSS JOIN st
         GROUP BY m.seq ORDER BY s DESC, m.seq LIMIT 200) x),
"""
        s = s.replace("dv AS MATERIALIZED (", tpl + "dv AS MATERIALIZED (", 1)
        xw = XCFG.get("bx_xs_only")
        wexpr = f"CASE WHEN seq IN (SELECT seq FROM th WHERE xs) THEN {w} ELSE 0 END" if xw else str(w)
        fused_add += f" UNION ALL SELECT seq, r, ({wexpr})::numeric FROM {name}"
    if fused_add:
        old = "UNION ALL SELECT seq, r, w FROM dv) a GROUP BY seq)"
        assert old in s
        s = s.replace(old, f"UNION ALL SELECT seq, r, w FROM dv{fused_add}) a GROUP BY seq)", 1)
    if dw is not None:
        old = """dv AS MATERIALIZED (SELECT seq, row_number() OVER (ORDER BY dist, seq) AS r, 1::numeric AS w FROM (
        SELECT c.seq, c.emb <=> qv.v AS dist FROM qv, """
        assert old in s, s
        if dw == "drop":
            s = s.replace(old, old.replace("FROM qv, ", "FROM qv, (SELECT e.* FROM ") , 1)
            s = s.replace(") c WHERE $7::text IS NOT NULL\n         ORDER BY dist",
                          ") e WHERE e.seq NOT IN (SELECT seq FROM th WHERE xs)) c WHERE $7::text IS NOT NULL\n"
                          "         ORDER BY dist", 1)
        elif dw == "dropzh":
            s = s.replace(old, old.replace("FROM qv, ", "FROM qv, (SELECT e.* FROM "), 1)
            s = s.replace(") c WHERE $7::text IS NOT NULL\n         ORDER BY dist",
                          ") e WHERE (SELECT NOT qz FROM qz) AND e.seq NOT IN (SELECT seq FROM th WHERE xs)) c"
                          " WHERE $7::text IS NOT NULL\n         ORDER BY dist", 1)
        elif dw in ("qzh0", "qzhx0"):  # no MiniLM list for a Chinese question (qzhx0: over Chinese rows only)
            s = s.replace(old, old.replace("FROM qv, ", "FROM qv, (SELECT e.* FROM "), 1)
            keep = "e.seq IN (SELECT seq FROM th WHERE xs)" if dw == "qzhx0" else "false"
            s = s.replace(") c WHERE $7::text IS NOT NULL\n         ORDER BY dist",
                          f") e WHERE (SELECT NOT qz FROM qz) OR {keep}) c"
                          " WHERE $7::text IS NOT NULL\n         ORDER BY dist", 1)
        elif dw in ("w_en", "w_all", "w_zh"):  # rows whose embedded window is mostly CJK leave the list
            s = s.replace(old, old.replace("FROM qv, ", "FROM qv, (SELECT e.* FROM "), 1)
            cond = {"w_en": "NOT (NOT (SELECT qz FROM qz) AND e.seq IN (SELECT seq FROM th WHERE zhw))"
                            " AND NOT ((SELECT qz FROM qz) AND e.seq IN (SELECT seq FROM th WHERE zh))",
                    "w_all": "e.seq NOT IN (SELECT seq FROM th WHERE zhw)",
                    "w_zh": "NOT ((SELECT qz FROM qz) AND e.seq IN (SELECT seq FROM th WHERE zhw))"}[dw]
            s = s.replace(") c WHERE $7::text IS NOT NULL\n         ORDER BY dist",
                          f") e WHERE {cond}) c WHERE $7::text IS NOT NULL\n         ORDER BY dist", 1)
        elif isinstance(dw, str) and dw.startswith("cc"):  # CJK question x CJK row pairs weigh float(dw[2:])
            s = s.replace(old, old.replace("1::numeric AS w", "CASE WHEN (SELECT qz FROM qz) AND seq IN (SELECT seq"
                                           f" FROM th WHERE NOT xs) THEN {float(dw[2:])} ELSE 1 END::numeric AS w"), 1)
        else:
            w = f"CASE WHEN seq IN (SELECT seq FROM th WHERE xs) THEN {dw} ELSE 1 END::numeric AS w"
            s = s.replace(old, old.replace("1::numeric AS w", w), 1)
    return s


ORIG_PATCH = X._patch


def _patch(s: str, emb_table: str | None) -> str:
    return _xpatch(ORIG_PATCH(s, emb_table))


X._patch = _patch


def _v(**kw: Any) -> Any:
    base = X._set(**{k: kw.pop(k) for k in list(kw) if k.isupper()})

    def apply() -> None:
        base()
        XCFG.clear()
        XCFG.update(kw, anycjk=ANY)
    return apply


X.VARIANTS.update({
    "base": _v(),
    "nocjk": _v(CJK_PAIRS_OUT=False),
    "bx1": _v(lists=(("bx", "tx", 1.0),)),
    "bx05": _v(lists=(("bx", "tx", 0.5),)),
    "bx025": _v(lists=(("bx", "tx", 0.25),)),
    "bxw1": _v(lists=(("bx", "tx", 1.0), ("bxw", "txw", 1.0))),
    "bxw05": _v(lists=(("bx", "tx", 0.5), ("bxw", "txw", 0.5))),
    "bxwx1": _v(lists=(("bx", "tx", 1.0), ("bxw", "txw", 1.0)), bx_xs_only=True),
    "bxwx05": _v(lists=(("bx", "tx", 0.5), ("bxw", "txw", 0.5)), bx_xs_only=True),
    "nb_bxw1": _v(lists=(("bx", "tx", 1.0), ("bxw", "txw", 1.0)), no_bridge=True),
    "nb": _v(no_bridge=True, dense_x=1.0),
    "dx0": _v(dense_x=0.0),
    "dx05": _v(dense_x=0.5),
    "dxdrop": _v(dense_x="drop"),
    "dxdropzh": _v(dense_x="dropzh"),
    "bxw1_dx05": _v(lists=(("bx", "tx", 1.0), ("bxw", "txw", 1.0)), dense_x=0.5),
    "dqzh": _v(dense_x="qzh0"),
    "dqzhx": _v(dense_x="qzhx0"),
    "bxwx1_dqzh": _v(lists=(("bx", "tx", 1.0), ("bxw", "txw", 1.0)), bx_xs_only=True, dense_x="qzh0"),
    "bxwx1_dqzhx": _v(lists=(("bx", "tx", 1.0), ("bxw", "txw", 1.0)), bx_xs_only=True, dense_x="qzhx0"),
    "bx1_dqzh": _v(lists=(("bx", "tx", 1.0),), dense_x="qzh0"),
    "bx1_dqzhx": _v(lists=(("bx", "tx", 1.0),), dense_x="qzhx0"),
    "bx05_dqzhx": _v(lists=(("bx", "tx", 0.5),), dense_x="qzhx0"),
    "bx2_dqzhx": _v(lists=(("bx", "tx", 2.0),), dense_x="qzhx0"),
    "bxw1_dqzhx": _v(lists=(("bx", "tx", 1.0), ("bxw", "txw", 1.0)), dense_x="qzhx0"),
    "bxw05_dqzhx": _v(lists=(("bx", "tx", 0.5), ("bxw", "txw", 0.5)), dense_x="qzhx0"),
    "bw1_dqzhx": _v(lists=(("bxw", "txw", 1.0),), dense_x="qzhx0"),
    "bxx1_dqzhx": _v(lists=(("bx", "tx", 1.0),), bx_xs_only=True, dense_x="qzhx0"),
    "cc0": _v(dense_x="cc0"),
    "w_en": _v(CJK_PAIRS_OUT=False, dense_x="w_en"),
    "w_all": _v(CJK_PAIRS_OUT=False, dense_x="w_all"),
    "w_zh": _v(CJK_PAIRS_OUT=False, dense_x="w_zh"),
    "cc025": _v(dense_x="cc0.25"),
    "cc05": _v(dense_x="cc0.5"),
    "bxw1_dxdrop": _v(lists=(("bx", "tx", 1.0), ("bxw", "txw", 1.0)), dense_x="drop"),
    "bxw05_dxdrop": _v(lists=(("bx", "tx", 0.5), ("bxw", "txw", 0.5)), dense_x="drop"),
})


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--variants", default="base")
    ap.add_argument("--locomo", action="store_true")
    ap.add_argument("--misses", default="")
    ap.add_argument("--heads", type=int, default=3)
    ap.add_argument("--glosses", type=int, default=3)
    ap.add_argument("--anycjk", action="store_true")
    a = ap.parse_args()
    ANY = a.anycjk
    DOC.update(heads=a.heads, glosses=a.glosses)
    asyncio.run(X.main(a))
