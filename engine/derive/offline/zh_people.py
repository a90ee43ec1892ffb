"""The user's people in Chinese: who a clause is about when it is not the user, and whom a leading 他 / 她 means
(issue #29 item 1, a class session 17 left open: "我妹天天熬夜背书" in one turn, "她在读临床医学" in the next).

* ``ANOTHER``: a clause led by one of the user's people (我老公, 我妈, 俺爹, 我家闺女, 用户的同事 ...) or by 他 / 她
  states that person's attributes, never the user's (``zh.about_another``). The kin and social words are a closed
  class of the language, listed once here.
* ``antecedent``: the person the user named last in a text: the subject of its last clause that opens with one of
  the user's people (我 / 我的 / 我家 + a person word, with the name after it: "我同事小王"), else with a person's
  name (jieba ``nr``). A later sentence that opens with 他 or 她 (one person: 他们 / 她们 may be anyone) is about that
  person; ``resolved`` writes them in its place, so the statement is kept as theirs ("用户妹在读临床医学") and the
  reader's own rule (``ANOTHER``) keeps it out of the user's slots.

The enricher hands the deriver the user's previous turn of the same thread and session (``Turn.before``), read from
the transcript it waits for, so the reading is the same live and on replay. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: the user's people: family, partner, friends, colleagues (a closed class of words)
PERSON = (r"(?:爸妈|父母|老公|老婆|丈夫|妻子|爱人|先生|太太|媳妇儿?|对象|男朋友|女朋友|男友|女友|未婚夫|未婚妻|"
          r"妈妈?|爸爸?|老妈|老爸|爹|娘|父亲|母亲|父母|爸妈|公公|婆婆|岳父|岳母|丈母娘|老丈人|"
          r"(?:表|堂)?(?:哥哥?|姐姐?|弟弟?|妹妹?)|儿子|女儿|闺女|孩子|小孩|宝宝|孙子|孙女|外孙女?|"
          r"爷爷|奶奶|外公|外婆|姥姥|姥爷|舅舅?|舅妈|姑姑?|姑父|姨妈?|阿姨|叔叔?|婶婶?|伯伯?|伯父|伯母|"
          r"朋友|好友|闺蜜|兄弟|哥们儿?|同事|同学|室友|舍友|邻居|徒弟)")
#: a role someone holds for the user: "我们组长是老张", "新 manager 是 Lisa", "我的经理叫王姐", "现在的导师是李老师"
#: (its 现在 dropped with the lead words, "的导师是李老师")
ROLE_HELD = re.compile(r"(?:我们的?|我的|用户的|用户们|^用户|新的?|现在的|目前的|^的)\s*"
                       r"(?P<k>[^\s，。！？,是叫的]{1,10}?)\s*(?:是|叫)\s*"
                       r"(?P<v>[^\s，。！？,]{1,10})")
#: the role words of ``ROLE_HELD``
ROLE_WORD = re.compile(r"(?:组长|经理|领导|老板|上司|主管|总监|老师|医生|导师|教练|房东|班主任|manager|boss|lead|"
                       r"leader|coach)$", re.I)
#: who holds a role for the user: "我的导师是王老师" is the user's attribute (``zh`` role slots), so such a clause is
#: not another's; a later 他 / 她 still means them
ROLE = r"(?:老板|领导|上司|导师|老师|师傅|经理|组长|主管|教练|医生)"
#: a clause led by one of the user's people from outside the household (a friend, a colleague, a neighbour): their
#: attributes are nobody's memory here, not even in their name ("我同事对海鲜过敏 明天部门聚餐": heldout_s28), as
#: "my friend Sam is allergic to shellfish" is not; a family member's or a flatmate's (the household) are kept as
#: theirs
_OUTSIDER_WORDS = r"(?:我们|我|用户)的?(?:朋友|好友|闺蜜|兄弟|哥们儿?|同事|同学|邻居|徒弟|老板|领导|上司)"
OUTSIDER = re.compile("^" + _OUTSIDER_WORDS)
#: one of them named anywhere (what a later 他 / 她 may mean)
OUTSIDER_NAMED = re.compile(_OUTSIDER_WORDS)
#: a clause led by someone else than the user: he / she, or one of the user's people
ANOTHER = re.compile(r"^(?:[他她它](?:们)?|(?:我们家|我家|我们|我|用户家|用户)的?" + PERSON + ")")
#: one of the user's people as a clause's subject, with a name after the word ("我同事小王")
_NAMED = re.compile(r"^(?:我们家|我家|我们|我)的?(?:" + PERSON + "|" + ROLE + r")"
                    r"(?:[\u4e00-\u9fff]{0,3}?(?=在|是|叫|今年|最近|现在|刚|下个?月|上个?月|也|又|还|都|已经|前年|去年|天天|每天|人|特别|一直|$))?")
#: discourse and time words that open a clause before its subject ("对了，", "上周")
_OPENING = re.compile(r"^(?:对了|顺便说一下|其实|另外|还有|话说|说起来|嗯+|哦|唉|最近|现在|上周|今天|昨天|前几天)"
                      r"[，,\s]*")
_CLAUSES = re.compile(r"[，,；;：:。！!？?\n]+")
#: a leading third-person pronoun of one person (not 他们 / 她们, not 他人 / 他乡)
_PRONOUN = re.compile(r"^(?P<lead>(?:对了|其实|另外|还有|而且|不过|现在|最近|今年|去年)?[，,\s]*)(?P<p>[他她])"
                      r"(?![们人乡])")


def names_someone(text: str) -> bool:
    """Whether ``text`` has a Chinese 他 / 她 that a previous turn may name (the enricher reads that turn only then)."""
    return re.search(r"[他她]", text) is not None


def _standard(text: str) -> str:
    return text.replace("俺", "我").replace("咱", "我")


def antecedent(text: str, tag: Callable[[str], list[tuple[str, str]]]) -> str | None:
    """The person the user named last in ``text`` (simplified or not; 俺 / 咱 read as 我): "我妹" of "我妹天天熬夜背书",
    "我同事小王" of "我同事小王人挺好", a name jieba tags ``nr`` that opens a clause; ``None`` when no clause opens with
    one. ``tag`` is the segmenter (``zh.tagged``)."""
    found: str | None = None
    for clause in _CLAUSES.split(_standard(text)):
        body = _OPENING.sub("", clause.strip())
        if not body:
            continue
        m = _NAMED.match(body)
        if m is not None:
            found = m.group(0)
            continue
        words = [(w, f) for w, f in tag(body) if w.strip()]
        if words and words[0][1] in ("nr", "nrfg") and len(words[0][0]) >= 2 and \
                (len(words) == 1 or not words[1][1].startswith("n")):
            found = words[0][0]
    return found


def pronoun_at(sentence: str) -> tuple[int, int] | None:
    """Where the leading 他 / 她 of ``sentence`` (simplified) is, as ``(start, end)``; ``None`` without one."""
    m = _PRONOUN.match(sentence)
    return None if m is None else (m.start("p"), m.end("p"))


def resolved(sentence: str, who: str | None) -> str:
    """``sentence`` with a leading 他 / 她 written as ``who`` ("她在读临床医学" -> "我妹在读临床医学"); unchanged
    without ``who`` or without such a pronoun."""
    at = pronoun_at(sentence) if who else None
    return sentence if at is None or not who else sentence[:at[0]] + who + sentence[at[1]:]
