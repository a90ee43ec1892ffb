"""Chinese first-person statements -> typed memories, their attribute slots and the states they end (issue #29).

There is no Chinese spaCy pipeline, so a Chinese sentence is segmented and tagged with jieba (``rjieba.tag``, the
Rust jieba with its dictionary inside the wheel, as ``projections.segment``) and read clause by clause (clauses end
at ， ； ： and the like):

* a clause is about the user when its subject is 我 / 我们 / 我家 / 我的 X (after discourse and time words:
  对了, 其实, 现在, 最近 ...), or when it has no subject of its own and follows such a clause or states one of the
  user's attributes (Chinese drops the subject: "涨工资了，现在月薪两万");
* what it means is read from its predicate: where the user lives (住在 / 搬到 / 定居在 / 在 X 生活), works
  (在 X 工作 / 上班, 入职, 加入), what they are (我是 X: an occupation when X is one, else identity), name
  (我叫 / 叫我), age (N 岁), marital state, the car they drive (开), the tool they use (用 / 换成), a quantity
  (月薪 / 房租 / 通勤 / 体重 ... N unit: the slot is the words before the number, the unit when there are none),
  a role held by someone (组长 / 经理 是 / 叫 X), a favourite (最喜欢的 X 是 Y, 支持 X);
* an ended state: 不再 X, 不 X 了, 戒 X, 放弃 X, 离职 / 辞职 (from X), 毕业, X 走了 / 卖了 / 调走了, 不用 X 了:
  ``ends`` holds what ended, so the merge closes the user's active items that hold it.

* whose clause it is: one led by another (他 / 她, 我老公, 我同事: ``about_another``) or negated (我不住在北京)
  fills none of the user's slots; the clauses that ask or request are cut (``zh_questions``); a fronted object
  ("芒果我不能碰") or a subjectless clause of habit or the present ("现在只喝苏打水") is the user's; 俺 / 咱 are 我.

The memory keeps the user's own words with 我 turned to 用户 ("用户在腾讯工作，做后台开发。"); a sentence whose
subject is not the user (an elided one, "老张调走了，新组长是小刘") is quoted as said (用户说："..."). So nothing is
paraphrased away, and ``slots`` re-reads the same text later to find the attribute a newer statement contradicts.

Pure: the segmenter is deterministic; no clock, no I/O beyond loading the dictionary once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

import msgspec

from memengine.engine.derive.offline import quantities, zh_directives, zh_ends, zh_people, zh_types, zh_work
from memengine.engine.derive.offline.hanzi import simplified
from memengine.engine.derive.offline.text import CJK
from memengine.engine.derive.offline.zh_dialect import mandarin, standard_person
from memengine.engine.derive.offline.zh_people import ANOTHER, PERSON, ROLE_HELD, ROLE_WORD, antecedent, pronoun_at
from memengine.engine.derive.offline.zh_questions import CLAUSE, HEARSAY, QUESTION, asks, statement_part
from memengine.engine.derive.offline.zh_text import clean_value, tight

_SENT_END = re.compile(r"[。！!？?\n]+")
#: discourse words that open a clause
_DISCOURSE = (r"对了|顺便(?:说|提|讲)?(?:一下|一句|一声)?|顺带一提|话说|说起来|补充一下|插一句|"
              r"说(?:一下|个事|件事)|其实|另外|还有|哈哈+|嗯+|哦|噢|唉|啊|说实话|老实说|"
              r"跟你说|告诉你|btw|BTW|by the way")
#: words that only hand the turn over ("by the way", "actually"): the memory does not keep them (time words it keeps);
#: set off by a comma or before the subject, so a verb is never cut ("还有一只猫" keeps its 还有)
_DISCOURSE_LEAD = re.compile(r"^(?:(?:" + _DISCOURSE + r")(?:[，,\s!！]+|(?=[我俺咱])))+")
#: words before the subject that only set the scene: discourse and time words
_LEAD = re.compile(r"^(?:(?:" + _DISCOURSE + "|"
                   r"现在|最近|目前|如今|这阵子|前阵子|前段时间|前几天|年初|年底|月初|月底|今年|今天|上个月|上周|去年|前不久|刚刚|刚|已经|终于|后来|毕业以后|"
                   r"搬家以后|以前|之前|好消息|大新闻)[，,\s!！]*)+")
_OTHER_SUBJECT = re.compile(r"^(?:你|您|他|她|它|(?:这|那)(?!个月|阵子|段时间|几天|两天|几个月|周|星期|学期|次|回)|"
                            r"大家(?!都叫我)|有人|别人|谁|什么|怎么|为什么|哪)")
_NUM = r"(?:\d+(?:[.,]\d+)?[kKwW万千]?|[零〇一二两三四五六七八九十百千万半]+)"
#: (a dose's units before the others: "50微克", "500mg" is an amount of a medicine, ``quantities.zh_key``)
_UNIT = r"(?:" + quantities.ZH_DOSE + r"|个小时|小时|分钟|公里|公斤|千克|斤|岁|块钱|块|元|次|年|个月|天|分|k|K)?"
#: the user moved by another: 把 + 我 / 我们 / 用户 (+ a few words: "整个组") + a verb of placing + 到 / 去 / 回
_MOVED_ME = r"把(?:我|用户)们?[^，。！？,]{0,6}?(?:调|派|转|外派|分配|安排|借调)(?:到|去|回)了?"
#: ... or makes the user move: "公司让我 relocate 到 Tokyo 了", "领导派我去成都"
_SENT_ME = r"(?:让|派|叫|安排)(?:我|用户)们?\s*(?:搬|调|外派|转|去|(?i:relocate|move|transfer))\s*(?:到|去|回|to)?"
_LATIN = zh_ends.LATIN
#: what another gives the user is the user's: "朋友送了我一只布偶猫", "公司给我配了一辆车" (送 / 给 / 寄 / 配 + 我 + a
#: measure of one thing)
_GIVEN_ME = r"(?:送|给|寄|借|配)(?:了|给)?(?:我|用户)(?:配|买|寄|送)?了?(?:一|个|只|条|台|辆|件|本|张|部)"
_JOB = zh_work.JOB
#: (slot, pattern with group v): what a clause says about the user, first match per slot wins
_SLOTS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((k, re.compile(p)) for k, p in (
    ("name", r"(?:^我叫|我的名字(?:是|叫)|^我名字叫|叫我|^用户叫)\s*(?P<v>[^\s，。！？,]{1,12}?)"
             r"(?:就行|就好|吧|$|，|。)"),
    # where the user's home is: "我家在沈阳", "咱家住在道里区" (老家 is where they come from: not this)
    ("lives_in", r"^(?:用户|我)(?:们)?家(?:住)?在\s*(?P<v>[^\s，。！？,在]{1,12}?)(?:$|，|。|市|区|了)"),
    ("lives_in", r"(?:住在|(?<![欢爱想要])住(?![着过惯得不])|定居在|定居|生活在|搬到了?|搬去了?|搬来了?|搬回了?|"
                 r"落户在?|(?i:relocated?|moved?)\s*(?:到|去|回|to)\s*)"
                 r"\s*(?P<v>[^\s，。！？,了]{1,16}?)"
                 r"(?:了|市|区|，|。|$|生活|住|的)"),
    ("lives_in", r"^(?:用户|我|我们)?(?:现在)?在\s*(?P<v>[^\s，。！？,在]{1,12}?)\s*生活"),
    ("lives_in", r"^(?:用户|我|我们)?(?:现在|目前)?人在\s*(?P<v>[^\s，。！？,在]{1,12}?)(?:了|$|，|。)"),
    ("works_at", r"在\s*(?P<v>" + _LATIN + r"|[^\s，。！？,在]{1,16}?)\s*(?:工作|上班|打工|任职|实习|做|当)"),
    # starting at an employer: "下个月去联发科报到", "下周去腾讯入职"
    ("works_at", r"(?:去|到)\s*(?P<v>[^\s，。！？,去到]{1,16}?)\s*(?:报到|入职)"),
    # code-switched joining verbs of developers ("上周 onboard 到 Shopee", "join 了字节") as 入职
    ("works_at", r"(?:入职了?|加入了?|跳槽到了?|(?i:onboard|join)(?:了)?到?)\s*(?P<v>[^\s，。！？,]{1,16}?)"
                 r"\s*(?:工作|上班|$|，|了|。)"),
    # a study state without a school ("我在读研"): graduating ends it as it ends a school
    ("studies_at", r"^(?:用户|我)?(?:现在|目前|还)?在(?P<v>读研究生|读研|读博士?|读大学|读本科|读高中)"),
    # the user moved by their employer, said without who moved them ("刚调到成都分公司", "我被调去总部了")
    ("works_at", r"^(?:用户|我)?(?:被|已经)?调(?:到|去|回)了?\s*(?!夜班|白班|早班|晚班|中班|\d)"
                 r"(?P<v>[^\s，。！？,]{1,16}?)(?:了|$|，|。|工作|上班)"),
    # another moves the user (the disposal construction with the user as its object): "公司把我调到了杭州",
    # "领导把我派到了成都分公司", "把我们整个组转到了上海" — where the user works now (a shift is its own slot)
    ("works_at", _MOVED_ME + r"\s*(?!夜班|白班|早班|晚班|中班)(?P<v>[^\s，。！？,]{1,16}?)(?:了|$|，|。|工作|上班)"),
    # a year or level of study ("在读大三", "研一", "读博三了", "念硕士班", "浙大大四的学生"); not "大一点", "初一回家"
    ("studies_at", r"(?:^(?:用户|我)?|在读|读|念|上)\s*(?:现在|目前|今年|还)?\s*(?:在读|读|念|上|是)?\s*"
                   r"(?P<v>(?:大|研|博|高|初)[一二三四五六]|硕士班|博士班)(?:了|$|，|。|的|生)"),
    ("studies_at", r"是\s*(?P<v>[^\s，。！？,的是]{2,10}?)的?(?:学生|研究生|本科生|博士生)"),
    ("studies_at", r"(?:在\s*(?P<v>[^\s，。！？,在]{1,12}?)\s*(?:上学|读书|念书|"
                   r"读研究生|读研|读博士?|读大学|读本科|"
                   # a degree programme, its field before it in Latin or Chinese ("在 NUS 读 CS master", "读 MBA")
                   r"(?:攻读|读|念)\s*(?:[A-Za-z]{1,8}\s*|[\u4e00-\u9fff]{1,4})?(?i:master'?s?|phd|mba|msc|"
                   r"硕士|博士|本科|研究生))|在读(?P<v2>大学|研究生|高中|博士))"),
    ("job", r"(?:^|现在|^用户|^我)是(?:一名|一个|一位|个)?\s*(?P<v>" + _JOB + r")(?:$|，|。|了)"),
    # working somewhere as one: "我在广州做会计" (not "在家做饭": the job is a word of one)
    ("job", r"在[^\s，。！？,在]{1,16}?做\s*(?P<v>" + _JOB + r")(?:$|，|。|了|的)"),
    # (做 + a result is no job: "做完全飞秒" is done with something; nor 做 + a measure: "做个干锅花菜" makes a dish)
    ("job", r"(?:^|现在|是|转行了?|改行|转了?)(?:做|当)着?(?![完好过掉]|个(?!体)|点|些|一[道顿份个下])"
            r"\s*(?P<v>[^\s，。！？,]{1,16}?)(?:的|了|$|，|。)"),
    ("job", r"在[^\s，。！？,在]{1,16}?当\s*(?P<v>[^\s，。！？,]{1,10}?)(?:的|了|$|，|。)"),
    *zh_work.SLOTS,
    # what the user eats (one diet at a time): "吃素" / "素食者" / "纯素" / "吃肉" / "什么都吃"; not "不吃肉"
    # (starting on animal food ends a meatless diet: "现在开始吃鱼了", "开始吃seafood了")
    ("diet", r"(?<!不)(?P<v>纯素|全素|蛋奶素|素食者?|吃素|吃肉|荤素都吃|什么都吃|生酮|低碳水|(?i:vegetarian|vegan)|"
             r"开始吃(?:鱼|肉|海鲜|荤|鸡肉?|牛肉|猪肉|羊肉|虾|蛋|(?i:seafood|meat|fish|chicken)))"),
    ("marital", r"(?P<v>单身|已婚|结婚了|订婚了?|离婚了?|离异|丧偶|离过婚|二婚|再婚|复婚了?|恋爱了|分手了|"
                r"有(?:女朋友|男朋友|对象)了?)"),
    ("drives", r"(?:开的是|开着|开一辆|^(?:用户|我)?(?:现在)?开(?![了心始学店会车的]))"
               r"\s*(?P<v>" + _LATIN + r"|[^\s，。！？,]{2,16}?)(?:$|，|。|了|上班)"),
    ("uses", r"(?:用的是|在用|换成了?|改用|(?i:switch(?:ed)?)\s*(?:到|成|to)\s*|"
             r"(?:彻底|已经|全面)?转(?:到|向|成)?了?(?=\s*[A-Za-z]))"
             r"\s*(?P<v>" + _LATIN + r"|[^\s，。！？,]{1,16}?)(?:$|，|。|了)"),
    # a Latin product name after 用, whatever the clause goes on with ("我一直用 VS Code 写代码")
    ("uses", r"^(?:用户|我)(?:现在|都|一直|主要|平时|一般|还是)*用了?"
             r"\s*(?:[零〇一二两三四五六七八九十\d]+(?:个)?(?:年|月))?"
             r"\s*(?P<v>[A-Za-z][A-Za-z0-9_.+#-]*)"),
    ("uses", r"^(?:用户|我)(?:现在|都|一直|主要|平时|一般|还是)*用\s*(?P<v>[^\s，。！？,]{1,16}?)(?:$|，|。)"),
    ("shift", r"(?:上|下了?|调到了?|换到了?)\s*(?P<v>夜班|白班|早班|晚班|中班)"),
    ("favorite_team", r"(?:最喜欢的球队是|更?支持)\s*(?P<v>[^\s，。！？,的]{1,10}?)(?:队|了|$|，|。)|"
                      r"是(?P<v2>[^\s，。！？,的]{1,10}?)队?的(?:球迷|粉丝)"),
    ("favorite", r"最喜欢的(?P<k>[^\s，。！？,是]{1,6})是\s*(?P<v>[^\s，。！？,]{1,16})"),
))
#: an age without 岁, framed by the year or a birthday: "我今年29", "过完生日就30了", "今年都三十六了" (read with the
#: clause's time words, which name the frame)
_AGE = re.compile(r"(?:今年|过完生日|过了生日|生日一过|满)(?:就|都|已经|才)?\s*"
                  r"(?P<v>[1-9]\d|[二三四五六七八九]十[一二三四五六七八九]?)岁?(?:了|$|，|。)")
#: "月薪一万五", "房租现在三千五", "通勤只要二十分钟", "等级分是1200": the words before the number name the slot
_QTY = re.compile(r"(?P<k>[^\s，。！？,\d零〇一二两三四五六七八九十百千万半]{0,12}?)"
                  r"\s*(?:现在|已经|只要|要|是|为|有|大概|约|才)*"
                  r"\s*(?<![A-Za-z0-9_.])(?P<v>" + _NUM + r")\s*(?P<u>" + _UNIT + r")")
_QTY_DROP = re.compile(r"用户|我们|我的|我|的|现在|已经|只要|要|是|为|有|大概|约|才|每天|每周|最近|今年|今天|"
                       r"满|了|都|也|还|改成|"
                       r"一共|大约|差不多|终于|减肥成功|涨工资|涨价|上个月")
#: how often: every day / week / month / year, daily, every N days ("每天", "每周", "天天", "每隔三天")
_FREQ = re.compile(r"(?P<f>每(?:隔)?[零一二两三四五六七八九十\d]*(?:天|日|晚|周|星期|个?月|年)|天天)")
_RULE_START = zh_directives.RULE_START


class ZhStatement(msgspec.Struct, frozen=True):
    """One Chinese sentence about the user: ``text`` (the user's own words, 我 -> 用户, or quoted), the memory
    ``memory_type``, ``slots`` ({slot: value}, ``slots``), ``ends`` (what it says ended), ``rule`` (which reading:
    slot / preference / health / skill / standing / statement) and the source ``sentence``."""

    text: str
    memory_type: str
    slots: dict[str, str]
    ends: list[str]
    rule: str
    sentence: str


@lru_cache(maxsize=1)
def _tagger() -> Callable[[str], list[tuple[str, str]]]:
    import rjieba  # the dictionary loads on first use (~0.15 s)

    return rjieba.tag


#: where an item that superseded another when unsure (``zh_revision.combined``) starts the older item's words
EARLIER = "；此前："


def current_part(text: str) -> str:
    """The newest statement of a combined text (before ``EARLIER``); the whole text otherwise."""
    return text.split(EARLIER, 1)[0]


def about_another(clause: str) -> bool:
    """Whether a clause's subject is someone else than the user: he / she, or one of the user's people ("我老公",
    "我妈", "用户的同事"), so its attributes are not the user's; one who moves the user ("他们把我调到了杭州") or gives
    them something is not."""
    body = _LEAD.sub("", clause).strip()
    # "他们把我调到了杭州": the other moves the user, the clause is about the user (as "我姐给了我一台 iPad" is)
    return ANOTHER.match(body) is not None and re.search(_MOVED_ME, body) is None and \
        re.search(_GIVEN_ME, body) is None and not zh_ends.born(body)


#: a negator right before what a slot pattern matched: "我不住在北京", "我没在腾讯工作" fill no slot
_NEGATED = re.compile(r"(?:不|没有?|未|别|并不|并没有?|从来?没有?|从来?不)(?:再|太|怎么|曾|是)?\s*$")


def tagged(text: str) -> list[tuple[str, str]]:
    """``text`` segmented and POS-tagged by jieba (``rjieba.tag``): ``[(word, flag)]``, flags as jieba's (n, ns, nr,
    nz, v, eng, ...)."""
    return _tagger()(text)


def _own(clause: str) -> bool:
    """Whether the clause's own subject is the user (after lead words)."""
    # "Kindle退出中国以后我换了掌阅": an event's time clause before the subject, without a comma
    body = re.sub(r"^[^，,。！？我]{2,16}?(?:以后|之后|的时候)(?=我)", "", _LEAD.sub("", clause).strip())
    # "你叫我阿杰就好": what the assistant is to call the user is the user's name
    if body.startswith(("我", "用户")) or re.match(r"^(?:大家都|朋友都|都|你|您)?(?:以后|就|直接|可以)*(?:叫|称呼)我|"
                                                r"^(?:I'm|I am|I|My|my)\b", body):
        return not re.match(r"^我(?:觉得|想问|想知道|猜|看|听说)", body)
    # "公司把我调到了杭州": another is the subject, the user the one moved; the statement is the user's
    if re.search(_MOVED_ME, body) or re.search(_GIVEN_ME, body) or re.search(_SENT_ME, body):
        return True
    # "作为一个糖尿病人": who the speaker is, as a frame; "家里那只橘猫": the household's pet or thing is the user's
    if re.match(r"^作为(?:一个|一名|一位|个|名)?|"
                r"^(?:我们)?家里(?:的|那|这)?[一两二三四五\d]?(?:只|条|台|辆|匹|头)|"
                r"^(?:我们)?家里的(?!事|人|情况)", body):
        return True
    # "以后他就是我老公了": who another is to the user is the user's own fact (their partner, their family)
    if re.search(r"是(?:我|用户)的?" + PERSON, body) is not None:
        return True
    return _topic_then_me(body)


#: what may open a clause before a topic: a stance word ("可惜芒果我不能碰", "其实海鲜我不吃")
_STANCE_TAGS = ("d", "c", "v", "l")
#: verbs of finding out that put the user's own clause after them ("上周发现我对芒果也过敏", "体检查出我有脂肪肝")
_FOUND = frozenset({"发现", "才发现", "查出", "检查出", "确诊", "才知道", "得知", "被确诊"})


def _topic_then_me(body: str) -> bool:
    """Whether 我 is the subject after a fronted object ("芒果我不能碰", "海鲜我一口都不吃": only nouns before it,
    after at most one stance word) or after a verb of finding out ("发现我对芒果过敏"); a verb before 我 that acts on
    the user ("妈妈让我早点睡") or a demonstrative ("这事我不知道") is neither."""
    words = [(w, f) for w, f in _tagger()(body) if w.strip()]
    while words and words[0][1] in ("t", "f"):
        words = words[1:]
    if not words or "我" not in [w for w, _ in words]:
        return False
    at = [w for w, _ in words].index("我")
    before = words[:at]
    if len(before) == 1 and before[0][0] in _FOUND:
        return True
    if before and before[0][1] in _STANCE_TAGS and len(before) > 1:
        before = before[1:]
    return 1 <= len(before) <= 2 and all(f.startswith("n") or f == "eng" for _, f in before) and \
        not re.match(r"^(?:我|我们)", words[at + 1][0] if at + 1 < len(words) else "")


#: what a perfective clause must name to be worth keeping ("知道了", "累死了", "买了它" name nothing): a noun (n*),
#: an abbreviation, a Latin word
_NAMED = ("j", "eng", "vn", "i")
#: what opens a clause before its predicate without being its subject: time (t), place words (f, s: "家里养了只鹦鹉"),
#: numbers and measures ("这个月起"), demonstratives
_BEFORE_PREDICATE = ("t", "f", "m", "q", "s")
#: a lead that says the clause is the speaker's present state: no 了 needed ("现在只喝苏打水", "最近在学韩语")
_NOW = re.compile(r"^(?:现在|最近|目前|如今|这阵子|这段时间|这几个月|平时|每天|每周|这个月起|从这个月起|今年起)")
#: adverbs of habit, repetition or addition early in a clause that say the speaker does it (no 了 needed: "上周又带回家
#: 一只兔子", "平时常去游泳")
_HABIT = frozenset({"又", "还", "也", "常", "经常", "常常", "一直", "总是", "已经", "都", "一般", "基本"})
#: measure words jieba tags as adverbs when alone ("有只鹦鹉": 只/d)
_MEASURES = frozenset({"只", "条", "台", "辆", "个", "头", "匹", "架", "部", "套"})
_DAILY = re.compile(r"^(?:每天|每日|每周|每晚|一天|一周|天天)\s*[一两二三四五六七八九十半\d]+\s*[杯瓶罐包根碗顿支盒听]")
#: a clause that asks the assistant for something is no statement ("推荐几款早餐", "帮我查查")
_ASKING_VERB = re.compile(r"^(?:推荐|帮|给我|教|告诉|写|查|说说|讲讲|翻译|介绍|列|来个|问)")


def _done_about_something(clause: str) -> bool:
    """Whether a subjectless clause reports something done or become (了), or the speaker's present state (opened
    by 现在 / 最近 / 平时 ..., ``_NOW``), and names a thing (a noun, a name, a Latin word), e.g. "领养了只柴犬",
    "刚换了小米14", "彻底转 Neovim 了", "现在只喝苏打水"."""
    body = _LEAD.sub("", clause).strip()
    if QUESTION.search(body) or asks(body) or _RULE_START.match(body) or _ASKING_VERB.match(body):
        return False
    words = [(w, flag) for w, flag in _tagger()(body) if w.strip()]
    marked = "了" in body or _NOW.match(clause.strip()) or any(w in _HABIT or w in _FOUND for w, _ in words[:4])
    # (每个 / 每周 are pronouns to jieba: "每个周末都去爬山" opens with its time)
    while words and (words[0][1] in _BEFORE_PREDICATE or words[0][0] in ("这个", "那个", "起", "从") or
                     words[0][1] == "r" and words[0][0].startswith("每")) and \
            not words[0][0].startswith("有"):
        words = words[1:]
    # a scene set before the verb without 在 ("小区又捡了两只小猫", "花鸟市场又买了两条鱼"): common nouns, then a verb
    # done to a counted thing, is where the speaker got it ("恒大又输了" counts nothing: a named thing doing something)
    scene = next((i for i, (_, f) in enumerate(words) if f != "n"), len(words))
    if 0 < scene <= 2 and words[scene:] and words[scene][1] in ("d", "v") and \
            re.search(r"了" + _NUM + r"?[只条台辆个头匹部套]", "".join(w for w, _ in words[scene:])):
        words = words[scene:]
    # what the speaker has: 有 + a count (or a measure: jieba glues one at times, "有台/q 钢琴") + a thing ("家里有两只
    # 猫"); "有道理", "有意思" count nothing
    has = len(words) > 2 and words[0][0] == "有" and (words[1][1] in ("m", "q") or words[1][0] in _MEASURES) or \
        len(words) > 1 and words[0][0].startswith("有") and words[0][1] in ("m", "q")
    if has or _DAILY.match(body):  # ... or how much of it a day: "每天一杯奶茶", "一天两包烟"
        return any(flag.startswith("n") or flag in _NAMED for _, flag in words[has:])  # 猫: one character will do
    if not marked:
        return False
    # it opens with what was done ("进了", "彻底转"), or with a thing that became so ("老毛病了"); a clause that opens
    # with a named thing doing something ("恒大今天又输了") is about that thing, not the user
    # (jieba glues a verb it does not know to its 了: "整了" is tagged as the particle)
    # jieba mis-tags a one-character verb before a Latin object ("换/nz Mac 了"): a single character before a
    # Latin word opens the clause as a verb does
    words = [(w, f) for w, f in words if w.strip()]
    opens_done = bool(words) and (words[0][1].startswith(("v", "d", "a", "p")) or
                                  len(words) > 1 and words[1][0] == "了" or
                                  len(words[0][0]) > 1 and words[0][0].endswith("了") or
                                  len(words[0][0]) == 1 and len(words) > 1 and words[1][1] == "eng" or
                                  # ... or before its complement or a second verb ("换/nz 到 全家 了", "换/nz 喝 美式")
                                  len(words[0][0]) == 1 and len(words) > 2 and
                                  (words[1][0] in ("到", "成") or words[1][1].startswith("v")) or
                                  # an English verb with a Chinese complement: "switch 到 CrossFit 了"
                                  words[0][1] == "eng" and len(words) > 1 and words[1][0] in ("到", "成", "了", "过"))
    # ... and tags an object as a verb ("考完/v 驾照/v 了", "又入坑露营了"): (adverbs) verb + word + 了: the word
    verb_at = next((i for i, (_, f) in enumerate(words) if not f.startswith("d")), len(words))
    # ... or splits a noun it does not know into characters ("改喝 拿/v 铁/n 了"): a noun ends the run, two or more
    # characters long
    done_object = len(words) - verb_at >= 3 and words[-1][0] == "了" and words[verb_at][1].startswith("v") and \
        CJK.search(words[-2][0]) is not None and \
        (len(words[-2][0]) > 1 or words[-2][1].startswith("n") and
         len("".join(w for w, _ in words[verb_at + 1:-1])) > 1)
    # (a thing counted names one, however short: "捡了一只猫", 只 + 猫)
    return opens_done and (done_object or
                           any((flag.startswith("n") or flag in _NAMED) and
                               (len(w) > 1 or i and (words[i - 1][1] in ("m", "q") or
                                                     words[i - 1][0][-1:] in _MEASURES))
                               for i, (w, flag) in enumerate(words)))


#: who may be the one with a condition in a clause without the user's subject: people ("好多人病了"), not the user
_SOMEONE = re.compile(r"人|大家|别人|朋友|同事|孩子|[他她]")
#: degree and repetition adverbs before a liking ("又迷上了", "真的超爱", "特别讨厌")
_DEGREE = re.compile(r"^(?:又|还|也|真的|真|特别|超级?|最|很|好|一直|越来越|挺|蛮|更|实在|巨|贼)*")


def _liking_of_mine(clause: str) -> bool:
    """Whether a subjectless clause opens with a liking or an aversion (``zh_types.PREF``, after degree adverbs) of
    something it names: the speaker's ("最近又迷上了露营", "超爱吃火锅"; Chinese drops the subject)."""
    body = _LEAD.sub("", clause).strip()
    body = _DEGREE.sub("", body, count=1)
    m = zh_types.PREF.match(body)
    # ... or a short topic before an aversion or a devotion ("香菜一丁点都不要放", "五月天的铁粉")
    m = m or next((t for t in zh_types.PREF.finditer(body) if 1 <= t.start() <= 10 and not t.group("neg") and
                   (t.group("averse") or not re.match(r"(?:喜欢|爱|讨厌|偏爱|更喜欢|超爱|迷上)", t.group(0)))), None)
    return m is not None and len(body) - m.end() + m.start() >= 2 and not (asks(body) or QUESTION.search(body))


def _skill_of_mine(clause: str) -> bool:
    """A subjectless skill by its measure (``zh_types.skilled``: "古筝弹了十几年了"), asking nothing: the speaker's."""
    body = _LEAD.sub("", clause).strip()
    return zh_types.skilled(body) and not (asks(body) or QUESTION.search(body) or _ASKING_VERB.match(body))


def _plan_of_mine(clause: str) -> bool:
    """Whether a subjectless clause states an intention (``zh_types.PLAN``: "准备明年考研", "打算下个月开始学游泳")
    that asks nothing: the speaker's."""
    body = _LEAD.sub("", clause).strip()
    return zh_types.PLAN.match(body) is not None and len(body) > 3 and not (asks(body) or QUESTION.search(body))


def _health_of_mine(clause: str) -> bool:
    """Whether a subjectless clause states a health condition (``zh_types.HEALTH``: an allergy, an intolerance, a
    disease) of no one named, so the speaker's: "对牛奶过敏", "体检查出来有点脂肪肝", "从小就有哮喘" (Chinese drops the
    subject of what the speaker has); a question about one ("对花粉过敏怎么办") or someone's ("好多人病了") is not."""
    body = _LEAD.sub("", clause).strip()
    return zh_types.HEALTH.search(body) is not None and not (QUESTION.search(body) or asks(body) or
                                                     _ASKING_VERB.match(body) or _RULE_START.match(body) or
                                                     _SOMEONE.search(body))


#: a near time: a clause set at it, kept nothing, is the occasion of the statement after it
_NEAR = re.compile(r"今天|今晚|明天|后天|今早|这周|本周|下周|下个?月|下星期|周末|待会|一会儿|马上|"
                   r"(?:星期|周)[一二三四五六日天]")
#: the formal first person at the start of a clause ("本人目前研一")
_SELF = re.compile(r"(?:(?<=^)|(?<=[，,；;：:]))\s*本人(?=[\u4e00-\u9fff])")


def _names_something(text: str) -> bool:
    """Whether ``text`` names a thing (a noun, a name, a Latin word of two or more letters): "我乳糖不耐" does,
    "我不太懂" does not."""
    words = _tagger()(text)
    # a thing counted names one, however short ("家里三只猫": 只/q 猫/n)
    return any((flag.startswith("n") or flag in _NAMED) and
               (len(w.strip()) > 1 or i and (words[i - 1][1] in ("m", "q") or words[i - 1][0][-1:] in _MEASURES))
               for i, (w, flag) in enumerate(words))


def clause_slots(clause: str) -> tuple[dict[str, str], list[str]]:
    """The slots a clause fills and what it says ended: ``({slot: value}, [ended words])``."""
    body = tight(_LEAD.sub("", clause).strip())
    m = re.match(r"(?:用户|我们|我)(?=\S)", body)
    # time and discourse words after the subject as before it, for ends without an object ("我去年毕业了" is
    # "我毕业了")
    plain = m.group(0) + _LEAD.sub("", body[m.end():]) if m else body
    out: dict[str, str] = {}
    if about_another(body):
        return out, []  # another's home, job or car is not the user's ("我老公调到上海了", "我爸开出租车")
    for key, pat in _SLOTS:
        if key in out:
            continue
        # the first said without a negation: "以后别叫我小王了，叫我王姐" names 王姐
        m = next((m for m in pat.finditer(body) if not _NEGATED.search(body[:m.start()])), None)
        if m:
            v = clean_value(m.group("v") or (m.groupdict().get("v2") or ""))
            if key == "job" and m.group("v"):
                v = clean_value(zh_work.trimmed(body, m.start("v"), m.group("v"), _tagger()) or "")
            if v and not (key == "job" and re.search(r"什么|哪", v)):
                k = f"favorite:{m.group('k')}" if key == "favorite" else key
                out[k] = v
    m = _AGE.search(tight(clause.strip()))
    if m and "age" not in out and not _NEGATED.search(clause[:m.start()]):
        out["age"] = m.group("v")
    words = _tagger()(body)
    if "lives_in" not in out and len(words) > 1 and words[0][0] in ("我们", "用户") and words[1][1] == "ns":
        out["lives_in"] = words[1][0]  # "我们成都这几天又闷又热": the place the user's "we" are of
    m = ROLE_HELD.search(body)
    role = ROLE_WORD.search(m.group("k").strip()) if m else None
    if m and role:
        out[f"role:{role.group(0).lower()}"] = clean_value(m.group("v"))
    for m in _QTY.finditer(body):
        v, unit = m.group("v"), m.group("u")
        frame = _QTY_DROP.sub("", m.group("k")).strip().lower()
        if not unit and not re.search(r"\d", v) and not (frame and len(v) >= 2):
            continue
        if unit == "岁" and not frame:
            out["age"] = v  # "我今年二十九岁", "我今天满三十岁了": the user's own age
        else:
            out[f"qty:{quantities.zh_key(frame, unit)}"] = f"{v}{unit}"
        break
    m = _FREQ.search(body)
    if m:
        # how often the user does something is a quantity of that doing: the slot is the first verb after the
        # frequency ("每周去两次 gym" / "改成每天去 gym": qty:去), its value the frequency with any count
        verbs = [w for w, flag in _tagger()(body[m.end():]) if flag.startswith("v")]
        if verbs:
            key = f"qty:{verbs[0]}"
            out[key] = m.group("f") + out.get(key, "")
    m = zh_types.PREF.search(body)
    if m:
        nouns = [w for w, flag in _tagger()(body[m.end():]) if flag.startswith(("n", "eng")) and len(w) > 1]
        if nouns:
            neg = bool(m.group("neg") or m.group("averse")) or "讨厌" in m.group(0)
            out[f"like:{nouns[0].lower()}"] = "neg" if neg else "pos"
    ends: list[str] = []
    for pat in zh_ends.ENDS:
        for m in pat.finditer(body):
            v = zh_ends.timeless(clean_value(m.group("v")), _tagger())
            if v and v not in ("用户", "我"):
                ends.extend(e for e in (v, zh_ends.ended_object(v, _tagger())) if e)
    ends.extend(zh_ends.PREMARITAL if zh_ends.married(plain) else ())
    ends.extend(zh_ends.PREGNANCY if zh_ends.born(plain) else ())
    for slot, pat in zh_ends.ENDS_SLOT:
        m = pat.search(plain)
        if m and not zh_ends.modifies_noun(_tagger()(plain), m.end()):
            ends.append(f"slot:{slot}")
    return out, ends


def _render(sentence: str, own: bool) -> str:
    # the discourse lead is dropped, not the time words (the same length simplified: the index holds in the original)
    lead = _DISCOURSE_LEAD.match(standard_person(simplified(mandarin(sentence))))
    if lead is not None and lead.end() < len(sentence):
        sentence = sentence[lead.end():]
    if not own:
        return f"用户说：“{sentence}”"
    body = standard_person(_LEAD.sub(lambda m: m.group(0), sentence))  # 俺 / 咱 are the user as 我 is
    # "我们公司" / "我们 team" is where the user works, not their family's; "我们家" is the household ("用户家家" not)
    text = re.sub(r"我[们們](?=\s*(?:公司|单位|组|团队|部门|学校|班|实验室|项目|老板|领导|组长|经理|主管|"
                  r"[Tt]eam|[Mm]anager|[Bb]oss|[Ll]ead))", "用户", body)
    text = re.sub(r"我[们們]家?", "用户家", text)
    text = re.sub(r"(?<![自本])我", "用户", text)
    return text if re.search(r"[。！!？?]$", text) else text + "。"


#: an act of the moment, tried or done briefly ("我 search 一下", "我去查查看"): what the user does next, no fact
_TENTATIVE = re.compile(r"(?:一下|看看|试试|([\u4e00-\u9fff])\1看)(?:吧|哈|啊|呗|先)?\s*$")
#: how far back (characters) a 他 / 她 looks for the person it means
ANTECEDENT_CHARS = 300


def zh_statements(text: str, before: str = "") -> list[ZhStatement]:
    """The Chinese (or mixed) sentences of a user's ``text`` that say something lasting about them, one statement
    per sentence (its clauses about the user kept together, so an ended value stands beside the new one).

    A question, a request to the assistant ("帮我 ...") or chatter without a first-person clause or an attribute is
    skipped. Sentences without CJK characters are left to the English extractor. A sentence led by 他 / 她 is about
    the person the user named last (``zh_people``), in ``text`` or in ``before`` (what the user said just before:
    their previous turn, the turn's earlier sentences), and is kept as that person's."""
    out: list[ZhStatement] = []
    said_before = before  # what a leading 他 / 她 is read against: the text before it (tagged only then)
    for said in _SENT_END.split(text):
        said = re.sub(r"\s+", " ", said).strip()
        if not said or not CJK.search(said):
            continue
        raw_end = text[text.find(said) + len(said):][:1] if said in text else ""
        # the rules read simplified characters and the standard first person (俺 / 咱 of the north: "俺现在跑滴滴"); the
        # memory keeps the user's own words (same length, so the rules' indexes hold in the original)
        said = _SELF.sub("我", said)  # "本人目前研一": the formal first person is the user as 我 is
        sent = standard_person(simplified(mandarin(said)))
        at = pronoun_at(sent)
        # "她在读临床医学" after "我妹 ...": the sister's fact, in her name, named near (``ANTECEDENT_CHARS``: linear)
        who = antecedent(simplified(said_before[-ANTECEDENT_CHARS:]), tagged) if at is not None else None
        if who and at is not None:
            said, sent = said[:at[0]] + who + said[at[1]:], sent[:at[0]] + who + sent[at[1]:]
        said_before += "。" + sent
        cut = False
        # a standing instruction asked with a tag ("以后回答都用英文好吗？", "reply 我都用中文 ok？") asks for the rule,
        # nothing else: read without its tag, as one softened by 吧
        untagged = zh_directives.untagged(sent)
        if untagged is not None:
            said, sent, raw_end = said[:len(untagged)].rstrip(), untagged.rstrip(), ""
        # "帮我写邮件的时候，落款写小安": the task a rule stands on is no request to cut
        if not zh_directives.suggested(sent) and not zh_directives.standing(_LEAD.sub("", sent)):
            # a statement made on the way to a question or after a request ("最近开始练拳击了，护齿要买哪种", "帮我看看
            # 代码，我在字节做前端") is read without the clauses that ask (``zh_questions``), as any statement (a final
            # 吧 guesses or proposes: "我大概下个月搬去深圳吧" states nothing yet)
            part = statement_part(sent, _LEAD, asked=raw_end in ("？", "?") or sent.rstrip().endswith("吧"))
            if part is None:
                continue
            cut = part != (0, len(sent))
            if cut:
                said, sent = said[part[0]:part[1]].strip(), sent[part[0]:part[1]].strip()
                if QUESTION.search(sent):
                    continue
        # "我养了一条狗，叫旺财", "换了新经理，叫陈总": a name given in its own clause belongs to the one before
        joined = re.sub(r"[，,]\s*(?=叫(?!我))", "", sent)
        clauses = [c.strip() for c in CLAUSE.split(joined) if c.strip() and _LEAD.sub("", c.strip())]
        slots: dict[str, str] = {}
        ends: list[str] = []
        own_any = False
        keep = held = False  # held: a clause said what the user did, has or holds (not only "我不太懂")
        after_own = theirs = False
        first, last = -1, 0  # the first and last clauses kept: a near scene around them is no part of it
        for i, c in enumerate(clauses):
            if asks(c) or _TENTATIVE.search(c):
                after_own = theirs = False
                continue
            own = _own(c)
            # what was heard ("听说吃素对身体好") is no one's statement about the user, nor what follows it
            bare = _LEAD.sub("", c)
            elided = not own and not _OTHER_SUBJECT.match(bare) and not HEARSAY.match(bare)
            # a clause of another's (我妹 ..., 他 ...) and the subjectless ones after it ("我妹刚搬到深圳，在腾讯上班":
            # Chinese drops the subject it keeps) are theirs: kept as said, filling and ending none of the user's slots
            theirs = about_another(c) or (not own and not elided) or (theirs and elided)
            if theirs:
                keep |= own and not zh_people.OUTSIDER.match(bare)
                own_any |= own
                after_own = False
                continue
            s, e = clause_slots(c)
            # Chinese drops the subject of what the speaker did: a sentence that opens with a done thing about a
            # named thing ("上个月领养了只柴犬", "进了中石化", "老毛病了，痛风") is the user's, kept in their words
            done = elided and (i == 0 or not keep) and (_done_about_something(c) or _health_of_mine(c) or
                                                     _liking_of_mine(c) or _plan_of_mine(c) or _skill_of_mine(c))
            if own or done or (elided and (after_own or s or e)):
                first, last = (i if first < 0 else first), i
                held |= done or bool(s or e)
                slots.update(s)
                ends.extend(e)
                keep = True
            own_any |= own
            after_own = own or (after_own and elided)
        body = _LEAD.sub("", sent)
        standing = zh_directives.opens_rule(body) or zh_directives.standing(body) or zh_directives.later_rule(body)
        if (j := zh_types.cut_at(clauses, bool(standing))) and (k := sent.find(clauses[j])) > 0 and \
                (head := zh_statements(said[:k], said_before)):  # what comes before says something of its own
            out += head + zh_statements(said[k:], said_before)
            continue
        if not keep and not standing:
            continue
        if cut and not standing and not (held or _names_something(sent)):
            continue  # what is left before a question says nothing of the user's ("我不太懂，怎么弄")
        if first >= 0 and not standing and clauses[last + 1:] and \
                all(_NEAR.search(c) for c in clauses[last + 1:]) and (to := sent.rfind(clauses[last])) >= 0:
            # "在 NUS 读 CS master，今晚要交 assignment": tonight's homework is no part of where the user studies
            to += len(clauses[last])
            said, sent, clauses = said[:to], sent[:to], clauses[:last + 1]
        if first > 0 and not standing and all(_NEAR.search(c) for c in clauses[:first]) and \
                (start := sent.find(clauses[first])) > 0:
            # "下个月年会要表演节目，古筝弹了十几年了": next month's occasion is no part of a skill (nor a plan)
            said, sent, clauses = said[start:], sent[start:], clauses[first:]
        mtype, rule = zh_types.memory_type(_LEAD.sub("", sent), slots)
        first_own = _own(clauses[0]) if clauses else False
        out.append(ZhStatement(text=_render(said, first_own and own_any) if mtype != "RULE" else
                               ("用户要求：" + said + ("" if re.search(r"[。！!]$", said) else "。")),
                               memory_type=mtype, slots=slots, ends=sorted(set(ends)), rule=rule, sentence=said))
    return out


def slots(text: str) -> dict[str, str]:
    """The attribute slots of a stored Chinese memory text (as ``zh_statements`` rendered it): the user's own
    words are read again, clause by clause, with 用户 as the subject. ``{}`` for text without CJK."""
    if not CJK.search(text):
        return {}
    # a combined text (zh_revision) states its newest words first; 俺 / 咱 read as 我 as when it was said
    text = standard_person(simplified(mandarin(current_part(text))))
    body = re.sub(r"[，,]\s*(?=叫(?!我))", "", re.sub(r"^用户(?:说|要求)[:：]\s*[“\"]?", "", text).rstrip("”\""))
    out: dict[str, str] = {}
    theirs = False
    for c in (c.strip() for c in CLAUSE.split(body)):
        # as when it was said: a subjectless clause after another's is theirs ("用户妹刚搬到深圳，在腾讯上班")
        elided = not _own(c) and not _OTHER_SUBJECT.match(_LEAD.sub("", c))
        theirs = about_another(c) or (not elided and not _own(c)) or (theirs and elided)
        if not theirs:
            out.update(clause_slots(c)[0])
    return out
