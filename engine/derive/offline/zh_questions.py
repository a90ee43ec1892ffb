"""Which clauses of a Chinese sentence ask, and what of the sentence is left to state (issue #29 item 1).

People tell the assistant about themselves on the way to a question, in one sentence, and usually drop the
subject ("最近开始练拳击了，每周三次，护齿要买哪种", "搬到杭州之后才发现这边夏天闷得要死，空调除湿模式费电吗"); a
request may open it ("帮我check一下这个recipe，我lactose intolerant，牛奶能换成什么"). Session 18's blind sets lost
about a third of their Chinese statements and updates that way: the whole sentence was read as a question unless
a clause opened with 我. Here a sentence is read clause by clause instead (``statement_part``): the clauses that ask
at its end and the requests at its start are cut, and what is left is read as any statement is (``zh``: the
user's own clauses, and subjectless ones that report something done or held). A clause asks when it has an
interrogative of its own (``asks``: 什么, 哪, 几 + a measure, 多少, the A-not-A form 贵不贵 / 去不去 / 行不行 /
喜不喜欢), ends in a question particle (吗, 呢, 嘛), or opens as a question or a request (请问, 帮我, 能不能 ...).

A clause that only passes on what was heard (听说, 据说, 网上说) is nobody's statement about the user (``HEARSAY``).

Pure: ``re`` only.
"""

from __future__ import annotations

import re

#: clause boundaries inside a sentence
CLAUSE = re.compile(r"[，,；;：:、~～…]+|(?<=[了吧啊呀])\s+(?![A-Za-z0-9])|"
                    # an emoji closes what was said as a comma does ("过完生日就30了😭 三十而立个啥呀")
                    r"[\U0001F300-\U0001FAFF\u2600-\u27BF]+\s*")
#: a sentence that asks by its start or its end
QUESTION = re.compile(r"(?:吗|呢|么|吧)[\s]*$|"
                      r"^(?:请问|能不能|可不可以|可以帮|帮我|能帮|你能|你会|怎么|为什么|什么|哪)")
#: an interrogative inside a clause makes that clause a question (``asks``), unless the speaker says they do not
#: know it; 几 + a measure word asks ("几顿", "几岁"); 好几 / 这几 / 前几 / 过几 / 几十 / 几乎 do not, nor 不怎么 /
#: 没怎么 ("not much": "山也不怎么爬了"). The A-not-A
#: form asks by its shape, whatever the verb or adjective: one character, 不, the same character again ("贵不贵",
#: "去不去", "行不行", "喜不喜欢"; "不得不" and "越来越" are not of that shape)
INTERROGATIVE = re.compile(r"(?<![好这那前过没十])几(?![乎何十百千万率])[\u4e00-\u9fff]|多少|"
                           r"什么(?!都|也)|(?<![不没])怎么(?!也|都|样都)|哪(?:里|儿|个|些|家|位|种|款)|(?:去|在|到|从|上|买)哪(?!怕)|是不是|有没有|能不能|"
                           r"要不要|可不可以|好不好|对不对|([\u4e00-\u9fff])[不没]\1|"
                           # the colloquial ones: 啥 / 为啥 (什么, not 没啥 "nothing much", 啥都 "anything"), 咋 (怎么),
                           # 多久 / 多远 / 多大 (多少 of time, distance, size; not 没多久 "not long", nor 多伦多大学)
                           r"(?<![没])啥(?!都|也)|咋|(?<![没不])多(?:久|远|大(?!学)|长时间)")
#: an interrogative the speaker says they do not know ("不知道为什么，我最近老失眠") asks nothing
_NOT_ASKING = re.compile(r"(?:不知道|不清楚|忘了|不记得|搞不懂|说不清)\S{0,2}?(?:为什么|怎么|什么|哪\S|多少|几)")
#: a clause that ends as a question does (its particle), whatever it asks
_ASKS_AT_END = re.compile(r"(?:吗|呢|嘛|么)[\s~～]*$")
#: a clause that opens as a question or as a request to the assistant
_ASKS_AT_START = re.compile(r"^(?:请问|能不能|可不可以|可以帮|帮我|帮忙|能帮|你能|你会|麻烦你|怎么|为什么|什么|哪)")
#: what was heard, not what the speaker is or does: "听说吃素对身体好", "据说这边房租涨了"
HEARSAY = re.compile(r"^(?:听说|听人说|据说|网上说|都说|人家说|传说)")


def asks(clause: str) -> bool:
    """Whether ``clause`` (simplified) has an interrogative of its own (``INTERROGATIVE``): "你那边几点了", "这活累不
    累"; "不知道为什么我老失眠" does not ask."""
    return INTERROGATIVE.search(_NOT_ASKING.sub("", clause)) is not None


def asking(clause: str) -> bool:
    """Whether ``clause`` (simplified, lead words off) asks or requests: an interrogative (``asks``), a question
    particle at its end, or a question or request at its start."""
    c = clause.strip()
    return asks(c) or _ASKS_AT_END.search(c) is not None or _ASKS_AT_START.match(c) is not None


def spans(sentence: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` of each non-empty clause of ``sentence`` (boundaries ``CLAUSE``)."""
    out, at = [], 0
    for m in [*CLAUSE.finditer(sentence), None]:
        end = m.start() if m is not None else len(sentence)
        if sentence[at:end].strip():
            out.append((at, end))
        if m is not None:
            at = m.end()
    return out


def statement_part(sentence: str, lead: re.Pattern[str], *, asked: bool) -> tuple[int, int] | None:
    """The ``(start, end)`` of ``sentence`` (simplified) left once the requests that open it and the clauses that
    ask at its end are cut (``asking``, read after the ``lead`` words a clause opens with: 对了, 最近 ...); with
    ``asked`` (the sentence ended in ？) its last clause is cut as asking even when no word of it says so ("周末
    有空一起"). ``None`` when nothing is left; ``(0, len(sentence))`` when nothing asks."""
    parts = spans(sentence)
    if asked and parts:
        parts = parts[:-1]
    while parts and asking(lead.sub("", sentence[slice(*parts[-1])].strip())):
        parts = parts[:-1]
    while parts and _ASKS_AT_START.match(lead.sub("", sentence[slice(*parts[0])].strip())):
        parts = parts[1:]
    if not parts:
        return None
    return parts[0][0], parts[-1][1]
