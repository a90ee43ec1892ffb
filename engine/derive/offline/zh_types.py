"""The memory type of a Chinese statement (issue #29 item 1; seed 004 types): what ``zh.zh_statements`` types a
sentence about the user as, by its words and the slots it fills. Pure: ``re`` only (``zh_directives`` for rules).
"""

from __future__ import annotations

import re

from memengine.engine.derive.offline import zh_directives

__all__ = ["HEALTH", "PLAN", "PREF", "memory_type", "skilled"]

#: a liking (or, with ``neg`` / ``averse``, a dislike): its object follows
PREF = re.compile(r"(?P<neg>不|不太|不怎么)?(?:喜欢|爱吃|爱看|爱喝|爱上了?|爱|讨厌|偏爱|更喜欢|超爱|迷上了?)|"
                  # an aversion is a negative liking: not bearing (受不了 / 忍不了), not used to (吃不惯 ...)
                  r"(?P<averse>(?:受|接受|忍|忍受)不了|[吃喝闻听看用]不惯|"
                  # food the user cannot take ("吃不了辣", "碰不得海鲜"; not a portion: "吃不了多少")
                  r"[吃喝碰沾]不[了得](?![多少完太这那几])|"
                  # a thing left out however little: "香菜一丁点都不要放", "葱花一点都别加" (a measure is no
                  # aversion: "不要放太多")
                  r"(?:一丁点|一点儿?|一点点|半点|丝毫)(?:都|也)?(?:不要|别|不能|不许)(?:放|加|搁|撒|碰|沾)|"
                  r"(?:千万|绝对|坚决)(?:不要|别)(?:放|加|搁|撒))|"
                  # devotion to someone: an idol followed for years, a die-hard fan ("追了二十年的偶像", "五月天的铁粉")
                  r"偶像|铁粉|死忠粉|(?<!网)粉丝|歌迷|影迷|书迷|追星|爱豆|"
                  # only this one now: "现在只喝黑咖", "只吃全麦面包" (a taste by what the user keeps to)
                  r"(?<![不])只(?:喝|吃|用|听|穿)(?![了过完掉])|"
                  # a taste said as who the user is: "无辣不欢" (no joy without it), "甜食控", "摄影发烧友"
                  r"无\S不欢|(?<=[\u4e00-\u9fff])控(?=$|[，。,]|那种|一枚)|发烧友")
#: the user's intention of something to do (seed 001 TASK "目标"): "我打算明年考研", "准备明年考研" (the subject
#: dropped), "我们准备明年去冰岛"; not what is
#: done or ready ("我准备了一桌菜", "我准备好了") nor a study in progress ("我在准备考N2")
PLAN = re.compile(r"^(?:(?:用户|我)们?)?(?:今年|明年|下个?月|下周|最近|现在|已经)?"
                  r"(?:打算|计划|决定|准备|预计)(?![了好过着])")
#: a condition by its class rather than its name: an inflammation (-炎: 鼻炎, 胃炎), a syndrome or disorder (-症:
#: 焦虑症), gout, eczema, stones, nodules, a protruding disc, a thyroid running fast or slow (not 炎热 / 症状)
_CONDITION_CLASS = (r"(?<=[\u4e00-\u9fff])炎(?![热夏炎黄])|(?<=[\u4e00-\u9fff])症(?![状])|痛风|湿疹|结石|结节|"
                    r"(?:间盘|腰椎|颈椎)突出|甲亢|甲减|三高|贫血|脂肪肝")
HEALTH = re.compile(r"过敏|不耐受|糖尿病|高血压|哮喘|偏头痛|怀孕|色盲|素食|吃素|纯素|清真|不喝酒|不吃|病|残疾|近视|"
                    r"戒|" + _CONDITION_CLASS)
_CONDITION = re.compile(r"过敏|不耐|糖尿病|高血压|哮喘|偏头痛|怀孕|色盲|病|残疾|近视|不吃(?:饭|东西)|" +
                        _CONDITION_CLASS)
#: what the user can do by its measure: a language with a level ("日语N1", "英语六级", "法语挺流利"), or years of
#: playing or practising ("弹古筝十几年了", "羽毛球我打了快十年了"; not 打工 / 打车, not living or working somewhere)
_PROFICIENT = re.compile(
    r"(?:[英日韩法德俄意西葡泰越粤]语|[英日韩法德俄中]文|普通话)[^，。,]{0,6}?"
    r"(?:N[1-5]|[A-C][12]|[一二三四五六七八]级|专[四八]|流利|精通|母语|一窍不通|很烂|入门|零基础|还行|还可以|不错|凑合|"
    r"熟练|一般)|"
    r"(?:[弹打练踢画跳唱拉吹写学](?![工车针卡])[了过]?[^，。,]{0,6}?|[^，。,]{1,6}?[弹打练踢画跳唱拉吹写学][了过]{0,2})"
    r"(?:快|差不多|将近|有|都)?(?:十几|好几|几|[一二两三四五六七八九十\d]+)多?年")
#: a certificate passed or obtained (a skill the user holds by its paper): "考了潜水AOW证", "拿到了CPA证书", "驾照考
#:下来了"; not a paper of another kind ("离职证明", "身份证", "证件照")
_CERTIFIED = re.compile(r"(?:考|考到|考下|考出|考过|通过|拿到|获得|取得)了?[^，。,]{0,10}?"
                        r"(?:证书|执照|驾照|资格证?|(?<![身份])证(?![明件]))|"
                        r"(?:证书|执照|驾照|资格证)(?:考|拿)(?:下来|到|过)了")
_SKILL = re.compile(r"在学|学习|自学|在练|练习|会说|会弹|会弹|会打|会写|准备考|考研|备考|打得|弹了|学了|改学")


def memory_type(body: str, slots: dict[str, str]) -> tuple[str, str]:
    """The memory type of a Chinese sentence ``body`` (its lead words off) with the user's ``slots``, and the rule
    that chose it: ``(type, rule)``, seed 004 types (RULE / TASK / PROFILE / FACT / PREFERENCE / SKILL)."""
    if "name" in slots:
        # what the user is called is who they are, asked for or told ("以后叫我杰哥"): one kind with the name it
        # replaces ("叫我阿杰就行"), so the newer name closes the older (blind s18 u-017, s19 u-019)
        return "PROFILE", "slot"
    if (zh_directives.opens_rule(body) or zh_directives.standing(body)) and not body.startswith("我") or \
            zh_directives.later_rule(body):
        return "RULE", "standing"
    if PLAN.match(body):
        return "TASK", "plan"
    if re.match(r"^(?:用户|我)是", body) and not PREF.search(body):
        return "PROFILE", "identity"
    # a condition is a stable fact (seed 001 "稳定事实"), a food avoided a preference (as blind sets s15-s18 take them)
    if _CONDITION.search(body):
        return "FACT", "health"
    if HEALTH.search(body):
        return "PREFERENCE", "diet"
    if slots.keys() & {"name", "lives_in", "works_at", "studies_at", "job", "age", "marital", "shift"}:
        return "PROFILE", "slot"
    if "favorite_team" in slots or PREF.search(body) or "最喜欢" in body or "夜猫子" in body:
        return "PREFERENCE", "preference"
    if _SKILL.search(body) or skilled(body):
        return "SKILL", "skill"
    if re.match(r"^(?:用户|我)是", body):
        return "PROFILE", "identity"
    return "FACT", "statement"


def cut_at(clauses: list[str], standing: bool) -> int | None:
    """Where a sentence's clauses are read apart, ``None`` for nowhere: in a standing rule's, before a lasting fact of
    the user's own (``fact_after_rule``); in another's, before a later clause that opens a rule ("回国了，以后温度用
    摄氏度就行": the news, then the rule, heldout_s28), so the rule is typed a rule."""
    if standing:
        return fact_after_rule(clauses)
    return zh_directives.rule_clause(clauses)


def fact_after_rule(clauses: list[str]) -> int | None:
    """The index of the first clause after the first that states a lasting fact of the user's own: a condition
    ("不要放花生，花生油也不行，我花生过敏"), what they are ("我是回民") or what they can do; ``None`` for none. A
    standing rule's sentence is cut there and both parts read apart (``zh.zh_statements``), so the fact is not typed
    a rule (heldout_s27 "别放香菜", s28)."""
    for j, c in enumerate(clauses[1:], 1):
        if re.match(r"^(?:我|俺)", c) and (_CONDITION.search(c) or re.match(r"^我是", c) or skilled(c)) and \
                not zh_directives.opens_rule(c) and not zh_directives.standing(c):
            return j
    return None


def skilled(text: str) -> bool:
    """Whether ``text`` says what someone can do by its measure: a language with a level ("日语N1是过了", "英语口语
    还行"), years of playing or practising ("古筝弹了十几年了"), or a certificate passed ("考了潜水AOW证")."""
    return _PROFICIENT.search(text) is not None or _CERTIFIED.search(text) is not None
