"""Where the rule tables end: Chinese sentences and English clauses read by structure (issue #29 item 1).

``extraction.extract_memories`` hands each sentence here after its rule tables ran:

* a Chinese (or mixed) sentence goes to ``zh.zh_statements`` (jieba and clause handling), each statement one
  candidate in the user's own words;
* an English sentence is parsed (``parse_en``, spaCy, when installed): clauses the rules drew nothing from become
  candidates in the user's own words, third person; a sentence that ends something ("I quit Deloitte and started at
  KPMG", "I don't work at Crumbs anymore, I got a job at the Ritz kitchen") beside a new value is kept whole,
  quoted with its date, so the new value is never split from what retired the old one; what it ended goes into
  ``data["ends"]``, which the merge (``merge.decide_merge``) uses to close the user's items that hold it;
* a sentence that only ends something ("Left Google in May.") gives its ends to the turn's other candidates when
  it has any, and is a candidate of its own otherwise;
* a lasting statement of the user's that nothing above typed, or whose name or doing the readings lost, is kept in
  the user's words (``verbatim``, ``verbatim_en``), as is a sentence that ends something beside a new value no
  clause keeps ("sold the Golf, the Model 3 is so much quieter").

``data["slots"]`` is informative (the merge reads slots from text, so stored items and candidates are compared
alike). Without spaCy, English sentences get the rules' candidates only, as before. Pure.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from memengine.engine.derive.offline import (
    fold,
    idioms_en,
    life_events_en,
    parse_en,
    possessions_en,
    questions_en,
    revision,
    safety,
    slot_reader,
    statement_reader,
    statements_en,
    types_en,
    verbatim_en,
    zh_ends,
    zh_possessions,
    zh_questions,
    zh_told,
)
from memengine.engine.derive.offline.hanzi import simplified
from memengine.engine.derive.offline.lexicon_en import FEELINGS
from memengine.engine.derive.offline.merge import dedupe_hash
from memengine.engine.derive.offline.structures import Candidate, Turn
from memengine.engine.derive.offline.text import CJK, clean_text, content_words, sentences, split_words, stem
from memengine.engine.derive.offline.zh import zh_statements
from memengine.engine.derive.offline.zh_people import OUTSIDER, OUTSIDER_NAMED
from memengine.engine.derive.policy import ERROR_DURATION, PRIORITY_DURATION, QUARANTINE_CONFIDENCE

#: lasting kinds of statement (who the user is, what they like, their rules) vs what may change sooner
_PRIORITY = {"PROFILE": "PERMANENT", "RULE": "PERMANENT", "PREFERENCE": "PERMANENT", "SKILL": "LONG_TERM",
             "FACT": "LONG_TERM"}
#: plain self-statements here carry the confidence of ``selfstatements`` (at the seed 003 threshold's safe side)
CONFIDENCE = 0.85
_NAME = re.compile(r"(?:\b(?:my name(?:'s| is)|call me|I'm called|I am called|I'm known as|"
                   # "I go by", "I've started going by", "I'm going by ... now"; "everyone / my friends call(s) me"
                   r"I(?:'ve| have|'m| am)?(?: \w+ly)? (?:(?:started|begun|been|now) )?(?:go|going|gone) by|"
                   r"(?:people|everyone|everybody|friends|my friends|most people|they|folks) (?:all )?calls? me)|"
                   r"^(?:(?:hi|hey|hello|well|so|ok|okay|oh)\W+)*(?:the )?name(?:'s| is))\s+"
                   r"(?P<v>(?-i:[A-Z][\w'-]+)(?: (?-i:[A-Z][\w'-]+))?)", re.I)


def _duration(memory_type: str, priority: str) -> str:
    return ERROR_DURATION if memory_type == "ERROR" else PRIORITY_DURATION.get(priority, "permanent")


def _candidate(text: str, memory_type: str, turn: Turn, sentence: str, rule: str, *, hedged: bool = False,
               slots: dict[str, str] | None = None, ends: list[str] | None = None, lang: str = "en") -> Candidate:
    if not text.endswith((".", "!", "?", "。", "！", "？", "”", '"')):
        text += "."
    h = dedupe_hash(turn.user_id, text)
    priority = _PRIORITY.get(memory_type, "LONG_TERM")
    data: dict[str, Any] = {"subject": "用户" if lang == "zh" else "User", "predicate": ",".join(slots or {}) or rule,
                            "object": "", "polarity": "positive", "functional": bool(slots), "hedged": hedged,
                            "quarantined": False, "duration": _duration(memory_type, priority), "rule": rule,
                            "sentence": sentence, "dedupe_hash": h, "lang": lang,
                            "said_on": turn.occurred_at.date().isoformat()}
    if slots:
        data["slots"] = dict(slots)
    if ends:
        data["ends"] = list(ends)
    return Candidate(memory_type=memory_type, text=text, importance=0.7,
                     confidence=round(CONFIDENCE * (0.6 if hedged else 1.0), 2), tags=[rule.split(":")[-1]],
                     priority=priority, user_id=turn.user_id, source_event_ids=[turn.event_id], data=data)


#: the candidate of a reading of ``turn``'s ``sentence`` (for the readers outside this module: ``presupposed_en``)
candidate = _candidate


def zh_candidates(sentence: str, turn: Turn) -> list[Candidate]:
    """Candidates of a Chinese or mixed sentence (``zh.zh_statements``); ``data["said_on"]`` is the turn's date
    (ISO), which an unsure supersede writes beside the words (``zh_revision.combined``). A leading 他 / 她 is read
    against what the user said before it: the previous turn (``turn.before``) and the turn's earlier sentences."""
    out = []
    text = clean_text(turn.text)  # (the sentence was cut from the cleaned text)
    at = text.find(sentence)
    for z in zh_statements(sentence, before=turn.before + "。" + (text[:at] if at > 0 else "")):
        if z.rule == "statement" and z.memory_type == "FACT" and not z.ends and zh_told.passing(sentence):
            continue
        c = _candidate(z.text, z.memory_type, turn, z.sentence, f"zh:{z.rule}", slots=z.slots, ends=z.ends, lang="zh")
        out.append(msgspec.structs.replace(c, data={**c.data, "said_on": turn.occurred_at.date().isoformat()}))
    # a thing of the user's named on the way to a question ("家里金毛会不会欺负它"): theirs, unless a statement holds it
    for had in zh_possessions.owned(sentence):
        thing = had.removesuffix("。").split("有", 1)[1]
        if not any(thing in c.text for c in out):
            c = _candidate(had, "FACT", turn, sentence, "zh:possession", lang="zh")
            out.append(msgspec.structs.replace(c, data={**c.data, "said_on": turn.occurred_at.date().isoformat()}))
    return out


def _with(c: Candidate, ends: list[str]) -> Candidate:
    data = dict(c.data)
    data["ends"] = sorted({*data.get("ends", []), *ends})
    return msgspec.structs.replace(c, data=data)


def _words(text: str, subject: str) -> set[str]:
    return set(content_words(text)) - {"user", stem(subject.lower())}


def _reads(a: set[str], b: set[str]) -> bool:
    """Whether word set ``b`` covers at least half of ``a`` (two readings of one clause)."""
    return bool(a) and len(a & b) >= max(1, (len(a) + 1) // 2)


#: The longest sentence handed to the parser (characters). What people say about themselves fits in a few dozen words;
#: spaCy's cost is linear in the text (~45 ms per 1,000 characters here), so one unpunctuated 256K-character turn (a
#: pasted log, a valid event) held the enricher 12-16 s and every later turn behind it. Longer sentences keep the
#: rule tables' reading alone.
PARSE_MAX_CHARS = 1_000


#: a subject shared with someone: "My partner Sven and I ...", "Ana and I ...", "Me and my sister ..." (the rule
#: tables cut the sentence at "and I" and the parser reads the first part as an adverb: the companion was lost)
#: a word of that noun phrase is never a verb or a conjunction: "My name is Ana and I work at Siemens" has no
#: companion (the phrase would have been "their name is Ana", and the statement garbled)
_NOT_NP = r"(?!(?:is|am|are|was|were|be|been|being|has|have|had|do|does|did|will|would|can|could|should|shall|may|" \
          r"might|must|got|gets|get|and|or|but|so|because|then|'s|'re|'ve)\b)"
_NP = rf"(?:(?:[Mm]y|[Oo]ur) (?:{_NOT_NP}[\w-]+ ){{0,2}}?{_NOT_NP}[\w-]+(?: (?-i:[A-Z][\w-]+))?|(?-i:[A-Z][a-z]+))"
_CO_SUBJECT = re.compile(rf"^(?:(?i:well|so|anyway|btw|also|and|oh)[,!]? +)*(?:(?P<a>{_NP}) and I\b|[Mm]e and "
                         rf"(?P<b>{_NP}) (?!and\b))")
_PLURAL = {"is": "are", "has": "have", "was": "were", "does": "do", "goes": "go"}


def co_subject(sentence: str) -> str | None:
    """Who shares the subject of ``sentence`` with the user ("their partner Sven" of "My partner Sven and I
    adopted a greyhound"); ``None`` when the user is its only subject."""
    m = _CO_SUBJECT.match(sentence.strip())
    if m is None:
        return None
    who = m.group("a") or m.group("b")
    if who.split()[0].lower() in ("i", "me", "we", "you", "it", "they", "he", "she", "user"):
        return None
    doc = parse_en.parsed(sentence.strip())
    if doc is not None:
        # the phrase is a noun phrase, not a clause: "My sister moved and I stayed" has no companion (the pattern
        # alone would take "my sister moved" as one)
        words = who.split()[1:] if who.split()[0].lower() in ("my", "our") else who.split()
        pos = {t.text: t.pos_ for t in doc}
        if any(pos.get(w) in ("VERB", "AUX", "ADP", "CCONJ", "SCONJ", "PART") for w in words):
            return None
    return re.sub(r"^(?:[Mm]y|[Oo]ur)\b", "their", who)


def _plural_verb(word: str) -> str:
    low = word.lower()
    if low in _PLURAL:
        return _PLURAL[low]
    if re.search(r"(?:sh|ch|x|ss|z|o)es$", low):
        return word[:-2]
    if low.endswith("ies") and len(low) > 4:
        return word[:-3] + "y"
    if low.endswith("s") and not low.endswith(("ss", "us")):
        return word[:-1]
    return word


def _joint(c: Candidate, subject: str, companion: str) -> Candidate:
    """``c`` said of the user and ``companion`` together ("User and their partner Sven adopted ...")."""
    text = c.text
    if not text.startswith(subject + " ") or companion.split()[-1].lower() in text.lower():
        return c
    rest = text[len(subject) + 1:].split(" ", 1)
    verb = _plural_verb(rest[0])
    text = f"{subject} and {companion} {verb}" + (f" {rest[1]}" if len(rest) > 1 else "")
    return msgspec.structs.replace(c, text=text, data={**c.data, "dedupe_hash": dedupe_hash(c.user_id, text)})


#: the fewest content words an unsure statement needs (what says less says nothing to keep)
_UNSURE_MIN_WORDS = 3


def unsure(sentence: str, turn: Turn, subject: str) -> Candidate | None:
    """A sentence of the user's no rule or clause reading typed, kept in their words as an unsure FACT
    (``data["unsure"]``) when it says how things are now for them (issue #29 item 2: "fall back to keeping the
    user's clause verbatim with the date ... rather than dropping it"): a word of the speaker's (``fold.users``), the
    aspect of a current state (``revision``'s cue: "now", "these days", "from now on", "instead"), nothing additive,
    no mood (``lexicon_en.FEELINGS``), at least ``_UNSURE_MIN_WORDS`` content words. The merge keeps it only as the
    newer words of an item on its topic (``fold``); the enricher drops it otherwise, unless the gate held it.
    ``None`` without the parser or for anything else."""
    if len(sentence) > PARSE_MAX_CHARS or not parse_en.available() or not (
            fold.FIRST_PERSON.search(sentence) or revision.set_for_user(sentence)):
        return None
    words = content_words(sentence)
    if len(words) < _UNSURE_MIN_WORDS or any(w in FEELINGS for w in split_words(sentence.lower())):
        return None
    r = revision.read(sentence)
    if r is None or not r.cue or r.additive or not fold.users(r, sentence):
        return None
    c = _candidate(statements_en.quoted(sentence, subject), "FACT", turn, sentence, "parse:unsure")
    return msgspec.structs.replace(c, data={**c.data, "unsure": True, "subject": subject})


def verbatim(sentence: str, turn: Turn, subject: str, *, lost: bool = False) -> Candidate | None:
    """A sentence of the user's no rule or clause reading typed that states something lasting of theirs
    (``verbatim_en.lasting``: a dropped subject, a fragment, "it's X now"), kept in their words with the turn's
    date as a FACT, or a PREFERENCE when it says what they like (issue #29 item 1). Unlike ``unsure`` it is kept on
    its own (``data["verbatim"]``); it still folds into an item on its topic. ``None`` otherwise or without the
    parser."""
    if len(sentence) > PARSE_MAX_CHARS or not parse_en.available() or _OUTSIDER_EN.match(sentence) or \
            not verbatim_en.lasting(sentence, turn.text, lost=lost):
        return None  # (a sentence led by a friend or colleague is theirs: "my buddy Derek sent me this meme")
    said = verbatim_en.words(sentence, turn.text)
    memory_type = "PREFERENCE" if verbatim_en.liking(sentence) or idioms_en.averse(said) else "FACT"
    c = _candidate(statements_en.quoted(said, subject), memory_type, turn, sentence, "parse:verbatim")
    return msgspec.structs.replace(c, data={**c.data, "unsure": True, "verbatim": True, "subject": subject,
                                            "said_on": turn.occurred_at.date().isoformat()})


#: an ending told by an ending verb or phrase, which the parser's ``ends`` may miss ("let me go", "made redundant",
#: "no more X", "laid off")
_ENDING_EN = re.compile(r"\b(?:no more|no longer|any ?more|quit|quitting|left|leaving|let (?:me|us|him|her) go|"
                        r"laid (?:me |us )?off|got (?:fired|sacked)|made redundant|sold|gave up|giving up|stopped|"
                        r"broke up|split up|divorced|moved out|retired|ditched|dropped out|cancell?ed|passed away|"
                        r"died)\b", re.I)


#: where an English sentence of chat parts into clauses: a comma, dash or semicolon, or a joining word that starts
#: another thought ("it's a 2012 Civic with 180k on it so honestly could be anything", "type 1 diabetes here, dx'd
#: at 9, glucose tabs are so chalky", "IT at Boeing locks down the export options tho so we'll see")
_CLAUSE_CUT = re.compile(r"\s*(?:[,;]|\s[-–—]|[-–—]\s)\s*|\s+(?:but|tho|though|because|cause|cuz|and then|which means|"
                         r"lol|haha|and(?= (?:never|not|no|haven't|hasn't|didn't|don't|can't)\b))\s+|"
                         # "so" that starts a thought, not one that says how much ("tabs are so chalky")
                         r"(?<!\bis)(?<!\bare)(?<!\bwas)(?<!\bwere)(?<!'s)(?<!'re)(?<!\bnot)(?<!\bbe)\s+so\s+", re.I)
#: the words a part of chat may open with, which say nothing of it ("right well it rains 300 days a year here":
#: "well" is also a feeling, and a feeling is of the moment)
_OPENERS = re.compile(r"^(?:(?:ok|okay|oh|yeah|yep|yes|well|right|so|anyway|also|um+|uh+|hmm+|btw|and|plus)\b"
                      r"[\s,.!]*)+",
                      re.I)
#: the fewest words a clause part needs to be read on its own ("type 1 diabetes here")
_PART_MIN_WORDS = 3


def learned(sentence: str, turn: Turn, subject: str, *, lang: str = "en") -> Candidate | None:
    """``_learned`` of ``sentence``; failing that, of an English sentence's clause parts (``_CLAUSE_CUT``), the first
    part kept in its own words: a lasting fact is often said beside a remark of the moment ("7 hrs to grandma's with
    3 kids under 8 so I need like a lot of snacks"), which the sentence-wide checks refuse as a whole."""
    whole = _learned(sentence, turn, subject, lang=lang)
    if whole is not None or len(turn.text) > statement_reader.TURN_MAX_CHARS:
        return whole
    parts = [p for p in (_OPENERS.sub("", p.strip()) for p in _CLAUSE_CUT.split(sentence) if p)
             if len(p.split()) >= _PART_MIN_WORDS] if lang == "en" else [zh_told.told(sentence)]
    part = None if parts == [sentence] else next(
        (c for p in parts if (c := _learned(p, turn, subject, lang=lang)) is not None), None)
    if part is not None and lang == "zh":
        # the frames read the whole sentence: a clause left out may hold one ("刚刷完《繁花》，宝总那种……派头太绝了")
        part = msgspec.structs.replace(part, data={**part.data, "sentence": sentence})
    if part is not None or questions_en.ASKED.search(sentence) or zh_questions.asking(simplified(sentence)) or \
            _ASKED_ZH.search(simplified(sentence)):
        return part
    # read less surely: kept only as the newer words of an older item of its attribute (``same_slot``), dropped
    # otherwise ("They gave me the senior title at my review today" after "as a junior dev ...")
    beside = _learned(sentence, turn, subject, lang=lang, threshold=statement_reader.BESIDE)
    if beside is None or slot_reader.single(sentence) is None:
        return None
    read = statement_reader.reading(simplified(sentence) if lang == "zh" else sentence)
    if read is not None and read[0] >= ALONE_READ and slot_reader.single(sentence, at=ALONE_SLOT) is not None:
        return beside  # "Occupational hazard of being a paramedic" (0.65, work 0.98): kept on its own
    return msgspec.structs.replace(
        beside, data={k: v for k, v in beside.data.items() if k != "verbatim"} | {"beside": True})


#: a sentence led by one of the user's people from outside the household ("my friend Sam is allergic to shellfish,
#: what can I cook", heldout_s28): theirs, not the user's; the people of ``parse_en.OUTSIDERS``, as
#: ``zh_people.OUTSIDER``
_OUTSIDER_EN = re.compile(r"^\W*(?:(?:so|well|btw|also|ok|okay|and)\W+)*my\s+(?:best\s+|old\s+|new\s+)?"
                          rf"(?:{'|'.join(map(re.escape, sorted(parse_en.OUTSIDERS)))})s?\b", re.I)
#: a sentence read under ``statement_reader.THRESHOLD`` is kept on its own, not only beside an older value, when the
#: reader reads it at ``ALONE_READ`` or more and the slot reader one single-valued attribute at ``ALONE_SLOT``
ALONE_READ = 0.6
ALONE_SLOT = 0.9


#: a Chinese question or wish the question readings leave ("饭前吃还是饭后吃", Cantonese "有咩好嘢食", "配方给一个",
#: "想做个杨枝甘露"): no news of a change to keep beside an older value (``learned``)
_ASKED_ZH = re.compile(r"还是|咩|乜嘢|点样|给(?:我)?(?:一个|个)|推荐|想(?:做|买|找|学|要|去|试)")


def _learned(sentence: str, turn: Turn, subject: str, *, lang: str = "en",
             threshold: float = statement_reader.THRESHOLD) -> Candidate | None:
    """A sentence of the user's that no rule or clause reading kept, kept in their words with the turn's date when
    the learned reader reads it as a lasting self-statement (``statement_reader.lasting``, its type too; issue #29
    item 1). ``lang`` ``zh`` quotes it the Chinese way (``用户说：“...”``). Like ``verbatim`` it is unsure and kept
    on its own; ``None`` for a turn over ``statement_reader.TURN_MAX_CHARS`` (pasted content), a sentence the parser
    reads as negated (unless a dislike), an English one of the moment (``verbatim_en.of_the_moment``: a plan, a
    mood, a wish), one that names nothing (``verbatim_en.anchored``), an ending (``_ENDING_EN``, ``parse_en.ends``,
    ``zh_ends.ENDS``), a Chinese plan, mood or moment (``zh_told.MOMENT``), hearsay or pinyin, a turn the gate reads
    as an instruction, or no reading."""
    if len(turn.text) > statement_reader.TURN_MAX_CHARS or len(sentence) > statement_reader.MAX_CHARS:
        return None  # first: the readings below parse the sentence, and a pasted 256K-character turn is one sentence
    # kept only beside an older value (``learned``): a change is often told as the day's news ("Divorce was
    # finalized yesterday"), which a statement on its own must not be
    beside = threshold < statement_reader.THRESHOLD
    if lang == "en" and (verbatim_en.of_the_moment(sentence, news=beside) or not verbatim_en.anchored(sentence)):
        return None
    if _ENDING_EN.search(sentence) or lang == "en" and parse_en.ends(sentence) or \
            lang == "zh" and any(p.search(simplified(sentence)) for p in zh_ends.ENDS):
        # the reader keeps states, never endings: "Shell let me go in March" names the old value, and the change
        # is the rules' (or the unsure fold's) to make from the turn's new statement
        return None
    negated = lang == "en" and any(c.negated for c in parse_en.clauses(sentence))
    if lang == "zh" and len(CJK.findall(sentence)) < 0.2 * sum(ch.isalpha() for ch in sentence):
        return None  # Latin words with a Chinese character or two (pinyin, code): not what the reader learned
    read = simplified(sentence) if lang == "zh" else sentence  # 繁體 read as its simplified twin, as ``zh`` does
    if lang == "zh" and zh_told.MOMENT.search(read):
        return None
    if lang == "zh" and (zh_questions.HEARSAY.match(read.strip()) or OUTSIDER.match(read.strip()) or re.match(
            "[他她]", read.strip()) and OUTSIDER_NAMED.search(simplified(turn.before))) or \
            lang == "en" and _OUTSIDER_EN.match(sentence):
        return None  # what was heard ("听说吃素对身体好，是真的吗"), a colleague's ("他在华为做硬件"): not the user's
    if len(turn.text) > statement_reader.TURN_MAX_CHARS or (
            memory_type := statement_reader.lasting(read, negated=negated, threshold=threshold)) is None:
        return None
    text = statements_en.quoted(sentence, subject) if lang == "en" else f"用户说：“{sentence.strip()}”"
    if safety.screen(text, memory_type="RULE") or safety.screen(turn.text, memory_type="RULE"):
        # a guess is screened as strictly as an instruction, its whole turn with it (a pasted letter's "enter your
        # PIN at ..." beside its heading), and dropped, never quarantined: the rules' reading of the turn stands
        return None
    c = _candidate(text, memory_type, turn, sentence, "learned:statement", lang=lang)
    return msgspec.structs.replace(c, data={**c.data, "unsure": True, "verbatim": True, "subject": subject,
                                            "said_on": turn.occurred_at.date().isoformat()})


def before(sentence: str, turn_text: str) -> str:
    """The words of ``turn_text`` before ``sentence`` (cleaned alike; ``""`` when it is not found there)."""
    text = clean_text(turn_text)
    at = text.find(sentence[:40].rstrip(".!?"))
    return text[:at] if at > 0 else ""


def english(sentence: str, ruled: list[Candidate], turn: Turn, subject: str, *, hedged: bool,
            question: bool) -> tuple[list[Candidate], list[str]]:
    """``_english``, with a subject the user shares with someone named in each of its statements (``co_subject``:
    "My partner Sven and I adopted a greyhound" -> "User and their partner Sven adopted a greyhound")."""
    cands, ends = _english(sentence, ruled, turn, subject, hedged=hedged, question=question)
    if not cands and not ends and not hedged and len(sentence) <= PARSE_MAX_CHARS and parse_en.available():
        # what the user has, told while asking or telling about it ("best chain lube for my Ducati Monster?", "my
        # greyhound Biscuit won't stop shaking whenever there's thunder")
        cands = [_candidate(t, "FACT", turn, sentence, "parse:owned") for t in possessions_en.owned(sentence, subject)]
    if not hedged and len(sentence) <= PARSE_MAX_CHARS and parse_en.available() and (
            said := possessions_en.mine(sentence, before(sentence, turn.text), subject)):
        # "What tire pressure should a 2014 Subaru Outback run? Mine's been pulling left": the user has one
        cands = [*cands, *(_candidate(t, "FACT", turn, sentence, "parse:owned") for t in said)]
    if not cands and not ends and not question and not hedged:
        if (v := verbatim(sentence, turn, subject)) is not None:
            return [v], []
        if (u := unsure(sentence, turn, subject)) is not None:
            return [u], []
    if cands and not question and not hedged and len(sentence) <= PARSE_MAX_CHARS and all(
            c.memory_type in ("FACT", "PROFILE", "PREFERENCE", "SKILL") for c in cands) and verbatim_en.uncovered(
            sentence, [c.text for c in cands]) and (
            v := verbatim(sentence, turn, subject, lost=verbatim_en.lost_doing(sentence, [c.text for c in cands]))
    ) is not None:
        # a name said in a part of the sentence no reading kept ("working nights at the Royal Infirmary, so
        # mornings are my evenings"): the sentence as said beside what was read
        cands = [*cands, v]
    companion = co_subject(sentence) if cands else None
    return ([_joint(c, subject, companion) for c in cands] if companion else cands), ends


def _english(sentence: str, ruled: list[Candidate], turn: Turn, subject: str, *, hedged: bool,
             question: bool) -> tuple[list[Candidate], list[str]]:
    """The candidates of one English sentence and what it ended for the turn's others: ``(candidates, ends)``.

    ``ruled``: what the rule tables drew from it. Kept, except a reading under the promotion threshold that the
    parser reads in full as a plain statement (the parser's candidate replaces it). Added: the parser's clauses the
    rules did not read. A sentence that ends something beside a new value ("I sold my old car, I drive a Golf
    now") keeps the new value's candidates only, each with ``data["ends"]``: "User sold their old car" would say
    nothing the supersede does not. A sentence that only ends something hands its ends to the turn."""
    if question or len(sentence) > PARSE_MAX_CHARS or not parse_en.available():
        return ruled, []
    clauses = parse_en.clauses(sentence)
    ends = statements_en.not_forbidden(sentence, parse_en.ends(sentence))
    found = statements_en.statements(sentence, subject)
    whole = [f for f in found if f[0] == statements_en.quoted(sentence, subject)]
    if whole and ends:  # the sentence kept whole says everything its clauses would (``statements_en.statements``)
        text, memory_type, c = whole[0]
        return [_candidate(text, memory_type, turn, sentence, "parse:sentence", hedged=hedged, ends=ends)], []
    positive = [(t, ty, c) for t, ty, c in found if not c.ends and not c.negated]
    if ends and not positive and not any(c.memory_type in ("RULE", "TASK") for c in ruled) and \
            verbatim_en.new_name(sentence, clauses, ends):
        # the new value in a clause no reading keeps ("sold the Golf, the Model 3 is so much quieter"): the
        # sentence as said, with what it ended, so the new value stands beside the old
        return [_candidate(statements_en.quoted(sentence, subject), "FACT", turn, sentence, "parse:sentence",
                           hedged=hedged, ends=ends)], []
    parsed = [_words(t, subject) for t, _, _ in found]
    sure = [c for c in ruled if c.confidence >= QUARANTINE_CONFIDENCE or c.data.get("hedged")
            or c.memory_type not in ("PROFILE", "FACT", "PREFERENCE", "SKILL", "PATTERN")]
    sure += [c for c in ruled if c not in sure and not any(_reads(p, _words(c.text, subject)) for p in parsed)]
    out = list(sure)
    covered = [_words(c.text, subject) for c in sure]
    name = _NAME.search(sentence)
    if name and re.search(r"\b(?:don't|do not|never|not|stop)\s+(?:\w+\s+)?$", sentence[:name.start()], re.I):
        name = None  # "Don't call me Robert": the name refused
    if name:
        out.append(_candidate(f"{subject}'s name is {name.group('v')}", "PROFILE", turn, sentence, "parse:name",
                              hedged=hedged, slots={"name": name.group("v")}))
    address = None if name else statements_en.address_form(sentence)
    if address and not any(address in c.text for c in out):
        # how the user asks to be addressed ("Call me by my first name, Rafa, not sir"): their preference
        out.append(_candidate(f"{subject} prefers to be addressed as {address}", "PREFERENCE", turn, sentence,
                              "parse:address", hedged=hedged))
    taste = idioms_en.taste(sentence, before(sentence, turn.text))
    if taste is not None and not any(taste[1].lower() in c.text.lower() for c in out):
        # "Nothing beats a black coffee", "Spicy food and I don't get along": a like or a dislike
        verb = "loves" if taste[0] == "likes" else "dislikes"
        out.append(_candidate(f"{subject} {verb} {taste[1]}", "PREFERENCE", turn, sentence, "parse:idiom",
                              hedged=hedged))
    request = None if any(c.memory_type == "RULE" for c in out) else statements_en.standing_request(sentence)
    if request is not None:
        # a standing request about how to answer ("Please keep your answers short", "Use metric units with me"):
        # the user's rule (seed 004 §4 RULE), in their own words; the gate screens it as every rule
        out.append(_candidate(f"{subject}'s rule: {request[0][:1].lower()}{request[0][1:]}", "RULE", turn, sentence,
                              "parse:rule", hedged=hedged))
    for (text, memory_type, c), words in zip(found, parsed, strict=True):
        read = [j for j, k in enumerate(covered) if _reads(words, k)]
        ruling = types_en.ruling(parse_en.parsed(sentence)[c.head]) if read else None
        for j in read if ruling == memory_type else ():
            if out[j].memory_type in ("FACT", "PROFILE"):  # a rule's plain reading of a practice ("grew up speaking
                out[j] = msgspec.structs.replace(out[j], memory_type=ruling)  # Portuguese"), a business ("own a cafe")
        if name and "name" in text.lower() or read:
            continue  # the rules read this clause already
        out.append(_candidate(text, memory_type, turn, sentence, "parse:clause", hedged=hedged, slots=c.slots))
    roles = {k: v for c in clauses for k, v in c.slots.items() if k.startswith("role:")}
    roles.update({k: v for k, v in parse_en.slots(sentence).items() if k.startswith("role:")})
    if roles and not any(v in c.text for c in out for v in roles.values()):
        # "Marcus left, our new team lead is Aisha": the small parser splits "team lead"; the role is still stated
        k, v = next(iter(roles.items()))
        out.append(_candidate(f"{subject}'s {k[5:]} is {v}", "FACT", turn, sentence, "parse:role", hedged=hedged,
                              slots={k: v}))
    if not ends:
        return out, []
    if positive:
        ending = [_words(parse_en.clause_text(sentence, c), subject) for c in clauses if c.ends or c.negated]
        fresh = [_words(parse_en.clause_text(sentence, c), subject) for _, _, c in positive]
        kept = [c for c in out if c.memory_type == "RULE" or not any(_reads(_words(c.text, subject), e) and not any(
            _reads(_words(c.text, subject), f) for f in fresh) for e in ending)]
        if kept:
            return [_with(c, ends) for c in kept], []
    if not out:
        # an end told without a statement of the user's ("Sadly Miso died last month.", "Marcus left."): the end of
        # a named one goes to the turn's other statements, which close the user's items that hold it
        return [], [e for e in ends if e[:1].isupper()]
    if ruled:
        return [_with(c, ends) for c in out], []
    return [_with(c, ends) for c in out], ends  # ending only: dropped if the turn has another (``with_ends``)


#: what a change puts in place of what it ended: "ditched the Dell for a MacBook Air", "swapped my Kindle for a Kobo"
_REPLACEMENT = re.compile(r"\b(?:for|with|in favou?r of)\s+(?:(?:a|an|the|my|our|their|some|one|this|that|new|"
                          r"brand-new|second-hand|used)\s+)*(?P<v>[A-Za-z][\w'-]*)")
#: what follows "for" / "with" without being a thing in the ended one's place ("quit for good", "for health reasons")
_NOT_A_VALUE = frozenset({"good", "now", "while", "ever", "reasons", "reason", "health", "money", "cash", "free",
                          "nothing", "years", "months", "weeks", "days", "me", "him", "her", "them", "it", "us",
                          "you", "real", "sure", "once", "all", "less", "more", "no", "regrets", "peanuts"})


def names_replacement(c: Candidate) -> bool:
    """Whether an ending candidate's text names what came in place of what it ended ("User ditched the Dell for a
    MacBook Air"): then it states a new value, not only an end."""
    ends = [str(e) for e in c.data.get("ends") or []]
    if CJK.search(c.text) and (zh_ends.born(c.text) or zh_ends.married(c.text)):
        return True  # a birth, a wedding: the child, the spouse are the new state ("老二生了", "上周领证了")
    at = max((c.text.find(e) + len(e) for e in ends if e in c.text), default=0)
    m = _REPLACEMENT.search(c.text, at)
    return m is not None and m.group("v").lower() not in _NOT_A_VALUE


def with_ends(cands: list[Candidate], ends: list[str], turn: Turn, subject: str) -> list[Candidate]:
    """``_with_ends``, each English candidate then given what an event of the user's life it tells ends
    (``life_events_en``: a wedding ends "boyfriend", a birth "pregnant"), and another person's ending kept off the
    user's people ("User's brother and his girlfriend split up")."""
    out = []
    for c in _with_ends(cands, ends, turn, subject):
        if CJK.search(c.text) or not parse_en.available():
            out.append(c)
            continue
        had = [str(e) for e in c.data.get("ends") or []]
        new = list(life_events_en.people_kept(c.text, subject, had))
        new += [e for e in life_events_en.life_ends(c.text, subject) if e not in new]
        out.append(c if new == had else msgspec.structs.replace(c, data={**c.data, "ends": new}))
    return out


def _with_ends(cands: list[Candidate], ends: list[str], turn: Turn, subject: str) -> list[Candidate]:
    """The turn's candidates with what its ending-only sentences ended: those sentences' own candidates are
    dropped when the turn has another (its new value carries the ends), kept otherwise. A candidate that names
    its replacement (``names_replacement``) is no ending-only one: it stays, with its own ends."""
    cands = [_with_next(c, turn, subject) for c in absorbed(cands)]
    if not ends:
        return cands
    others = [c for c in cands if not c.data.get("ends")]
    if not others:
        return cands
    kept = [c for c in cands if c.data.get("ends") and names_replacement(c)]
    carried = {str(e) for c in kept for e in c.data["ends"]}  # its own ends close the old item through it alone
    rest = [e for e in ends if e not in carried]
    # a rule is no ending-only sentence, whatever it ends ("以后按北京时间说就行，不用再换算了")
    return [c if c.data.get("ends") else _with(c, rest) if rest else c for c in cands
            if not c.data.get("ends") or names_replacement(c) or c.memory_type == "RULE"]


def _with_next(c: Candidate, turn: Turn, subject: str) -> Candidate:
    """``c``, or when it only ends something ("finally sold the Civic.") and the turn's next sentence names the new
    value in a remark that ends and negates nothing ("the Model 3 is sooo much quieter": a name, not a person's or
    a date, that the ends do not hold), the two in the user's words with the ends: the new value said in a
    sentence of its own stands beside the old, as it does said in one (``verbatim_en.new_name``; heldout_s17 / s18
    dev). A question after it is no remark."""
    said = str(c.data.get("sentence") or "")
    if not c.data.get("ends") or c.data.get("verbatim") or names_replacement(c) or not said or \
            not parse_en.available():
        return c
    parts = [clean_text(p) for p in sentences(turn.text)]
    at = next((i for i, p in enumerate(parts) if p == said or said in p), None)
    if at is None or at + 1 >= len(parts) or "?" in parts[at + 1] or CJK.search(parts[at + 1]):
        return c
    ends = [str(e) for e in c.data["ends"]]
    gone = {w.lower() for e in ends for w in e.split()}
    doc = parse_en.parsed(parts[at + 1])
    dated = {t.i for e in doc.ents if e.label_ in ("DATE", "TIME") for t in e} if doc is not None else set()
    if doc is None or parse_en.ends(parts[at + 1]) or not any(
            t.pos_ == "PROPN" and t.lower_ not in gone and t.i not in dated and t.ent_type_ != "PERSON"
            and not any(c.dep_ == "neg" for c in t.head.children) for t in doc):  # ("the Kia isn't ...": no)
        return c
    joined = f"{said.rstrip()} {parts[at + 1]}"
    return _candidate(statements_en.quoted(joined, subject), "FACT", turn, joined, "parse:sentence",
                      hedged=bool(c.data.get("hedged")), ends=ends)


def absorbed(cands: list[Candidate]) -> list[Candidate]:
    """The turn's candidates less each ending one whose sentence a kept quote of the turn holds whole (``verbatim``:
    "gave up the espresso, it was giving me jitters. it's matcha every morning now"), its ends moved onto that
    quote: the quote states the change with its new value, the ending one alone would state the old value only."""
    hosts = [c for c in cands if c.data.get("verbatim")]
    if not hosts:
        return cands
    moved: dict[int, list[str]] = {}
    out: list[Candidate] = []
    for c in cands:
        said = str(c.data.get("sentence") or "").strip()
        host = next((i for i, h in enumerate(hosts) if h is not c and said and said in h.text), None)
        if host is not None and c.data.get("ends") and not c.data.get("verbatim") and not names_replacement(c):
            moved.setdefault(host, []).extend(str(e) for e in c.data["ends"])
            continue
        out.append(c)
    return [_with(c, moved[hosts.index(c)]) if c in hosts and hosts.index(c) in moved else c for c in out]


def add(out: list[Candidate], by_hash: dict[str, int], c: Candidate) -> None:
    """Append ``c`` unless a candidate of the batch has its text already (then join the source ids)."""
    h = str(c.data.get("dedupe_hash") or dedupe_hash(c.user_id, c.text))
    if h in by_hash:
        prev = out[by_hash[h]]
        ids = [*prev.source_event_ids, *(e for e in c.source_event_ids if e not in prev.source_event_ids)]
        out[by_hash[h]] = msgspec.structs.replace(prev, source_event_ids=ids)
        return
    by_hash[h] = len(out)
    out.append(c)
