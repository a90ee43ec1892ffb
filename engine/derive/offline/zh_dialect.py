"""Cantonese written in characters, read as Mandarin (issue #29 item 1: "我喺深圳返工" was no statement).

Users from Guangdong and Hong Kong write Cantonese: its function words and a few everyday verbs differ from Mandarin
(喺 = 在, 係 = 是, 唔 = 不, 冇 = 没, 咗 = 了, 嘅 = 的, 佢 = 他, 而家 = 现在, 返工 = 上班 ...). ``mandarin`` replaces
them by their Mandarin words of the same length, so the rules of ``zh`` read the sentence and every index into it
still holds in the user's own words, which the memory keeps. It runs before ``hanzi.simplified`` (which would make
係 the 系 of 关系). A closed class of words; characters shared with Mandarin (食, 睇 ...) are left as they are.
Pure: ``re`` only.
"""

from __future__ import annotations

import re

__all__ = ["mandarin", "standard_person"]

#: Cantonese -> Mandarin, each of the same length
_WORDS = {
    "而家": "现在", "宜家": "现在", "呢排": "最近", "日日": "天天", "屋企": "家里", "返工": "上班", "返学": "上学",
    "唔使": "不用", "唔好": "不要", "做嘢": "干活", "边度": "哪里", "点样": "怎样", "几时": "啥时",
    "喺": "在", "係": "是", "唔": "不", "冇": "没", "咗": "了", "嘅": "的", "佢": "他", "啲": "些", "嗰": "那",
    # the progressive 紧 after a verb of work or study ("做緊地產經紀": 做着), liking (钟意 / 中意: 喜欢), "can't take"
    # (食唔到辣: 吃不了辣), tomorrow / yesterday
    "做紧": "做着", "做緊": "做着", "读紧": "读着", "讀緊": "读着", "钟意": "喜欢", "鍾意": "喜欢", "鐘意": "喜欢",
    "食唔到": "吃不了", "食唔落": "吃不下", "聽日": "明天", "听日": "明天", "琴日": "昨天",
    "咩": "啥", "乜": "啥", "揾": "找", "畀": "给", "嚟": "来", "咁": "这", "噉": "这", "嘢": "东",
}
_PATTERN = re.compile("|".join(sorted(_WORDS, key=len, reverse=True)))


def mandarin(text: str) -> str:
    """``text`` with its Cantonese words (``_WORDS``) as Mandarin ones, of the same length: "我喺广州做会计" ->
    "我在广州做会计". Text without them is returned as it is."""
    return _PATTERN.sub(lambda m: _WORDS[m.group(0)], text)


def standard_person(text: str) -> str:
    """Northern first-person pronouns as 我, character for character: 俺 / 咱 (咱们 = 我们, 咱家 = 我家)."""
    return text.replace("俺", "我").replace("咱", "我")
