"""What a Chinese clause says has ended (issue #29 item 1): the patterns ``zh.clause_slots`` reads ends with.

Each pattern of ``ENDS`` has a group ``v``, the thing that ended (the merge closes the user's active items that hold
it): 不再 X, 不 X 了, 戒 X, 放弃 X, 离职 / 辞职 (from X), X 走了 / 卖了, 把 X 卖了, a thing lost (X 被偷了 / 丢了).
``ENDS_SLOT`` are ends without an object and the slot each closes (辞职: where the user works). Pure: ``re`` and
a tagger passed in.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from memengine.engine.derive.offline.text import CJK

__all__ = ["ENDS", "ENDS_SLOT", "LATIN", "PREGNANCY", "PREMARITAL", "born", "ended_object", "married", "modifies_noun",
           "timeless"]

#: an English name, whole (its spaces ``_`` by ``zh_text.tight``): "Galaxy_S21" of "Galaxy S21 卖了"
LATIN = r"[A-Za-z][A-Za-z0-9_.+#-]{1,30}(?![A-Za-z0-9_.+#-])"
#: an ended state: what follows (or, for "X 走了", precedes) is what ended
ENDS = tuple(re.compile(p) for p in (
    r"(?:不再|不会再|再也不)\s*(?P<v>" + LATIN + r"|[^\s，。！？,了]{1,10})",
    r"(?:^|现在|已经)不\s*(?P<v>" + LATIN + r"|[^\s，。！？,了在用]{1,8}?)了",
    r"不用\s*(?P<v>" + LATIN + r"|[^\s，。！？,了]{1,8}?)了",
    # a degree no longer wanted ends what it qualifies: "不用那么正式了", "别这么详细" (the manner, not 那么)
    r"(?:不用|别|不要|不必)(?:再)?(?:那么|这么|太)(?P<v>[^\s，。！？,了]{2,4}?)(?:了|$|，|啦)",
    r"戒(?:掉)?了?(?P<v>" + LATIN + r"|烟|酒|糖|咖啡|[^\s，。！？,了掉]{1,4}?)(?:了|$|，|半|一|两|三)",
    r"放弃了?\s*(?P<v>" + LATIN + r"|[^\s，。！？,了]{1,8}?)(?:了|$|，)",
    r"(?P<v>" + LATIN + r"|[^\s，。！？,]{1,8}?)(?:先放一放|放下了|不学了|不玩了|不练了)",
    r"从\s*(?P<v>" + LATIN + r"|[^\s，。！？,]{1,10}?)\s*(?:离职|辞职|毕业|退学|跳槽)",
    r"不在\s*(?P<v>" + LATIN + r"|[^\s，。！？,]{1,10}?)\s*(?:了|工作|上班)",
    r"(?:left|quit|leave)\s+(?P<v>" + LATIN + r"|[A-Za-z][\w .&-]{0,20}?)(?:，|,|$|\s*了)",
    # the object said first (topicalised): "日语我放弃了", "咖啡我早就不喝了", "车我卖了"
    # ... and without its subject: "篮球不打了", "法语学不下去了" (two characters at least: "天不冷了" ends nothing)
    r"^(?P<v>" + LATIN + r"|[^\s，。！？,我]{2,8}?)(?:已经|早就|早|去年|上个月)?\S?不\S{1,3}了",
    r"^(?P<v>" + LATIN + r"|[^\s，。！？,我]{1,8}?)(?:我|用户)(?:已经|早就|早|去年|上个月)?"
    r"(?:放弃了|不\S{1,2}了|戒了|戒掉了|卖了|卖掉了|扔了|退了|停了)",
    r"^(?P<v>" + LATIN + r"|[^\s，。！？,我]{1,8}?)\s*(?:已经|早就|去年|上个月|上周)?"
    r"(?:戒了|戒掉了|走了|去世了?|卖了|卖掉了|调走了|离开了|辞职了|退休了|送人了|送走了|没了|丢了|"
    r"停用了?|弃用了?|卸载了|卸了|退订了|注销了|"
    # a thing lost to another's act or destroyed is gone as one sold: "电驴被偷了", "车被撞报废了", "手机弄丢了"
    r"被人?(?:偷|盗|抢|撞|砸|拖|扣|没收|收)\S{0,3}?了|弄丢了|报废了)",
    # the disposal construction: "把丰田卖了", "把烟戒了", "把健身卡退了" (what 把 takes is what ended)
    r"把\s*(?P<v>" + LATIN + r"|[^\s，。！？,]{1,10}?)\s*"
    r"(?:卖了|卖掉了|退了|退掉了|扔了|扔掉了|送人了|戒了|戒掉了|换掉了|停了|关了)",
    r"(?:跟|和|与)\s*(?P<v>[^\s，。！？,]{1,6}?)(?:分手|分了|掰了|离婚)",  # a partner left: "跟小周分了" ends 小周
))
#: an end with no object: which of the user's slots it closes
ENDS_SLOT = (("works_at", re.compile(r"^(?:用户|我)?(?:已经)?"
                                      r"(?:辞职|离职|被裁|失业|退休|换工作|换了(?:份|个)?工作|跳槽|[转换]了?工(?=$|了|啦|，|,|。|\s))")),
              ("studies_at", re.compile(r"^(?:用户|我)?(?:已经)?(?:研究生|硕士|博士|大学|本科|高中)?毕业")),
              # leaving the job leaves the occupation held there ("做会计" ended by "辞职后开了花店")
              ("job", re.compile(r"转行|改行|转正|^(?:用户|我)?(?:已经)?(?:辞职|离职|被裁|失业|退休)")))

#: a wedding done (领证 / 结婚 / 成婚 / 嫁 / 娶 ... 了): not one to come ("打算明年结婚", "下个月就要结婚了")
_MARRIED = re.compile(r"(?:领证|结婚|成婚|办了婚礼|嫁给了?[^，。！？,]{0,6}|娶了[^，。！？,]{0,6})了")
_TO_COME = re.compile(r"要|准备|打算|计划|快|想|明年|下个?月|下周|年底|月底|将")
#: the partner before a wedding, whom it ends (the partner is then 老公 / 老婆)
PREMARITAL = ("男朋友", "女朋友", "男友", "女友", "未婚夫", "未婚妻")


#: a child born: told by the child (儿子 / 闺女 / 宝宝 / 老二 ... + 满月 / 出生 / 百天 / 生了), or by the birth
#: (生了个儿子, 顺产, 剖腹产); not an illness (孩子生了病) nor a birth to come (老婆下个月生)
_CHILD = r"(?:儿子|女儿|闺女|宝宝|孩子|娃|老二|老大|二宝|大宝|小宝|男宝|女宝|双胞胎|龙凤胎|二胎|三胎)"
_BORN = re.compile(_CHILD + r"[^，。！？,]{0,3}?(?:满月|出生|出世|落地|百天|生了(?![病气])|生下来了|降生)|"
                   r"(?:生了|生下了?)(?:个|一个|一对)?" + _CHILD + r"|顺产了|剖腹产了|剖了(?:个|一个)?" + _CHILD)
#: what a birth ends (the merge closes the items holding it: "怀孕七个月了")
PREGNANCY = ("怀孕", "怀二胎", "怀三胎", "孕期", "孕吐")


def born(clause: str) -> bool:
    """Whether the user's ``clause`` tells of their child born ("闺女满月了", "上周生了个儿子"): it ends
    ``PREGNANCY``, and the child's clause is the user's fact, not another's."""
    return _BORN.search(clause) is not None


def married(clause: str) -> bool:
    """Whether the user's ``clause`` says they married ("我们领证了", "上周结婚了"): it ends ``PREMARITAL``."""
    m = _MARRIED.search(clause)
    return m is not None and _TO_COME.search(clause[:m.start()]) is None


def modifies_noun(words: list[tuple[str, str]], end: int) -> bool:
    """Whether the end verb that stops at character ``end`` of the tagged ``words`` (jieba ``(word, flag)``) is
    inside a noun or modifies the noun after it ("离职证明", "辞职信", "毕业证", "退休金": a paper or a pension, no
    leaving)."""
    at = 0
    for w, flag in words:
        if at < end < at + len(w) or at == end:
            return flag.startswith("n") and flag != "nr"
        at += len(w)
    return False


def timeless(value: str, tag: Callable[[str], list[tuple[str, str]]]) -> str:
    """An ended value without the time words said with it (by ``tag``, jieba: "年糕去年冬天走了": 年糕); "" when it
    is only time words ("下次不喝了" ends no 下次)."""
    return "".join(w for w, flag in tag(value) if flag not in ("t", "f")).strip()


def ended_object(value: str, tag: Callable[[str], list[tuple[str, str]]]) -> str:
    """The object of an ended one-character verb + object (by ``tag``, jieba: "干快递" of "不干快递了": 快递, held
    by "用户当快递员")."""
    words = tag(value)
    rest = value[len(words[0][0]):] if words and words[0][1].startswith("v") and len(words[0][0]) == 1 else ""
    return rest if len(rest) >= 2 and CJK.search(rest) else ""
