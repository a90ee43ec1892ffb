"""English statements from parsed clauses (issue #29 item 1): the user's clauses of a sentence (``parse_en``) as
typed candidates in the user's own words, third person (``statements``), and the whole sentence as said when no
clause stands alone (``quoted``). Split from ``parse_en`` (module size); pure for a given pipeline."""

from __future__ import annotations

import re
from typing import Any

from memengine.engine.derive.offline import parse_en
from memengine.engine.derive.offline.lexicon_en import (
    BODY_WORDS,
    END_VERBS,
    FEELINGS,
    LASTING_ADJ,
    MOODS,
    OCCUPATIONS,
    PEOPLE,
    PREF_VERBS,
    THINK_VERBS,
    past_of_end,
)
from memengine.engine.derive.offline.parse_en import (
    PRON_3,
    Clause,
    clauses,
    end_value,
    ends,
    own_predicate,
    phrase_of,
    subject_of,
)
from memengine.engine.derive.offline.participants_en import places_user
from memengine.engine.derive.offline.types_en import type_of

#: discourse words before the subject that carry nothing ("Well, I ...", "So yeah, I'm ...", "Big news - I ...")
_DISCOURSE = re.compile(r"^(?:(?:well|so|yeah|yes|oh|ok|okay|anyway|honestly|btw|lol|haha|hey|hi|um|uh|also|and|but|"
                        r"big news|good news|fun fact|fwiw|not sure if relevant but)\b[\s,.!:;—-]*)+", re.I)
_PRON3 = {"i": "they", "me": "them", "my": "their", "mine": "theirs", "myself": "themselves", "we": "they",
          "us": "them", "our": "their", "ours": "theirs", "ourselves": "themselves"}
_VERB3 = {"am": "is", "'m": "is", "are": "is", "'re": "is", "have": "has", "'ve": "has", "do": "does", "was": "was",
          "were": "was"}


def _third(verb: str) -> str:
    v = verb.lower()
    if re.search(r"(?:s|sh|ch|x|z|o)$", v):
        return v + "es"
    if re.search(r"[^aeiou]y$", v):
        return v[:-1] + "ies"
    return v + "s"


def _inverted(doc: Any, clause: Clause, head: Any, subj: Any, pred: Any, subject: str) -> str:
    """A copula whose predicate is the user's, said the other way round so the user comes first ("Rome is my
    favourite city" -> "User's favourite city is Rome", "Country music is not my thing at all" -> "User's thing is
    not country music at all"); what precedes the subject ("Dropped yoga, ...") is left out (its ends are kept)."""
    own = {t.i for t in pred.subtree}
    sub = {t.i for t in subj.subtree}
    verb = [i for i in clause.tokens if i not in own | sub and (i == head.i or doc[i].head.i == head.i and doc[i].dep_
                                                                 in ("aux", "neg", "auxpass"))]
    rest = [i for i in clause.tokens if i not in own | sub and i not in verb and i > head.i and not doc[i].is_punct]
    words = [f"{subject}'s" if doc[i].dep_ == "poss" and doc[i].head.i == pred.i else
             _PRON3.get(doc[i].lower_, doc[i].text)
             for i in sorted(own) if doc[i].dep_ != "det" or doc[i].head.i != pred.i]
    words += ["is" if doc[i].lower_ in ("'s", "are", "'re") else doc[i].text for i in verb]
    words += [doc[i].text if doc[i].pos_ == "PROPN" or i != min(sub) else doc[i].lower_ for i in sorted(sub)]
    words += [doc[i].text for i in rest]
    body = re.sub(r"\s+", " ", " ".join(words)).replace(" n't", "n't").strip()
    return body[:1].upper() + body[1:]


def render(text: str, clause: Clause, subject: str) -> str:
    """A clause in the third person for ``subject`` ("I relocated to Glasgow last week" -> "User relocated to
    Glasgow last week"): the user's own words, pronouns and agreement changed, nothing else."""
    doc = parse_en.parsed(text)
    head = doc[clause.head]
    subj = subject_of(head)
    pred = own_predicate(head)
    if pred is not None and subj is not None and subj.pos_ in ("NOUN", "PROPN") and not any(
            x.dep_ == "poss" and x.lower_ in ("my", "our") for x in subj.subtree):
        return _inverted(doc, clause, head, subj, pred, subject)
    past = any(t.ent_type_ == "DATE" and t.lower_ in ("ago", "last", "yesterday") for t in doc)
    words: list[str] = []
    order = clause.tokens
    start = min(t.i for t in subj.subtree) if subj is not None else 0
    if subj is not None and subj.i in order and order[0] < start:
        # "These days I live in Galway" -> "User lives in Galway these days": the subject first, as the rules write
        before = [i for i in order if i < start and not doc[i].is_punct and doc[i].dep_ not in ("cc", "intj")]
        if _DISCOURSE.fullmatch(" ".join(doc[i].text for i in before) + " "):
            before = []
        if any(doc[i].lemma_.lower() in END_VERBS or past_of_end(doc[i].lower_) for i in before):
            order = []  # "Dropped yoga, pilates is my thing now": what ended stays before the new value
        else:
            main = [i for i in order if i >= start]
            while main and doc[main[-1]].is_punct:
                main.pop()
            order = main + before
        order = order or clause.tokens
    if subj is not None and subj.lower_ == "home" and parse_en.home_is(head) is not None:  # "Home for me is X"
        order = [i for i in order if not any(i == x.i or doc[i].head.i == x.i for x in subj.children
                                             if x.dep_ == "prep" and x.lower_ == "for")]
    for i in order:
        t = doc[i]
        w, low = t.text, t.text.lower()
        if t.dep_ in ("cc", "punct") and (i == order[0] or i == order[-1]):
            continue
        if subj is not None and t.i == subj.i and low in ("i", "we"):
            w = subject
        elif low in ("me", "us") and subj is not None and subj.lower_ not in ("i", "we"):
            w = subject  # "Globex took me on", "they moved me to Berlin": the user, named
        elif subj is not None and t.i == subj.i and low == "home" and parse_en.home_is(head) is not None and not any(
                x.dep_ == "poss" for x in t.children):
            w = f"{subject}'s home"  # "home is Seville now": whose home, said
        elif low in ("me", "i") and t.dep_ in ("nsubj", "conj") and subj is not None and (
                t.i == subj.i or t.head.i == subj.i):
            w = subject  # "Me and my husband live ...": the user, one of the subjects
        elif clause.ref >= 0 and low in PRON_3 and (t.i == subj.i or t.dep_ == "poss" and t.head.i == subj.i):
            # the pronoun of "it ends in 918" / "her name is Roberta", named: the stored text stands alone
            w = f"{subject}'s {phrase_of(doc[clause.ref])}" + ("'s" if t.dep_ == "poss" else "")
        elif clause.ref >= 0 and low == "'s" and t.pos_ == "AUX" and i > 0 and doc[i - 1].lower_ in PRON_3:
            w = " has" if t.head.tag_ == "VBN" and t.dep_ in ("aux", "auxpass") else " is"  # "it's 950" named
        elif low in ("my", "our") and t.dep_ == "poss" and subj is not None and (
                t.head.i == subj.i or subj.lower_ not in ("i", "we")):
            w = f"{subject}'s"
        elif low in _PRON3:
            w = _PRON3[low]
        elif subj is not None and subj.text.lower() in ("i", "we") and t.i > subj.i and \
                (t.i == head.i or t.head.i == head.i and t.dep_ in ("aux", "auxpass")):
            if low in _VERB3:
                w = _VERB3[low]
            elif t.tag_ == "VBP" and not past:
                w = _third(low)
        if subj is not None and order[0] >= start and i < start and t.pos_ != "PROPN":
            w = w.lower()  # moved after the subject
        if i == order[-1] or order.index(i) + 1 < len(order) and order[order.index(i) + 1] != i + 1:
            words.append(w + " ")
            continue
        words.append(w + (t.whitespace_ or (" " if w != t.text and i + 1 < len(doc) and doc[i + 1].text[:1] == "'"
                                             and doc[i + 1].lower_ not in ("'s",) else "")))
    while words and words[-1].strip() in (",", ";", ":", "-", "—", "and", "but", "so", "or", ".", ""):
        words.pop()
    body = re.sub(r"\s+", " ", "".join(words)).strip().rstrip(",;:- ")
    body = _DISCOURSE.sub("", body)
    if subj is None and parse_en.home_is(head) is not None:  # "Home these days is Bergen": whose home, said
        body = f"{subject}'s {body[:1].lower()}{body[1:]}"
    elif subj is None or subj.i not in clause.tokens:
        # "Currently training for X" -> "User is currently training for X": the subject and the auxiliary it dropped
        bare = not any(c.dep_ == "aux" for c in head.children)
        # "Been on warfarin since ..." -> "User has been on warfarin since ..."
        be = "is " if head.tag_ == "VBG" and bare else "has " if head.lower_ == "been" and bare else ""
        body = f"{subject} {be}{body[:1].lower()}{body[1:]}"
    return body[:1].upper() + body[1:]


#: degree words: an adjective they grade says how much, an evaluation ("so lucky", "really rewarding")
_DEGREE = {"so", "really", "very", "super", "truly", "too", "extremely", "incredibly", "totally", "absolutely",
           "pretty", "quite", "such", "how", "what", "sooo", "soo", "genuinely", "deeply", "beyond", "most", "more"}
#: verbs that link a subject to a quality ("is amazing", "seems great", "sounds lovely", "felt so welcoming")
_LINKS = {"be", "become", "seem", "look", "sound", "feel", "get"}


#: adverbs in -ly that state a fact about an adjective, not how much of it ("originally Polish", "newly married")
_FACTUAL_LY = {"originally", "recently", "newly", "legally", "officially", "technically", "currently", "fully",
               "strictly", "mostly", "partly", "mainly", "largely", "formerly", "previously", "nearly", "only"}


def _graded(adj: Any) -> bool:
    """Whether an adjective is graded ("so lucky", "wonderfully imperfect", "that resilient"): evaluated, not
    classified."""
    return any(c.dep_ in ("advmod", "det") and (c.lower_ in _DEGREE or c.lower_ == "that" or
                                               c.lower_.endswith("ly") and c.lower_ not in _FACTUAL_LY)
               for c in adj.children)


def remark(doc: Any, head: Any) -> bool:
    """Whether the clause headed by ``head`` is a remark rather than a fact: a linking verb (``_LINKS``) whose
    predicate is an evaluating adjective — one of feeling (``FEELINGS``: "I'm so grateful", "it was amazing"), one
    graded by a degree word or an exclamation ("really rewarding", "how lucky I am"), or one with the complement of
    an attitude ("proud of you", "thrilled to help", "lucky to have them"). Such clauses are feelings of the
    moment, compliments and opinions of something (issue #29 defect 3: they became PERMANENT core memory). An
    adjective of what someone lastingly is (``LASTING_ADJ``) or of an ability ("good at chess", "fluent in Dutch")
    is a fact."""
    if any(t.lower_ in ("your", "yours") or t.lower_ == "you" and t.dep_ == "pobj" for t in head.subtree):
        return True  # about the listener ("in awe of your courage", "so proud of you"): a compliment
    if head.tag_ == "VBN" and head.lower_ in FEELINGS and any(c.dep_ == "auxpass" for c in head.children):
        return True  # "I'm swamped with work", "we were thrilled": a feeling said as a participle
    if head.lemma_.lower() not in _LINKS:
        return False
    subj = subject_of(head)
    mine = subj is None or subj.lower_ in ("i", "we", "user")
    preds = [c for c in head.children if c.dep_ in ("acomp", "attr", "oprd") and c.pos_ == "ADJ"]
    if not mine:  # "our camping trip was a really nice time", "it has been a huge learning experience"
        preds += [a for c in head.children if c.dep_ == "attr" and c.pos_ == "NOUN" for a in c.children
                  if a.dep_ == "amod" and (a.lower_ in FEELINGS or _graded(a))]
    if not preds:
        return False
    for a in preds:
        if a.lower_ in ("more", "less") and any(c.dep_ == "prep" and c.lower_ == "of" for c in a.children):
            return False  # "more of a tea person": who the user is, compared
        words = {a, *(c for c in a.children if c.dep_ == "conj")}
        if any(w.lower_ in LASTING_ADJ for w in words):
            return False
        if any(c.dep_ == "prep" and (c.lower_ in ("at", "in", "on") or c.lower_ == "with" and w.lower_ not in
                                     FEELINGS) for w in words for c in w.children):
            return False  # an ability or a field ("good at chess", "fluent in Dutch", "experienced with React")
        graded = any(_graded(w) for w in words)
        attitude = any(c.dep_ in ("xcomp", "ccomp") or c.dep_ == "prep" and c.lower_ in ("of", "for", "about", "to")
                       for w in words for c in w.children)
        if graded or attitude or any(w.lower_ in FEELINGS for w in words):
            return True
    return False


#: adjectives of a restriction that name what they are about ("allergic to X"): without it the clause says little
_WANTS_OBJECT = {"allergic", "intolerant", "sensitive", "averse", "addicted", "hypersensitive"}


def quoted(sentence: str, subject: str) -> str:
    """The user's sentence as said, attributed: ``User said: "..."`` (the item's own time dates it)."""
    return f'{subject} said: "{sentence.strip()}"'


def statements(sentence: str, subject: str) -> list[tuple[str, str, Clause]]:
    """The user's lasting clauses of ``sentence`` as ``(text, memory type, clause)``: a clause about the user that
    states something (not a question, a wish, a mood of the moment, a request to the listener)."""
    out = []
    doc = parse_en.parsed(sentence)
    if doc is None:
        return []
    for c in clauses(sentence):
        head = doc[c.head]
        if not c.own or c.negated and not c.ends and type_of(sentence, c) != "PREFERENCE":
            continue  # a negated clause says nothing lasting, except a dislike ("Country music is not my thing")
        seeing = head.lemma_.lower() == "see" and any(t.dep_ == "dobj" and t.pos_ == "PROPN" for t in head.children)
        verbs = [head, head.head] if head.dep_ == "conj" else [head]  # "can accept ... and be content": shared aux
        if head.lemma_.lower() in THINK_VERBS and not seeing or any(
                t.lemma_.lower() in THINK_VERBS and t.dep_ == "aux" for v in verbs for t in v.children):
            continue  # ("I see Dr Okafor now", "I'm seeing Jamie": a person the user sees is a relation, not a thought)
        comps = [t for t in head.children if t.dep_ in ("acomp", "attr", "dobj", "prep", "xcomp", "oprd", "pobj",
                                                         "npadvmod", "advmod", "prt", "ccomp")]
        if not comps:
            continue
        if head.lemma_.lower() == "be" and parse_en.home_is(head) is None and not c.slots and all(
                t.lemma_.lower() in MOODS or t.dep_ in ("advmod", "npadvmod")
                                               for t in comps):
            continue
        if head.lemma_.lower() == "be" and all(t.i < head.i for t in comps):
            continue  # an elided predicate ("I'm not vegan, my brother is", "so is my sister"): it says nothing
        if head.tag_ == "VB" and subject_of(head) is None:  # an imperative: a request, not a statement
            continue
        if head.tag_ == "VB" and head.dep_ == "conj" and parse_en.own_subject(head) is None:
            continue  # "we can accept who we are and be content": a bare verb shares a modal or "to" said before
        if remark(doc, head):
            continue  # a feeling of the moment, a compliment, an opinion of something: not who the user is
        if any(t.dep_ == "mark" for t in head.children):
            continue  # a subordinate clause ("since I started ...", "because I ...") hangs on another
        objs = [t for t in head.children if t.dep_ in ("dobj", "attr", "acomp", "ccomp", "xcomp")]
        if c.ref < 0 and getattr(subject_of(head), "lower_", "") == "i" and any(
                t.dep_ == "dobj" and t.lower_ in ("it", "them") for t in head.children) and any(
                t.dep_ in ("nsubj", "nsubjpass") and t.pos_ in ("NOUN", "PROPN") and t.head.i != head.i
                and t.i < head.i for t in doc):
            # "Gluten makes me really sick, so I avoid it": "it" is named in another clause; "User avoids it" would
            # say nothing, so the sentence is kept whole, as said
            out.append((quoted(sentence, subject), type_of(sentence, c), c))
            continue
        # ("5k" of "I run 5k every morning" is tagged a pronoun by the small model: a number is never a reaction)
        # ("Globex took me on": the user as the object of an employing verb is a statement about the user)
        if objs and not parse_en.employs_user(head) and not places_user(head) and all(
                t.pos_ == "PRON" and not t.text[:1].isdigit() or t.lower_ in ("that", "this", "it") or any(
                x.lower_ in ("your", "you") for x in t.subtree) for t in objs):
            continue  # a reaction to the listener's words ("I love that!", "I love your painting"), not about the user
        if head.lemma_.lower() in PREF_VERBS and objs and all(
                any(d.lower_ in ("this", "these") for d in t.children) for t in objs):
            continue  # a reaction to what is here and now ("Loving this weather!"), not a lasting taste
        if c.ref >= 0 and end_value(doc[c.ref]) in ends(sentence):
            # "I've given up coffee; these days it's green tea": "it" is what replaced the ended thing, which no
            # clause names alone; the sentence is kept whole, as said, so the new value stands beside the old
            out.append((quoted(sentence, subject), type_of(sentence, c), c))
            continue
        if any(t.dep_ == "acomp" and t.lower_ in _WANTS_OBJECT and not any(x.dep_ == "prep" for x in t.children)
               for t in head.children):
            # "Shellfish is a no for me, I'm allergic": what the restriction is about is said in another clause; the
            # paraphrase "User is allergic" would lose it, so the sentence is kept whole, as said (issue #29 item 1)
            out.append((quoted(sentence, subject), "FACT", c))
            continue
        text = render(sentence, c, subject)
        if len(text.split()) < 3:
            continue
        out.append((text, type_of(sentence, c), c))
    return out


#: words around a mood that carry nothing ("honestly so tired", "a bit nervous", "but excited though")
_FILLER = {"and", "but", "so", "honestly", "really", "very", "super", "totally", "pretty", "quite", "a", "bit",
           "little", "kinda", "just", "too", "though", "tbh", "lol", "haha", "already", "now", "right", "also", "still",
           "rather", "extremely", "incredibly", "absolutely", "ugh", "oh", "wow", "yay", "sooo", "soo", "such", "all"}
#: where a sentence may change clause without a verb of its own ("..., feeling old", "... - so happy", "... and I
#: feel ancient")
_JOINTS = {",", "-", "—", "–", ";", ":", "...", "…", "and", "but"}


def _mood(toks: list[Any]) -> bool:
    """Whether ``toks`` (a stretch of a parsed sentence) is a mood of the moment and nothing else: an optional "I'm" /
    "I feel" / "feeling", then adjectives of feeling joined by and / but (``FEELINGS``; after a verb of feeling, any
    adjective), then at most their complement ("tired of dating apps"). An adjective of what someone lastingly is
    (``LASTING_ADJ``: "single", "vegan") is never a mood."""
    words = [t for t in toks if not t.is_punct and t.lower_ not in _FILLER]
    i, feel = 0, False
    if i < len(words) and words[i].lower_ in ("i", "we"):
        i += 1
        if i >= len(words) or words[i].lemma_.lower() not in ("be", "feel"):
            return False
    while i < len(words) and (words[i].lemma_.lower() in ("be", "feel", "get") or words[i].lower_ == "feeling"):
        feel = feel or words[i].lemma_.lower() == "feel" or words[i].lower_ == "feeling"  # tagged a noun at times
        i += 1
    adjectives: list[str] = []
    for t in words[i:]:
        if t.pos_ == "ADP" and adjectives:
            break  # the complement of the last feeling ("of dating apps"), part of the mood
        if not (t.pos_ == "ADJ" or t.tag_ in ("VBN", "JJ") or t.lower_ in FEELINGS):
            return False
        adjectives.append(t.lower_)
    return bool(adjectives) and not any(a in LASTING_ADJ for a in adjectives) and (
        feel or any(a in FEELINGS for a in adjectives))


def moods_apart(sentence: str) -> list[str]:
    """``sentence`` as its clauses when one of them is only a mood of the moment beside a statement ("I turned 30
    yesterday, feeling old!" -> ["I turned 30 yesterday!", "feeling old!"]; "So happy - got engaged!" ->
    ["got engaged!", "So happy -"]): the statement first, then the mood, each read on its own, so a lasting fact
    keeps its own type and lifetime (issue #29 defect 1: the mood's one-day lifetime won over the age). Cut where
    the sentence changes clause without a verb (``_JOINTS``); ``[sentence]`` when no part is a mood, or without a
    parser."""
    doc = parse_en.parsed(sentence)
    if doc is None or len(doc) < 3:
        return [sentence]
    end = len(doc)
    while end > 0 and doc[end - 1].is_punct:
        end -= 1
    stop = doc[end:].text
    best: tuple[list[Any], list[Any]] | None = None
    for b in range(1, end - 1):
        if doc[b].lower_ not in _JOINTS:
            continue
        head, tail = list(doc[:b]), list(doc[b + 1:end])
        for fact, mood in ((head, tail), (tail, head)):
            # the longest mood wins: "Nervous but excited, I ..." is one mood, not "Nervous" and a fact
            if fact and mood and _mood(mood) and any(t.pos_ in ("VERB", "AUX") for t in fact) and not _mood(
                    fact) and (best is None or len(mood) > len(best[1])):
                best = (fact, mood)
    if best is None:
        return [sentence]
    fact, mood = best
    return [doc[fact[0].i:fact[-1].i + 1].text + stop, doc[mood[0].i:mood[-1].i + 1].text + stop]


#: verbs of addressing someone ("call me Rafa", "address me as Dr. Okafor", "refer to me as Sam")
_ADDRESS = {"call", "address", "refer", "name"}


def address_form(sentence: str) -> str | None:
    """The name the user asks to be addressed by, however the request is put ("Call me by my first name, Rafa, not
    sir", "Address me as Dr. Okafor in emails", "Please refer to me as Sam", "I'd rather you called me Liz"): a verb
    of addressing with the user as its object and a name as its complement, after "as", or in apposition to "my
    (first / nick) name"; a name said with "not" is the one refused. ``None`` when there is none or no parser."""
    doc = parse_en.parsed(sentence)
    if doc is None:
        return None
    for head in doc:
        if head.lemma_.lower() not in _ADDRESS or head.pos_ != "VERB" or any(c.dep_ == "neg" for c in head.children):
            continue
        objs = [c for c in head.children if c.dep_ == "dobj" and c.lower_ == "me"]
        objs += [g for c in head.children if c.dep_ == "prep" and c.lower_ == "to" for g in c.children
                 if g.lower_ == "me"]
        if not objs:
            continue
        names = [c for c in head.children if c.dep_ in ("oprd", "attr", "xcomp") and c.pos_ == "PROPN"]
        names += [g for c in head.children if c.dep_ == "prep" and c.lower_ == "as" for g in c.children
                  if g.dep_ == "pobj" and g.pos_ == "PROPN"]
        names += [a for c in head.children if c.dep_ == "prep" and c.lower_ == "by" for g in c.children
                  if g.lemma_.lower() in ("name", "nickname") for a in g.children
                  if a.dep_ == "appos" and a.pos_ == "PROPN" and not any(n.dep_ == "neg" and n.i < a.i
                                                                        for n in a.children)]
        if names:
            return phrase_of(names[0])
    return None


#: verbs of how the assistant should answer: an imperative of one of them is a standing request about manner
_MANNER = {"keep", "use", "answer", "reply", "respond", "write", "spell", "format", "talk", "speak", "explain",
           "avoid", "stick", "address", "call", "refer", "include", "give", "show", "recommend", "suggest", "mention",
           "put", "list", "quote", "cite", "add", "skip", "leave", "send"}
#: what the assistant produces: "your answers short" is about every answer
_OUTPUTS = {"answer", "reply", "response", "message", "email", "summary", "explanation", "suggestion", "recipe",
            "recommendation", "text", "output", "code", "example", "list", "note"}


def standing_request(sentence: str) -> tuple[str, Any] | None:
    """The imperative of ``sentence`` when it asks the assistant for a lasting manner of answering, not for one
    thing now: ``(its words, its head token)`` or ``None``. A standing request is a prohibition ("Don't ever
    recommend anything with pork", "Never use emojis") or a verb of manner (``_MANNER``) whose object is what the
    assistant produces ("Please keep your answers short"), said "with / for / to me" ("Use metric units with me"),
    or "in" a form ("Reply in Spanish"). "Write me a two-line poem", "Give me a pasta idea" (a thing for the user
    now, a dative "me" with an object) and "Don't forget to ..." are not."""
    doc = parse_en.parsed(sentence)
    if doc is None:
        return None
    # the imperative opens the sentence or a clause of its own after a comma ("..., keep it brief")
    head = next((t for t in doc if t.pos_ == "VERB" and t.tag_ == "VB" and own_subject_of(t) is None
                 and not any(c.dep_ == "aux" and (c.tag_ == "MD" or c.lower_ == "to") for c in t.children)
                 and (all(x.dep_ in ("intj", "advmod", "aux", "neg", "punct") or x.lower_ in ("please", "just")
                          for x in doc[:t.i]) or t.i > 0 and doc[t.i - 1].lower_ in (",", ";", "-", "—"))), None)
    if head is None or head.lemma_.lower() in THINK_VERBS | {"worry", "bother", "panic", "hesitate"}:
        return None
    if head.lemma_.lower() in _CEASE:
        # "stop / quit using bullet points": the prohibition is of the gerund, what the assistant does
        doing = next((c for c in head.children if c.dep_ in ("xcomp", "ccomp", "dobj") and c.tag_ == "VBG"), None)
        if doing is None or doing.lemma_.lower() not in _MANNER or own_subject_of(doing) is not None or any(
                c.dep_ in ("dobj", "dative") and c.lower_ in ("him", "her", "them", "us") for c in doing.children):
            return None  # "stop calling him": what the user does to another, no manner of the assistant's
        return _request_words(doc, head), head
    kids = list(head.children)
    if any(c.dep_ == "dative" or c.dep_ == "dobj" and c.lower_ == "me" and any(
            x.dep_ in ("dobj", "attr") and x.lower_ != "me" for x in kids) for c in kids):
        return None  # "Write me a poem", "Give me an idea": something for the user now
    # a prohibition: "do not" / "don't" / "never" ("Can't wait for the trip" is no request: a modal, no "do")
    negated = any(c.dep_ == "neg" for c in kids) and any(c.dep_ == "aux" and c.lemma_.lower() == "do" for c in kids) \
        or any(c.lower_ == "never" for c in kids) or doc[0].lower_ == "never"
    manner = head.lemma_.lower() in _MANNER and (
        any(c.dep_ in ("dobj", "nsubj") and (c.lemma_.lower() in _OUTPUTS or any(
            x.lower_ == "your" for x in c.children)) for c in kids)
        or any(c.dep_ == "prep" and c.lower_ in ("with", "for", "to") and any(g.lower_ == "me" for g in c.children)
               for c in kids)
        or any(c.dep_ == "prep" and c.lower_ == "in" for c in kids) and head.lemma_.lower() not in ("put", "add")
        or head.lemma_.lower() == "keep" and any(c.dep_ in ("oprd", "acomp") and c.pos_ == "ADJ" for c in kids))
    # a prohibition about what the assistant does ("don't recommend", "never mention"), not encouragement ("don't
    # give up", "don't quit")
    negated = negated and head.lemma_.lower() in _MANNER and not any(c.dep_ == "prt" for c in kids)
    if not (negated or manner):
        return None
    return _request_words(doc, head), head


def not_forbidden(sentence: str, ends: list[str]) -> list[str]:
    """``ends`` (what ``parse_en.ends`` read ``sentence`` to end) less what a standing request of it forbids the
    assistant: "Please stop using bullet points with me" ends nothing of the user's ("use" would close "User uses
    a Mac")."""
    request = standing_request(sentence) if ends else None
    if request is None or request[1].lemma_.lower() not in _CEASE:
        return ends
    gone = {w for c in request[1].children if c.tag_ == "VBG" for w in (c.lemma_.lower(), c.lower_)}
    return [e for e in ends if e.lower() not in gone]


#: verbs of ceasing: with the gerund of what the assistant does they forbid it ("stop using bullet points")
_CEASE = {"stop", "quit", "cease", "halt"}


def _request_words(doc: Any, head: Any) -> str:
    """The words of the request under ``head``, the user's "me" / "my" in the third person, without "please"."""
    idx = sorted(t.i for t in head.subtree if not (t.is_punct and t.i == max(x.i for x in head.subtree)))
    words = " ".join(_PRON3.get(doc[i].lower_, doc[i].text) if doc[i].lower_ in ("me", "my", "i") else doc[i].text
                     for i in idx if doc[i].lower_ != "please")
    return re.sub(r"\s+([,.!?;:])", r"\1", re.sub(r" n't", "n't", words)).strip(" ,")


def own_subject_of(tok: Any) -> Any:
    """``parse_en.own_subject`` (the subject a verb has itself)."""
    return parse_en.own_subject(tok)


#: nouns that say who someone is, said without "I'm" ("Big fan of podcasts", "Huge Arsenal supporter")
_WHO_NOUNS = OCCUPATIONS | {"fan", "supporter", "lover", "person", "mum", "mom", "dad", "father", "mother", "parent",
                            "owner", "member", "native", "speaker", "vegan", "vegetarian", "introvert", "extrovert"}


#: a bare noun phrase (one to three words) said of with an amount: "credit score's up to 720", "rent has gone up to
#: £1,100", "resting heart rate is 58"; the amount after "up / down to" (a change of it) or right after the copula as
#: money or a plain number, never a time ("at 7", "6am") nor a measure of the world ("30 degrees", "20 minutes late")
_BARE_AMOUNT = re.compile(
    r"^(?P<subj>[a-z][\w-]*(?: [a-z][\w-]*){0,2})(?:'s| is| has| was)(?: (?:gone|come|gotten|got|crept|shot|now|"
    r"finally|just|already))*(?: (?:up|down) to [£$€¥]?\d| [£$€¥]\d| \d[\d,.]*k?\b(?!\s*(?:am|pm|:|°|degrees?|"
    r"minutes?|mins?|hours?|seconds?|o'clock|days?|weeks?|months?|years?|times?|points?)\b))", re.I)


def with_owner(sentence: str) -> str:
    """``sentence`` with the "my" it left out when it states an amount of a bare noun ("credit score's up to 720
    finally!" -> "my credit score's up to 720 finally!", "Resting heart rate is 58 these days"): people drop the
    possessive of their own attributes, and a bare noun phrase (no article, no possessive, no pronoun, no name: the
    parser's tags) with an amount (``_BARE_AMOUNT``) is the speaker's. Anything else comes back unchanged ("Dinner's
    at 7", "Weather's 30 degrees", "the rent is 900")."""
    m = _BARE_AMOUNT.match(sentence.strip())
    doc = parse_en.parsed(m.group("subj")) if m is not None else None
    if doc is None or not all(t.tag_ in ("NN", "JJ", "VBG") for t in doc) or doc[len(doc) - 1].tag_ != "NN":
        return sentence
    return f"my {sentence.strip()[:1].lower()}{sentence.strip()[1:]}"


#: "<who> here": the speaker introducing themselves ("pharmacist here", "lactose intolerant here, ...")
_HERE = re.compile(r"^(?P<d>[A-Za-z][\w' -]{1,40}?) here\b(?P<r>.*)$", re.I | re.S)
#: nouns of how experienced someone is (a closed class, beside ``_WHO_NOUNS`` of who someone is)
_LEVELS = frozenset({"beginner", "novice", "newbie", "noob", "amateur", "expert", "pro", "veteran", "learner",
                     "rookie", "newcomer", "first-timer", "layman", "layperson", "hobbyist", "enthusiast"})


def _said_here(sentence: str) -> str | None:
    """"I'm ..." for a description of someone followed by "here" ("Complete novice here" -> "I'm a complete novice",
    "lactose intolerant here" -> "I'm lactose intolerant"): its head one of who someone is (``_WHO_NOUNS``,
    ``_LEVELS``, an -ist / -ian noun) or what they lastingly are (``LASTING_ADJ``); ``None`` for anything else
    ("Same here", "Lovely weather here")."""
    m = _HERE.match(sentence.strip())
    if m is None or len(m.group("d").split()) > 4:
        return None
    desc, rest = m.group("d"), m.group("r")
    doc = parse_en.parsed(desc)
    # (a noun before the head is tagged a verb at times: "shellfish allergic")
    if doc is None or any(t.pos_ in ("AUX", "PRON", "DET", "ADV") or t.pos_ == "VERB" and t.i == len(doc) - 1
                          for t in doc):
        return None
    head = doc[len(doc) - 1].lower_
    if head in LASTING_ADJ:
        return f"I'm {desc[:1].lower()}{desc[1:]}{rest}"
    if head in _WHO_NOUNS or head in _LEVELS or head.endswith(("ist", "ian")) and doc[len(doc) - 1].pos_ == "NOUN":
        article = "an " if desc[:1].lower() in "aeiou" else "a "
        return f"I'm {article}{desc[:1].lower()}{desc[1:]}{rest}"
    return None


#: a bare condition or lasting state said first, before a joint ("lactose intolerant and tired of being sick",
#: "coeliac, so no bread", "pregnant - have been for months"): the speaker's, its "I'm" left out; a word before it
#: only one that grades or names the condition ("Karen retired, so ..." is another's)
_BARE_STATE = re.compile(rf"^(?:(?:lactose|gluten|dairy|nut|peanut|shellfish|still|now|not|also|both|very|strictly|"
                         rf"\w+ly|\w+-\w+) )?(?:{BODY_WORDS}|{'|'.join(sorted(LASTING_ADJ))})"
                         r"(?=\s*(?:[,;]|\s[-\u2013\u2014]|\s(?:and|so|but|though|tbh|lol)\b|[.!]?$))", re.I)


def with_subject(sentence: str) -> str:
    """``sentence`` with the "I'm" it left out when it is only a description of the speaker ("Big fan of podcasts,
    especially history ones" -> "I'm a big fan of podcasts, ...", "Vegan, by the way" -> "I'm vegan, by the way"):
    no verb at all, and its head a noun of who someone is (``_WHO_NOUNS``) or an adjective of what someone lastingly
    is (``LASTING_ADJ``), or a bare condition before a joint (``_BARE_STATE``: "lactose intolerant and tired of
    being sick"). Anything else comes back unchanged ("Long day ahead" is no description of the speaker)."""
    if (owned := with_owner(sentence)) != sentence:
        return owned
    if (here := _said_here(sentence)) is not None:
        return here
    if _BARE_STATE.match(sentence) and not sentence.rstrip().endswith("?"):
        return f"I'm {sentence[:1].lower()}{sentence[1:]}"  # "lactose intolerant and tired of ...": the speaker's
    doc = parse_en.parsed(sentence)
    if doc is None or any(t.pos_ in ("VERB", "AUX") for t in doc):
        return sentence
    root = next((t for t in doc if t.dep_ == "ROOT"), None)
    if root is None or root.i > 4 or any(t.pos_ == "PRON" and t.i < root.i for t in doc):
        return sentence
    if root.pos_ in ("NOUN", "PROPN") and root.lemma_.lower() in _WHO_NOUNS and root.tag_ in ("NN", "NNP"):
        first = doc[min(t.i for t in root.subtree)]
        article = "" if any(c.dep_ in ("det", "poss") for c in root.children) else (
            "an " if first.lower_[:1] in "aeiou" else "a ")
        return f"I'm {article}{sentence[:1].lower()}{sentence[1:]}"
    if root.pos_ == "ADJ" and root.lower_ in LASTING_ADJ and not any(
            t.i < root.i and (t.pos_ == "PROPN" or t.lemma_.lower() in PEOPLE) for t in doc):  # ("Priya pregnant")
        return f"I'm {sentence[:1].lower()}{sentence[1:]}"
    return sentence
