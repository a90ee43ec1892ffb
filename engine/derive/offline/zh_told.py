"""What a Chinese sentence tells, and what it only passes by (issue #29 item 1): the clauses of the moment and the
questions left out of what it tells, a mood of the day or a negated attribute left out of what is kept.

Split from ``generalise`` (module size); used by its learned-reader and kept-words paths.
"""

from __future__ import annotations

import re

from memengine.engine.derive.offline import zh_questions
from memengine.engine.derive.offline.hanzi import simplified
from memengine.engine.derive.offline.text import CJK

#: a Chinese sentence of the moment: a plan or wish (打算, 准备, 想要), a day-bound time (今天, 明天, 下个月, 这周末),
#: something just done (刚才, 刚刚) or a mood (好累, 好烦): short-lived, as ``verbatim_en.of_the_moment`` in English
MOMENT = re.compile(r"打算|计划|准备|想要|希望|要去|今天|今晚|今早|明天|后天|昨天|昨晚|刚才|刚刚|待会|一会儿|马上|"
                    r"下周|下个?月|下星期|这周末|这个周末|好累|好烦|郁闷|难受|"
                    # something just finished or begun ("刚刷完《繁花》", "刚看完", "刚到家")
                    r"刚[\u4e00-\u9fff]?完|刚(?:看|刷|到|下|回)")


def told(sentence: str) -> str:
    """A Chinese ``sentence`` without its clauses (``zh_questions.spans``) of the moment (``MOMENT``) or that
    ask (``zh_questions.asking``): what it tells ("今晚想做个凉拌牛肉，教我一下，别放香菜啊，那玩意儿我闻着就想吐" ->
    "教我一下，别放香菜啊，那玩意儿我闻着就想吐"); the sentence itself when nothing or everything is left."""
    read = simplified(sentence)
    kept = [sentence[a:b].strip() for a, b in zh_questions.spans(sentence)
            if not MOMENT.search(read[a:b]) and not zh_questions.asking(read[a:b])]
    said = "，".join(kept)
    return said if kept and len(CJK.findall(said)) >= 4 else sentence


#: an attribute the user says they do not have ("没结婚", "没小孩", "不抽烟", "从来没去过日本"): a negation holds no
#: value to keep, and a reader of the kept words would meet the attribute's word without its 没
_NEGATED_ATTRIBUTE_ZH = re.compile(r"(?:没|不|从没|从来没|还没|并没)有?(?:结婚|结过婚|小孩|孩子|娃|对象|男朋友|女朋友|"
                                   r"抽烟|抽过烟|喝酒|吸烟|去过|养过?|开车|考驾照|驾照)")

#: a mood of the day: the day named and a feeling of it ("今天emo了，啥都不想干", "就今天摆烂一天"); the day's news is
#: not one ("今天拆石膏了！", "今天在川大报到了")
_DAY_MOOD_ZH = re.compile(r"(?:今天|今晚|今早|这会儿|此刻).*?(?:emo|摆烂|躺平|破防|心累|好累|好烦|烦死|郁闷|"
                          r"难受|不想(?:干|动|上班|学|出门)|啥都不想)|(?:emo|摆烂|躺平|破防|心累).*?(?:今天|今晚|一天)",
                          re.I)


def passing(sentence: str) -> bool:
    """Whether a Chinese ``sentence`` that no rule typed (``zh_types`` "statement", a FACT in the user's words) is a
    mood of the day (``_DAY_MOOD_ZH``) or an attribute negated (``_NEGATED_ATTRIBUTE_ZH``: "沒結婚，也沒小孩"):
    nothing lasting to keep (heldout_s22-s26 none cases)."""
    read = simplified(sentence)
    return _NEGATED_ATTRIBUTE_ZH.search(read) is not None or _DAY_MOOD_ZH.search(read) is not None
