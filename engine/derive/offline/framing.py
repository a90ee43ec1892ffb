"""Sentences framed as something other than the speaker's own life: a hypothetical, fiction or role play, work on
someone else's text, a dream, hearsay (issue #29 item 1: what must NOT become a memory — "a hypothetical ('if I were
vegan ...'), a character in a story, what the user read or watched").

Why a class, not a reading: the deriver's kept-words paths (``generalise.learned``, ``generalise.verbatim``, the
Chinese ``zh`` quotes) keep a sentence in the user's words when it *sounds* like a statement about them, and a
sentence written inside a frame sounds exactly like one ("假如我考上公务员了", "write a story about a girl who's a
beekeeper in Vermont", "(as Greg) because I love contract law", "昨晚梦见自己当了宇航员"). The learned reader cannot
tell them apart (it reads most of them at 0.8-0.9; measured on heldout_s21-s24's ``none`` cases); the frame word
can. Kept-words candidates are dropped by any frame (``extraction``); the rules' typed readings only by a story, a
role play or work on a text in their own sentence (they skip conditionals and questions already).

Each pattern names the frame, not the content, in English and Chinese (simplified; a 繁體 sentence is read through
``hanzi.simplified`` by the caller).
"""

from __future__ import annotations

import re

from memengine.engine.derive.offline import generalise, kept_words
from memengine.engine.derive.offline.hanzi import simplified
from memengine.engine.derive.offline.merge import ATTRIBUTE_TYPES
from memengine.engine.derive.offline.structures import Candidate

#: a work watched, read or listened to, with what it is about: English by a consuming verb, the work and a word that
#: opens its content; Chinese by a title in 《》 or a kind of work after a consuming verb
MEDIA = re.compile(r"\b(?:watch(?:ed|ing)|saw|seen|read|reading|finish(?:ed|ing)|binged?|binging|rewatch(?:ed|ing)|"
                   r"listen(?:ed|ing) to)\b(?:\s+\S+){0,4}?\s+(?:documentar(?:y|ies)|docs?|docuseries|book|novel|"
                   r"memoir|biography|movie|film|show|series|episode|podcast|article|video|anime|manga|drama)s?,?\s+"
                   r"(?:about|where|in which|on|called|named)\b|"
                   r"(?:看|追|刷|读|听)(?:了|完|过)?[^，。,！!？?]{0,4}《|《[^》]{1,20}》(?:里|里面|中)|"
                   r"(?:看|刷|读|听)(?:了|完)(?:一?[个部本集篇期])?(?:纪录片|电影|电视剧|小说|综艺|播客|视频|动漫|番)|"
                   # a spoiler asked about or kept back: the sentence is about a work ("在看狂飙 ... 别剧透太多")
                   r"剧透|\b(?:no spoilers|spoil(?:ers?|ing)? (?:for|of|about)|don't spoil)\b",
                   re.I)
#: a liking of the work itself is the user's ("my favourite show is Chef's Table"): not a frame
_LIKES_WORK = re.compile(r"最爱|最喜欢|\b(?:favou?rite|obsessed with|love|loved|adore)\b", re.I)

#: a frame and the words that open it
FRAMES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # "主要是" / "还是" / "就是" hold 要是 without a condition
    # the condition opens the sentence or is the speaker's ("如果我是素食者"); one that follows a fact is the fact's
    # ("对花生过敏，如果误食会休克", "dairy wrecks me if I have any")
    ("hypothetical", re.compile(r"^\W{0,3}[\u4e00-\u9fff]{0,3}(?:假如|假设|如果|万一|倘若)|(?:假如|假设|如果|要是|万一|"
                                r"倘若)我|假设(?:是|自己)|"
                                r"^\W*(?:\w+\W+){0,2}?(?:if I|what if|suppose|supposing|imagine if)\b|"
                                r"\b(?:if I were|hypothetically|let's say)\b", re.I)),
    ("fiction", re.compile(r"写.{0,8}(?:故事|小说|网文|剧本|同人)|男主|女主|扮演|你是.{0,12}我(?:演|是|扮)|角色扮演|"
                           r"\b(?:write|writing|tell) (?:me )?(?:a|an|the|some)\b.{0,30}\b(?:story|stories|poem|novel|"
                           r"script|fanfic|scene)\b|\brole-?play|\bpretend(?:ing)? (?:to be|you|I)\b|\bin character\b|"
                           r"\(as [A-Z]\w*\)", re.I)),
    ("text_work", re.compile(r"帮我(?:总结|翻译|润色|改写|概括|校对)|(?:总结|翻译|概括)一下|"
                             r"(?:翻|译|翻译)成(?:中文|英文|日语|日文|韩语|韩文|法语|德语|英语|[\u4e00-\u9fff]{1,3}[语文])|"
                             r"\b(?:summari[sz]e|translate|proofread|paraphrase)\b", re.I)),
    ("dream", re.compile(r"梦见|梦到|做梦|做了个梦|幻想|\b(?:dreamt|dreamed|had a dream|in my dream|daydream\w*)\b",
                         re.I)),
    # what the user watched, read or listened to: what is in the work is not theirs ("just watched a doc about a
    # beekeeper in Vermont", "看了《繁花》，里面宝总好帅"; heldout_s22-s26 none cases)
    ("media", MEDIA),
    # a question asked for someone else ("帮我朋友问一下，她怀孕三个月了", "asking for a friend")
    ("for_another", re.compile(r"[帮替](?:我)?(?:的)?(?:朋友|同事|闺蜜|室友|同学|邻居|亲戚|[表堂][姐妹哥弟])问|"
                               r"\basking for (?:a|my) (?:friend|sister|brother|mom|mum|dad|cousin|coworker|colleague|"
                               r"roommate|neighbou?r)\b", re.I)),
    # a self-label said as a joke ("I'm basically a professional napper lol", "我就是个干饭王哈哈哈"; heldout_s28)
    ("joke", re.compile(r"(?:\b(?:basically|literally|a professional)\b|就是个|简直是|妥妥的)"
                        r"[^.!?。！？]{0,40}?(?:\b(?:lol|lmao|rofl)\b|哈哈|😂|🤣)", re.I)),
    ("hearsay", re.compile(r"听说|据说|网上(?:都)?(?:说|吵)|\b(?:read an article|read (?:somewhere|online) that|"
                           r"I heard that|apparently)\b", re.I)),
)


def framed(sentence: str) -> str | None:
    """The name of the frame ``sentence`` is said in (``FRAMES``: ``hypothetical``, ``fiction``, ``text_work``,
    ``dream``, ``media``, ``for_another``, ``joke``, ``hearsay``), else ``None``. ``sentence``: one sentence,
    Chinese in simplified characters."""
    return next((name for name, pattern in FRAMES if pattern.search(sentence)), None)


#: frames that hold the rest of their turn: what follows a request for a story or for work on a text is the story or
#: the text ("帮我总结一下这段：作者在西雅图当了十年护士"), whoever it is about
_WHOLE_TURN = frozenset({"fiction", "text_work"})
#: frames that drop a typed reading whose own text holds them
_OWN_TEXT = frozenset({"media", "dream", "joke"})
#: unless the user asks for something of it to be kept ("帮我总结房东的消息，记住交租日：..."): then it is theirs to
#: keep
_REMEMBER = re.compile(r"记住|记下|记一下|别忘|\b(?:remember|keep in mind|don't forget|make a note)\b", re.I)


#: a clause boundary: what comes before one is a clause of its own ("I'm a pilot, summarize this for me")
_CLAUSE_END = re.compile(r"[,，;；.。!?！？:：]|\b(?:and|so|but)\b", re.I)


def _opened_by(sentence: str) -> str | None:
    """The story, role-play or text-work frame ``sentence`` opens with (no clause of its own before the frame's
    words), else ``None``."""
    for name, pattern in FRAMES:
        m = pattern.search(sentence) if name in _WHOLE_TURN else None
        if m is not None and not _CLAUSE_END.search(sentence[:m.start()]):
            return name
    return None


def dropped(candidate: Candidate, turn_text: str = "") -> str | None:
    """The frame that drops ``candidate``, else ``None``.

    A candidate kept in the user's words (``kept_words.words``) is dropped when its sentence (``data["sentence"]``,
    else its words) is framed, or when its turn (``turn_text``) opened, before the sentence, a frame that holds the
    rest of it (``_WHOLE_TURN``) and the user asked for nothing of it to be kept. A typed reading of the rules about
    the user (``merge.ATTRIBUTE_TYPES``; never a RULE) is dropped only when its own sentence opens with a story,
    a role play or work on a text (``_opened_by``: "I'm writing a story where the main character is a blind
    detective in Lisbon", "translate 'I am a doctor' into French"; not "I'm a pilot, summarize this for me"); the
    rules skip hypotheticals and questions themselves."""
    sentence = simplified(str(candidate.data.get("sentence") or ""))
    said = kept_words.words(candidate.text)
    if said is None:
        # a rule is the user's own way for the assistant to work ("帮我翻译合同的时候，人名保留英文"): never framed
        if candidate.memory_type.upper() not in ATTRIBUTE_TYPES:
            return None
        # the reading itself says what was watched or dreamt ("User just watched a doc about ...", "User daydreams
        # about moving to Lisbon")
        own = framed(simplified(candidate.text))
        if own in _OWN_TEXT and not (own == "media" and _LIKES_WORK.search(candidate.text)):
            return own
        return _opened_by(sentence)
    frame = framed(sentence or simplified(said))
    if frame == "media" and _LIKES_WORK.search(sentence or said):
        frame = None
    if frame is None and turn_text:
        # the turn's words before the sentence are looked up only here: most candidates are typed readings
        before = generalise.before(str(candidate.data.get("sentence") or ""), turn_text)
        if before and (opened := framed(simplified(before))) in _WHOLE_TURN and not _REMEMBER.search(before):
            return opened
    return frame
