"""The user's work in a Chinese clause (issue #29 item 1): what ``zh`` fills the ``job`` and ``works_at`` slots with.

People name their work by what they do rather than by 我是 X:

* 跑滴滴 / 跑外卖: a trade driven or delivered for;
* 做会计 / 做市场专员 / 做着地产经纪: 做 / 当 + an occupation;
* 升主管 / 升了大堂经理: promoted to one;
* 转去卖保险: a new line of work;
* 开了家花店 / 开咗间糖水铺: a shop of their own;
* 换到咖啡厅上班: another workplace (``works_at``).

Those are ``SLOTS`` (slot, pattern with group ``v``).

What follows the occupation is no part of it ("做会计每天对账对到眼花" is 会计): ``trimmed`` cuts a value at the
first word (jieba) that is a time, a number, a pronoun, an adverb or a particle; and a 做 / 当 that jieba reads
inside a word of its own ("做饭", "做作业", "当爹") is no verb of work. Pure: the tagger is passed in.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["JOB", "SLOTS", "trimmed"]

#: an occupation: a word ending as one does (师, 员, 工 ...) or one of the occupations named
JOB = (r"[^\s，。！？,的]{0,10}(?:师|员|员工|生|工|经理|主管|总监|老师|护士|医生|律师|会计|销售|司机|厨师|记者|设计师|"
       r"经纪|经纪人|代理|顾问|专员|助理|文员|客服|骑手|主播|导游|保安|保姆|月嫂|店长|行长|主任|"
       r"PM|pm|manager|engineer|实习生|老板)")
#: the trades one drives or delivers for, said as 跑 + the trade ("跑滴滴", "跑外卖", "跑业务"): the class of gig and
#: road work (not 跑步 / 跑马拉松 / 跑山: sport)
_TRADE = (r"滴滴|外卖|快递|业务|销售|保险|出租车?|网约车|货运|货拉拉|运输|长途|物流|专车|代驾|闪送|美团|饿了么|顺风车|"
          r"(?i:uber|grab)")
#: a place of business of one's own: 店 / 铺 / 馆 / 公司 / 工作室 ...
_SHOP = r"(?:店|铺|舖|馆|公司|工作室|诊所|餐厅|饭店|超市|民宿|厂|摊)"
SLOTS: tuple[tuple[str, str], ...] = (
    ("job", r"(?:^|现在|平时|一直|还在|在|主要|专职|兼职)跑\s*(?P<v>" + _TRADE + r")"),
    # promoted to an occupation: "升主管之后要带五个人", "上个月升了大堂经理"
    ("job", r"(?:^|现在|已经|刚|终于|我)升(?:职|任)?了?(?:为|成|到|做|当)?\s*(?P<v>" + JOB + r")"),
    # a new line of work by its verb: "现在转了去卖保险", "改行跑外卖了"
    ("job", r"(?:转行|改行|转了?)(?:去|来|做)?(?P<v>(?:卖|跑|搞|干|教)[^\s，。！？,]{1,8}?)(?:的|了|$|，|。)"),
    # a move to another workplace with the work done there: "换到咖啡厅上班之后", "转到物流公司上班了"
    ("works_at", r"(?:换|转|跳槽|跳)到了?\s*(?P<v>[^\s，。！？,]{1,16}?)\s*(?:上班|工作|打工|任职)"),
    # a shop of the user's own: "开了家花店", "辞职后开的花店", "在深水埗开了间糖水铺" (not "楼下新开的店")
    ("job", r"(?:^|我|自己|后|在[^\s，。！？,]{1,8}?)开(?:了|的|着)?(?:一)?(?:家|间|个|個)?\s*"
            r"(?P<v>[^\s，。！？,的了]{0,8}?" + _SHOP + r")"),
)
#: jieba tags that end an occupation's words (time, numbers, pronouns, adverbs, particles, directions, conjunctions)
_STOP = ("t", "m", "r", "d", "p", "c", "u", "x", "y", "f", "q")


def trimmed(body: str, start: int, value: str, tag: Callable[[str], list[tuple[str, str]]]) -> str | None:
    """The occupation ``value`` found at character ``start`` of ``body`` cut at its first word (by ``tag``, jieba)
    that no occupation holds (``_STOP``: "会计每天对账" -> 会计, "店员三年" -> 店员, "主管之后" -> 主管); ``None``
    when the verb before it is inside a word of jieba's ("做饭", "做作业", "当爹": no verb of work there)."""
    at = 0
    for w, _ in tag(body):
        if at < start < at + len(w):
            return None  # the value starts inside a word: its verb was part of that word
        if at >= start:
            break
        at += len(w)
    words = tag(value)
    out = ""
    for i, (w, flag) in enumerate(words):
        if i and (flag.startswith(_STOP) or w in ("之后", "以后", "后", "的时候")):
            break
        out += w
    return out.strip() or None
