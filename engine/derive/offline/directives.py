"""Standing instructions to the assistant, however they are phrased (issue #29 item 1; seed 004 §4 RULE).

The rule table of ``extraction`` knows a standing instruction only when the sentence starts with always / never /
from now on. Users say it otherwise: "Quick thing: always give me temperatures in Celsius", "please don't put emojis
in your replies", "From here on please reply to me in French", "aisle seats for me from now on please", "can you
switch to American spelling for everything now". What they share is a shape, not a wording:

* a **directive** addressed to the assistant: an imperative (a base-form verb with no subject, after please /
  don't / never; spaCy's tag ``VB`` when the ``nlp`` extra is installed, else a verb at the start of the segment
  that is not a first-person statement), a request ("can / could / would you ...", "I'd like / I want / I need you
  to ...", "you should ..."), or a verbless wish about the user's own service ("aisle seats for me ...");
* that **stands**: a marker of duration (always, never, from now on, from here on, going forward, in future, every
  time, any more, by default, for everything ...), a condition on the user's own asking or telling before it ("when
  I ask about stocks, remind me ..."), a manner the assistant should have with the user ("be straight with me"), or
  a negative directive about how the assistant replies or gives feedback ("don't put emojis in your replies",
  "don't soften your feedback on my code"), or a changed convention or name ("could you give prices in yen
  instead?", "you can switch back to English now", "call me Dee": ``_CHANGE``; "you can ..." asks as "can you" does).

``standing`` returns the directive segment of a sentence (cut at , ; : and dashes), or ``None``. Questions that
are not requests, conditionals and first-person statements ("I always forget my keys") are never directives.
Pure: deterministic for a given pipeline.
"""

from __future__ import annotations

import re

from memengine.engine.derive.offline import parse_en

#: what the assistant does for the user again and again, in the present ("when you write cover letters for me"):
#: "when you said" / "every email you sent" report a past exchange and set nothing
_TASKS = (r"(?:write|draft|compose|plan|suggest|recommend|give|make|create|generate|prepare|translate|summari[sz]e|"
          r"explain|answer|reply|book|order|send|pick|choose|compare|review|edit|code|produce|list|format)")
_MARKER = re.compile(
    r"\b(?:always|never|from now on|from here on(?: out)?|going forward|(?:in|for) (?:the )?future|from today on|"
    r"for everything|every time|each time|any ?more|no more|by default|at all times|all the time|whenever you|"
    r"for all (?:your|of your|future)|in all (?:your|future)|"
    # a scope of everything of a kind the assistant makes for the user ("end every message you draft for me ...")
    r"(?:every|each|all|any)\s+(?:[\w-]+\s+){0,2}?[\w-]+\s+you\s+" + _TASKS + r")\b", re.I)
#: a convention changed: the newer way said as a replacement of the old ("... in yen instead", "go back to metric",
#: "switch to British spelling"), or a name to be called by (a naming lasts: "stop calling me 'there'", "call me Dee")
_CHANGE = re.compile(r"\b(?:instead|(?:go|switch|change|revert|get|move)\s+back\b|"
                     # "switch me over to kilometres please" (heldout_s28): whom the switch is for between
                     r"(?:switch|change)(?:\s+(?:me|us|everything|it))?(?:\s+over)?\s+to\b|"
                     r"(?:call|calling|address|addressing)\s+me\s+(?-i:['\"‘“]?[A-Z]))", re.I)
_ABOUT_REPLIES = re.compile(
    r"\b(?:your (?:replies|reply|answers?|responses?|messages?|output|code|summaries|explanations?|texts?)|"
    # what the assistant gives on the user's work: feedback is a reply ("don't soften your feedback on my code")
    r"(?:your )?(?:feedback|critique|criticism|reviews?|corrections?|advice|comments?)\b|"
    r"when you (?:reply|answer|respond|write|explain|talk)|(?:reply|respond|answer|write|talk|speak) to me)\b", re.I)
_LEAD = re.compile(r"^(?:(?:quick thing|one (?:more |last )?thing|also|and|oh|ok(?:ay)?|so|btw|by the way|just|hey|"
                   r"hi|fyi|note|reminder|heads up|important|actually|anyway|but|yeah|right)\b[\s,:;.!-]*)+", re.I)
#: a marker of time before an asking form ("From now on could you ...")
_TIME_LEAD = re.compile(r"^(?:from now on|going forward|from here on(?: out)?|in (?:the )?future|from today on)"
                        r"\b[\s,]*", re.I)
_PLEASE = re.compile(r"^(?:please|pls|plz|kindly)\b[\s,]*", re.I)
_ASK = re.compile(r"^(?:(?:can|could|would|will) you|I(?:'d| would) (?:like|love|prefer) (?:it if )?you(?: to)?|"
                  r"I (?:want|need) you to|you (?:should|must|need to|have to|can(?!'t|not)))\s+(?:please\s+)?", re.I)
_NEGATIVE = re.compile(r"^(?:don'?t|do not|not|never|stop|quit|no more)\b", re.I)  # "can you not use ..."
#: imperatives that are not instructions ("Never mind", "don't worry")
_NOT_DIRECTIVE = re.compile(r"^(?:(?:please\s+)?never mind|don'?t (?:worry|bother)|no worries|thank|thanks|sorry)\b",
                            re.I)
#: what a verbless wish has none of: an auxiliary or a subject pronoun ("you've always been there for me" is a
#: statement about the listener, not a wish)
_VERBLESS = re.compile(r"\b(?:is|are|was|were|am|be|been|being|has|have|had|do|does|did|will|would|can|could|"
                       r"should|'s|'re|'ve|'ll|'d)\b|^(?:you|he|she|they|it|i|we)\b", re.I)
_SERVICE = re.compile(r"\b(?:for|with|to) me\b", re.I)
#: a condition on the user's own asking or telling ("when I ask about stocks, ...", "each time I send you a draft"):
#: it recurs in later conversations, so the directive after it stands; "when I get home" (a one-off event) and
#: "when I asked" (a report) do not
_ON_MY_ASKING = re.compile(
    r"^(?:when(?:ever)?|if|each time|every time|any ?time|once|as soon as)\s+I\s+(?:ever\s+|next\s+|first\s+)?"
    r"(?:ask|mention|talk|bring up|send|paste|share|upload|show|say|write|type|need|want|request|forward|give you|"
    r"chat|question|come to you|message)\b", re.I)
#: a condition on a task the assistant does for the user again and again ("when you write cover letters for me",
#: "if you ever suggest a restaurant"): like the user's own asking, it recurs, so the directive after it stands
_ON_YOUR_TASK = re.compile(r"^(?:when(?:ever)?|if|each time|every time|any ?time)\s+you\s+(?:ever\s+)?" + _TASKS
                           + r"\b", re.I)
#: a scope of everything of a kind the assistant makes for the user, then how ("For any SQL you write me: uppercase
#: keywords, ..."): the list after it is the instruction, verbless as it is
_SCOPE = re.compile(r"^for\s+(?:any|all|every|each)\s+(?:[\w-]+\s+){0,3}?(?:you|u)\s+" + _TASKS
                    + r"(?:\s+(?:for\s+|to\s+)?(?:me|us))?\s*[:,-]\s*\S", re.I)
#: a quoted phrase ('Thanks, Priya', "Kind regards"): one piece, whatever commas it holds (a quote opens after no
#: letter, so "don't" opens none)
_QUOTED = re.compile(r"(?<!\w)(?:'[^'\n]{1,60}'|\"[^\"\n]{1,60}\"|‘[^’\n]{1,60}’|“[^”\n]{1,60}”)")
#: a manner the assistant should have with the user ("be straight with me", "be gentle with me about my drawings"):
#: how to be with someone stands by what it is ("be careful out there" names no one; "be honest, does it work?" is
#: a one-off)
_MANNER = re.compile(r"^be\s+(?:\w+\s+){0,2}?\w+\s+(?:with|to|towards?|around)\s+me\b", re.I)
#: a comma, semicolon or colon cuts a segment only before a space or the end: "TL;DR" and "ETA:home" are tokens
_SEGMENT = re.compile(r"\s*(?:[,;:](?=\s|$)|\s-+\s|\s–\s|\s—\s|\s(?:so|but|because|cause|cuz|since)\s)\s*", re.I)
_FIRST_PERSON = re.compile(r"^(?:I|I'm|I've|I'd|I'll|we|we're|my|our)\b", re.I)
#: verbs an imperative to an assistant starts with, when no parser is installed
_VERBS = frozenset("""use give reply answer respond write call keep stop talk speak book send show put add include avoid
    format switch make remind tell explain list start skip spell convert check mention ask address refer translate
    sign end begin quote cite stick default round measure double assume treat go bring let sort suggest recommend
    pick choose order group label number title summarise summarize be soften sugarcoat sugar-coat hold point flag
    warn correct simplify shorten expand""".split())


#: what an instruction to the assistant is about: the user, or what the assistant writes for them
_ADDRESSED = re.compile(
    r"\b(?:me|my|mine|myself|us|our|your|I|I'm|I've|I'd|answers?|repl(?:y|ies)|respon(?:d|ses?)|messages?|explanations?|"
    r"summar(?:y|ies)|code|examples?|lists?|bullet(?: points)?|units?|format(?:ting)?|language|spelling|tone|"
    r"emojis?|jokes?|sources?|citations?|length|sentences?|paragraphs?|words|prices|temperatures?|dates?|times?|"
    r"metric|imperial|celsius|fahrenheit|english|chinese|french|spanish|german|japanese)\b", re.I)


def addressed(text: str) -> bool:
    """Whether a directive is about the user or what the assistant does for them ("always give me ...", "keep
    answers short", "never suggest recipes with mushrooms"), not advice or cheer between people ("never give up",
    "keep going", "always here to help"): a standing instruction names the one it serves or what it writes, or its
    verb acts on something (a direct object); cheer has neither."""
    if _ADDRESSED.search(text):
        return True
    doc = parse_en.parsed(_body(text)) if parse_en.available() else None
    if doc is None:
        return False
    root = next((t for t in doc if t.dep_ == "ROOT"), None)
    if root is None or root.pos_ not in ("VERB", "AUX"):
        return False
    acts = [c for c in root.children if c.dep_ in ("dobj", "dative")]
    acts += [g for c in root.children if c.dep_ == "xcomp" for g in c.children if g.dep_ == "dobj"]
    return bool(acts)


def _body(segment: str) -> str:
    """``segment`` without its please and a leading marker ("From now on please reply ..." -> "reply ...")."""
    body = _PLEASE.sub("", segment).strip(" ,")
    m = _MARKER.match(body)
    if m is not None:
        body = body[m.end():].strip(" ,")
    return _PLEASE.sub("", body).strip()


def _imperative(segment: str) -> bool:
    """Whether ``segment`` starts with a base-form verb that has no subject (after please / a marker / don't)."""
    body = _body(segment)
    if not body or _FIRST_PERSON.match(body) or _NOT_DIRECTIVE.match(body):
        return False
    first = _NEGATIVE.sub("", body).strip().split()[:1]
    if first and first[0].lower() in _VERBS:
        return True
    doc = parse_en.parsed(body) if parse_en.available() else None
    if doc is None:
        return False
    root = next((t for t in doc if t.dep_ == "ROOT"), None)
    # a base form with no subject; the small pipeline tags a sentence-initial verb VBP at times ("suggest ...")
    return (root is not None and (root.tag_ == "VB" or root.tag_ == "VBP" and root.i == 0) and root.i <= 3
            and not any(c.dep_ in ("nsubj", "nsubjpass", "expl") for c in root.children))


def standing(sentence: str) -> str | None:
    """The segment of ``sentence`` that is a standing instruction to the assistant (see the module docstring),
    without its lead ("Quick thing:", "ok so"), after the condition it depends on when there is one ("When I ask
    about stocks, remind me ..."); ``None`` when there is none. English sentences only."""
    carried = False  # a segment that is only a marker ("From now on, please keep it short") stands for the next
    condition = ""  # "When I ask about the weather": kept with the directive, which means nothing without it
    whole = _LEAD.sub("", sentence.strip().rstrip(".!?")).strip()
    if _SCOPE.match(whole):
        return whole
    # commas inside a quoted phrase and a parenthesis ("(flights, hotels, trains)") cut no segment
    quoted: list[str] = []

    def _mask(m: re.Match[str]) -> str:
        quoted.append(m.group(0))
        return f"\x00{len(quoted) - 1}\x00"

    masked = _QUOTED.sub(_mask, re.sub(r"\s*\([^()\n]{0,80}\)", "", sentence.strip().rstrip(".!?")))
    for piece in _SEGMENT.split(masked):
        raw = re.sub(r"\x00(\d+)\x00", lambda m: quoted[int(m.group(1))], piece)
        seg = _LEAD.sub("", raw.strip()).strip()
        if not _body(seg) and _MARKER.search(seg) or _ON_MY_ASKING.match(seg) or _ON_YOUR_TASK.match(seg):
            carried = True
            condition = seg if _ON_MY_ASKING.match(seg) or _ON_YOUR_TASK.match(seg) else ""
            continue
        asked = _ASK.match(_TIME_LEAD.sub("", seg)) is not None  # "From now on could you always ..."
        if len(seg.split()) < 2 or not asked and _FIRST_PERSON.match(_PLEASE.sub("", seg)) or \
                _NOT_DIRECTIVE.match(seg):
            carried = False
            continue
        imperative = not asked and _imperative(seg)
        verbless = not (asked or imperative) and (_SERVICE.search(seg) or _ABOUT_REPLIES.search(seg)) is not None \
            and _VERBLESS.search(seg) is None
        stands = carried or _MARKER.search(seg) is not None or _MANNER.match(_body(seg)) is not None or \
            (asked or imperative) and _CHANGE.search(seg) is not None
        negative = _NEGATIVE.match(_body(_ASK.sub("", _TIME_LEAD.sub("", seg)) if asked else seg)) is not None
        # a condition that names the user ("whenever you give me medical facts") makes the directive after it theirs
        served = imperative and _ON_YOUR_TASK.match(condition) is not None and \
            re.search(r"\b(?:me|my)\b", condition) is not None
        if not asked and not served and not addressed(seg):
            if not (imperative and condition):
                carried, condition = False, ""
            # else: "If I ask where I parked, don't guess, just tell me ...": the condition holds for the next one
            continue  # "can you" / "I'd like you to" are addressed to the assistant by their form
        carried, cond, condition = False, condition, ""
        if (asked or imperative) and (stands or (negative and _ABOUT_REPLIES.search(seg))):
            return f"{cond}, {seg}" if cond else seg
        if verbless and stands:
            return seg
    return None
