"""Index variants: how LoCoMo turns become documents (text for full-text, text for the embedding, source turns).

Library module for experiments.py (not runnable by itself).
"""
from __future__ import annotations

from dataclasses import dataclass

from common import Conversation, Turn


@dataclass
class Doc:
    conv: str
    doc_id: int
    fts_text: str
    emb_text: str
    src: list[str]          # source dia_ids in order (what the doc "costs" in the top-k)
    session: int
    speaker: str            # speaker of the centre turn ('' for multi-speaker docs)
    pos: int                # global position of the centre/first turn in the conversation


def d_str(t: Turn) -> str:
    return f"{t.date.day} {t.date:%B %Y}"


def plain(t: Turn) -> str:
    return t.text


def spk(t: Turn) -> str:
    return f"{t.speaker}: {t.text}"


def spk_date(t: Turn) -> str:
    return f"[{d_str(t)}] {t.speaker}: {t.text}"


def cap(t: Turn) -> str:
    return f" [shares {t.caption}]" if t.caption else ""


def spk_date_cap(t: Turn) -> str:
    return spk_date(t) + cap(t)


def spk_cap(t: Turn) -> str:
    return spk(t) + cap(t)


def spk_date_cap_q(t: Turn) -> str:
    s = spk_date_cap(t)
    if t.img_query:
        s += f" [image: {t.img_query}]"
    return s


def window(turns: list[Turn], i: int, before: int, after: int) -> list[Turn]:
    """Neighbouring turns within the same session."""
    c = turns[i]
    out = []
    for j in range(i - before, i + after + 1):
        if 0 <= j < len(turns) and turns[j].session == c.session:
            out.append(turns[j])
    return out


def per_turn(conv: Conversation, fts_fmt, emb_fmt=None) -> list[Doc]:
    emb_fmt = emb_fmt or fts_fmt
    return [Doc(conv.conv, i, fts_fmt(t), emb_fmt(t), [t.dia_id], t.session, t.speaker, i)
            for i, t in enumerate(conv.turns)]


def ctx_docs(conv: Conversation, before: int, after: int, *, fts_ctx: bool, multi: bool,
             centre_fmt=spk_date_cap) -> list[Doc]:
    """Embedding text = window of turns (date once, then 'Speaker: text [caption]' lines).
    multi=False: the document's source is the centre turn only; multi=True: all window turns."""
    turns = conv.turns
    docs = []
    for i, t in enumerate(turns):
        w = window(turns, i, before, after)
        wtxt = f"[{d_str(t)}] " + " ".join(spk_cap(x) for x in w)
        fts = wtxt if fts_ctx else centre_fmt(t)
        src = [x.dia_id for x in w] if multi else [t.dia_id]
        docs.append(Doc(conv.conv, i, fts, wtxt, src, t.session, "" if multi else t.speaker, i))
    return docs


def session_docs(conv: Conversation) -> list[Doc]:
    docs = []
    pos = 0
    for n in sorted(conv.sessions):
        ts = conv.sessions[n]
        txt = f"[{d_str(ts[0])}] " + " ".join(spk_cap(t) for t in ts)
        docs.append(Doc(conv.conv, n, txt, txt, [t.dia_id for t in ts], n, "", pos))
        pos += len(ts)
    return docs


def session_chunks(conv: Conversation, size: int = 500, overlap: int = 50) -> list[Doc]:
    """Session transcript split into size/overlap character chunks; src = turns the chunk touches."""
    docs = []
    did = 0
    pos = 0
    for n in sorted(conv.sessions):
        ts = conv.sessions[n]
        head = f"[{d_str(ts[0])}] "
        spans = []
        buf = ""
        for t in ts:
            s = spk_cap(t) + " "
            spans.append((len(buf), len(buf) + len(s), t.dia_id))
            buf += s
        start = 0
        while start < len(buf):
            end = min(len(buf), start + size)
            src = [d for a, b, d in spans if a < end and b > start]
            txt = head + buf[start:end]
            docs.append(Doc(conv.conv, did, txt, txt, src, n, "", pos))
            did += 1
            if end == len(buf):
                break
            start = end - overlap
        pos += len(ts)
    return docs


def split_long_turns(conv: Conversation, size: int = 500, overlap: int = 50) -> list[Doc]:
    """One doc per turn, turns longer than `size` chars split size/overlap (each piece's source = the turn)."""
    docs = []
    did = 0
    for i, t in enumerate(conv.turns):
        full = spk_date_cap(t)
        pieces = [full] if len(full) <= size else [
            full[s:s + size] for s in range(0, len(full) - overlap, size - overlap)]
        for p in pieces:
            docs.append(Doc(conv.conv, did, p, p, [t.dia_id], t.session, t.speaker, i))
            did += 1
    return docs


VARIANTS = {
    "turn_text": lambda c: per_turn(c, plain),
    "turn_spk": lambda c: per_turn(c, spk),
    "turn_spk_date": lambda c: per_turn(c, spk_date),
    "turn_spk_date_cap": lambda c: per_turn(c, spk_date_cap),
    "turn_spk_date_cap_imgq": lambda c: per_turn(c, spk_date_cap_q),
    "split500_turns": lambda c: split_long_turns(c),
    "ctx_prev1_emb": lambda c: ctx_docs(c, 1, 0, fts_ctx=False, multi=False),
    "ctx_pm1_emb": lambda c: ctx_docs(c, 1, 1, fts_ctx=False, multi=False),
    "ctx_pm2_emb": lambda c: ctx_docs(c, 2, 2, fts_ctx=False, multi=False),
    "ctx_pm1_emb_fts": lambda c: ctx_docs(c, 1, 1, fts_ctx=True, multi=False),
    "ctx_prev2_emb": lambda c: ctx_docs(c, 2, 0, fts_ctx=False, multi=False),
    "ctx_prev1_emb_fts": lambda c: ctx_docs(c, 1, 0, fts_ctx=True, multi=False),
    "ctx_pm2_emb_fts": lambda c: ctx_docs(c, 2, 2, fts_ctx=True, multi=False),
    "win_pm1_multi": lambda c: ctx_docs(c, 1, 1, fts_ctx=True, multi=True),
    "win_pm2_multi": lambda c: ctx_docs(c, 2, 2, fts_ctx=True, multi=True),
    "session": session_docs,
    "session_chunk500": session_chunks,
}
