"""How many of a thing the user has, in Chinese (issue #29 item 1): "家里三只猫", "我养了两条狗", "就一个孩子" count a
thing; a later total counts it anew, however the change is told — "小区又捡了两只小猫，五只了" (the total names no
noun: it counts the thing of its measure named before it), "现在三条狗了", "两个孩子差六岁" (after "就一个孩子") — so it
supersedes the old count (seed 002 §2.2 "冲突的记忆 → 保留最新"). An addition alone ("又捡了两只小猫": 又 / 再 / 新 / 多
before the count, or a verb of getting one more) is no total, and a count of another's ("我妹家两只猫") not the user's.

The slot is ``count:<head>``, the head the last character of the counted noun (猫 of 小猫 / 猫, 狗 of 小狗, 子 of 孩子),
so a diminutive or a longer name of the thing counts the same thing; its value is the number with its measure.
Pure regular expressions over the text; read in ``merge.attribute_slots`` for both a candidate and a stored item.
"""

from __future__ import annotations

import re

from memengine.engine.derive.offline.zh_people import ANOTHER
from memengine.engine.derive.offline.zh_questions import CLAUSE

_NUM = r"(?:\d+|[一二两三四五六七八九十]+)"
#: measures of a thing one has: animals, vehicles and machines, people and things counted one by one
_MEASURE = r"(?:只|条|头|匹|辆|台|部|个|位|套)"
#: a count of a noun: "三只猫", "两个孩子", "五只小猫"
_COUNTED = re.compile(rf"(?P<n>{_NUM})\s*(?P<m>{_MEASURE})(?P<noun>[\u4e00-\u9fff]{{1,4}}?)"
                      rf"(?=[了啊呀呢吧,，。！!？?\s]|差|都|在|是|一起|$)")
#: a count without a noun, the whole clause ("五只了", "现在三个了"): the thing of its measure named before
_BARE = re.compile(rf"^(?:现在|已经|一共|总共|都|就)*(?P<n>{_NUM})\s*(?P<m>{_MEASURE})(?:了|啦)?$")
#: what says the count is an addition, not a total: more, again, new, or getting one
_ADDED = re.compile(r"(?:又|再|新|多|还)[^，,。]{0,4}$|(?:捡|领养|收养|添|买|入|送)(?:了|回)?[^，,。]{0,2}$")
#: what is no thing of the user's: a time or a count of times ("三个月", "两个小时", "一个人")
_NOT_THING = re.compile(r"^(?:月|小时|星期|礼拜|钟头|晚上|人|多|半)")
_WRAP = re.compile(r"^用户(?:说|要求)[:：]\s*[“\"]?|[”\"]$")


def counts(text: str) -> dict[str, str]:
    """``{"count:<head>": "<n><measure>"}`` for each thing ``text`` gives the user's total of; ``{}`` when none."""
    out: dict[str, str] = {}
    named: dict[str, str] = {}  # measure -> head of the last noun counted with it
    for clause in CLAUSE.split(_WRAP.sub("", text.strip())):
        clause = clause.strip()
        if not clause or ANOTHER.match(clause):
            continue
        if "家" in clause and re.search(r"^(?:我|用户)?(?:的)?[^我用家]{1,3}家", clause) and \
                not re.match(r"^(?:我|用户)(?:们)?家|^家里", clause):
            continue  # "我妹家两只猫": another's household
        bare = _BARE.match(clause)
        if bare is not None:
            head = named.get(bare.group("m"))
            if head:
                out[f"count:{head}"] = bare.group("n") + bare.group("m")
            continue
        for m in _COUNTED.finditer(clause):
            noun = m.group("noun").removeprefix("小")
            if not noun or _NOT_THING.match(noun):
                continue
            named[m.group("m")] = noun[-1]
            if not _ADDED.search(clause[:m.start()]):
                out[f"count:{noun[-1]}"] = m.group("n") + m.group("m")
    return out
