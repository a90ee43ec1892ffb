"""A statement said as the lead of a request (issue #29 item 2: "facts inside a request ... as a diabetic, what can
I ..."): "as a coeliac, what can I order at a pizza place?", "Sharing a flat in Hackney with two mates, what's a fair
way to split the bills?", "My son is 9 and mad about trains, any day trips near York?".

People give the context of a question before it, in a clause of its own; the extraction skips questions, so the
context was lost with them. ``split`` cuts such a sentence where the question starts (a comma or a dash, then a
question word: a closed grammatical class, not a phrasing; or a full clause of the user's then a question that
leaves out its verb and subject, "our retriever sheds like crazy, best brush?"), and gives the lead back as a
sentence of its own, in the first person where it left the speaker out ("as a coeliac" -> "I'm a coeliac", a bare
participle "Sharing a flat ..." -> "I'm sharing a flat ..."). What the lead then says is read like any sentence: a
mood ("I'm so tired today"), a thank-you or a question before the question give nothing there. Pure.
"""

from __future__ import annotations

import re

from memengine.engine.derive.offline import parse_en
from memengine.engine.derive.offline.text import pictographs_apart

#: words a question (or a request for suggestions) starts with
_QUESTION = (r"(?:do|does|did|are|is|was|were|can|could|would|will|have|has|had|what|what's|whats|why|how|where|"
             r"when|who|which|should|shall|any|anything|recommend|suggest)")
_CUT = re.compile(rf"(?:,|\s[-\u2013\u2014])\s+(?:(?:so|but|and|then|ok|okay)\s+)?(?={_QUESTION}\b)", re.I)
_QUESTION_START = re.compile(rf"^\W*{_QUESTION}\b", re.I)
#: "as a coeliac", "as a new dad", "as an ex-smoker": who the speaker is, in a few words
_AS_A = re.compile(r"^as (?P<a>an?) (?P<who>[\w'-]+(?: [\w'-]+){0,2})$", re.I)
#: the fewest words a lead needs to state anything ("Thanks", "ok cool", "Honestly" do not)
MIN_LEAD_WORDS = 3


#: a subordinator of reason before a clause of the user's ("Since I've got ...", "Seeing as I work nights"): the
#: reason for asking, which the clause states (closed class of reason subordinators)
_REASON = re.compile(r"^(?:since|because|cause|cuz|cos|as|seeing as|given that|now that)\s+"
                     r"(?=(?:I|I'm|I've|I'd|we|we're|we've|my|our)\b)", re.I)


def _first_person(lead: str) -> str:
    """``lead`` with the speaker it left out: "as a X" -> "I'm a X", a bare participle -> "I'm <participle> ...";
    a reason's subordinator dropped ("Since I've got coeliac disease" -> "I've got coeliac disease")."""
    lead = _REASON.sub("", lead)
    m = _AS_A.match(lead)
    if m:
        return f"I'm {m.group('a').lower()} {m.group('who')}"
    doc = parse_en.parsed(lead)
    if doc is not None and len(doc) and doc[0].tag_ == "VBG" and not any(
            t.dep_ in ("nsubj", "nsubjpass", "expl") for t in doc):
        return f"I'm {lead[:1].lower()}{lead[1:]}"
    return lead


#: any comma or dash a question may follow without a question word ("... — enough base to start training?")
_ANY_CUT = re.compile(r"(?:,|\s[-\u2013\u2014])\s+")
#: a lead said by the user of themselves or theirs
_OWN = re.compile(r"^(?:I|I'm|I've|I'd|we|we're|we've|my|our)\b", re.I)
#: the most words an elliptical question has ("best brush?", "enough base to start half marathon training?")
MAX_ELLIPSIS_WORDS = 10


def _elliptical(s: str) -> tuple[str, str] | None:
    """(lead, question) of a statement of the user's own followed, after a comma or dash, by a question that leaves
    out its verb and subject ("our retriever sheds like crazy, best brush?", "I run 25 km a week — enough base to
    start training?"): the lead is a full clause (the parser's root a verb with its subject before it) that starts
    with the user or theirs, the question has no subject of its own. ``None`` otherwise."""
    cuts = list(_ANY_CUT.finditer(s))
    if not cuts:
        return None
    m = cuts[-1]
    lead, question = s[:m.start()].strip(" ,-\u2013\u2014"), s[m.end():].strip()
    if not _OWN.match(lead) or not question or len(question.split()) > MAX_ELLIPSIS_WORDS:
        return None
    doc, asked = parse_en.parsed(lead), parse_en.parsed(question)
    if doc is None or asked is None or any(t.dep_ in ("nsubj", "nsubjpass", "expl") for t in asked):
        return None
    root = next((t for t in doc if t.dep_ == "ROOT"), None)
    if root is None or root.pos_ not in ("VERB", "AUX") or not any(
            c.dep_ in ("nsubj", "nsubjpass") and c.i < root.i for c in root.children):
        return None
    return lead, question


def split(sentence: str) -> list[str]:
    """``[lead + ".", question]`` for a question led by a clause of its own (see the module docstring), else
    ``[sentence]``. The lead needs ``MIN_LEAD_WORDS`` words and must not be a question itself."""
    s = sentence.strip()
    if not s.endswith("?"):
        return [sentence]
    m = _CUT.search(s)
    if m is None:
        ell = _elliptical(s)
        return [ell[0].rstrip(".!") + ".", ell[1]] if ell is not None and "?" not in ell[0] else [sentence]
    lead, question = s[:m.start()].strip(" ,-\u2013\u2014"), s[m.end():].strip()
    if len(lead.split()) < MIN_LEAD_WORDS or "?" in lead or _QUESTION_START.match(lead) or not question:
        return [sentence]
    return [_first_person(lead).rstrip(".!") + ".", question]


def pieces(sentence: str) -> list[str]:
    """The sentences ``sentence`` holds for reading: cut where an emoji stands for a full stop
    (``text.pictographs_apart``), then each cut where a question's lead ends (``split``)."""
    return [p for piece in pictographs_apart(sentence) for p in split(piece)]
