"""Chinese standing instructions to the assistant without a marker of duration (issue #29 item 1; seed 004 §4 RULE).

``zh`` knows a standing instruction when it opens with 以后 / 今后 / 请 / 别 / 每次 ... and holds a marker. Users also
say it as a convention or a manner, with no marker at all:

* a **convention** for what the assistant writes: 都 / 一律 / 统一 / 全部 + 用 / 按 / 写成 ..., about the assistant's
  output — a topic (价格, 温度, 日期, 代码, 回答, 单位 ...) or a value that is a unit, currency, language or format
  (人民币, 公制, 摄氏度, 中文, Markdown ...): "金额都用人民币", "示例代码都用Go写". "平时都用微信支付" names no
  output of the assistant's: it is the user's habit.
* a **manner**: how the assistant talks or answers, with a comparative imperative 点 / 一点 / 些 / 一些: "说话直接点",
  "回答简短点", "解释得通俗点".
* a **negative manner**: 别 / 不用 / 不要 + (那么 / 跟我) + a manner word: "别那么啰嗦", "不用跟我客套".
* a **revision** of a convention: (还是 / 那就) 改成 / 改回 / 换成 + an output value: "还是改回中文吧".

A sentence whose subject is the user or someone else (我 / 我们 / 他 ...) is a statement, never an instruction.
``standing(body)`` answers for one sentence body (its discourse lead removed). Pure: ``re`` only.
"""

from __future__ import annotations

import re

from memengine.engine.derive.offline.zh_questions import INTERROGATIVE

__all__ = ["RULE_START", "later_rule", "opens_rule", "rule_clause", "standing", "suggested", "untagged"]

#: how a standing instruction opens (a duration, a polite request, a prohibition, "always"; English "please" in mixed
#: speech) and what marks one as lasting
RULE_START = re.compile(r"^(?:以后|今后|从现在起|从今以后|从现在开始|请|麻烦|别|不要|永远|总是|每次|记得|"
                        r"回答|给我|叫我|(?i:please|pls|plz)\b)")
_RULE_MARK = re.compile(r"以后|今后|从现在|永远|总是|每次|一直|别|不要|尽量|请|(?i:please|pls|plz)\b")
#: what the assistant is asked to do for the user: a 吧-softened "以后不喝咖啡了吧" is the user's own guess at a plan
_TO_ASSISTANT = re.compile(r"给我|帮我|为我|叫我|称呼我|提醒我|告诉我|跟我|和我|回答|回复|答复|推荐|总结|翻译|解释|写|"
                           r"说话|用(?:中文|英文|英语|简体|繁体|日语)|(?i:reply|answer|respond)")
#: a later time with a subject of its own states what will be ("以后他就是我老公了", "以后我们就是邻居了"): no
#: instruction ("以后我问你的时候都用中文" keeps 我 as the one who asks the assistant)
_STATED = re.compile(r"^(?:以后|今后)(?:[他她它]们?|(?:我|我们|咱们)就?是)")
#: a tag that turns a request into a question without asking anything else: "..., ok？", "...好吗", "...可以吗"
_TAG = re.compile(r"[，,\s]*(?:(?i:ok|okay)|好吗|好不好|好嘛|可以吗|可以不|可不可以|行吗|行不行|成吗)[？?]*\s*$")
#: a clause that reports a word said to or by another: what follows is their instruction, not the user's
_REPORTED = re.compile(r"(?:说|讲|告诉[他她]|跟[他她]说|问)\s*$")

_SUBJECT = re.compile(r"^(?:我|我们|咱|咱们|俺|他|她|他们|她们|它|用户|大家|别人)")
_CONVENTION = re.compile(r"(?:都|一律|统一|全部|全都|一概|通通|一般都|尽量)"
                         r"(?:用|以|按|按照|写成|换成|改成|换算成|标成|标|写|算)")
#: what the assistant writes, as a topic or as the value of a convention
_OUTPUT = re.compile(
    r"价格|价钱|金额|费用|货币|币种|单位|长度|重量|体重|身高|距离|温度|气温|时间|日期|时区|数字|数据|代码|示例|例子|回答|回复|答复|"
    r"解释|翻译|总结|摘要|标题|列表|格式|语言|称呼|文字|字体|表格|菜谱|食谱|注释|文档|变量名|命名|标点|"
    r"人民币|美元|欧元|英镑|日元|港币|公制|英制|公里|英里|公斤|千克|磅|摄氏|华氏|二十四小时|24小时|中文|英文|英语|简体|繁体|"
    r"粤语|日语|"
    # Latin names whole: "Go" is no output inside "Google" ("平时都用Google搜" is a habit)
    r"(?<![A-Za-z])(?:Markdown|markdown|JSON|json|Python|python|Java|Go|Rust|TypeScript|JavaScript|SQL)(?![A-Za-z])")
#: the assistant addressed before a manner ("你回答正式一点", "您以后说话简短点"): the manner is asked of it
_ADDRESSED = re.compile(r"^(?:你|您)(?:以后|今后|就|可以|能不能|能)*")
#: how the assistant talks: a manner word of two characters or more (快 / 短 alone ask for speed, "快点吧")
_MANNER_WORD = (r"直接|简短|简单|简洁|简明|正式|随意|随便|轻松|温柔|委婉|客气|详细|具体|通俗|易懂|口语化|专业|严格|"
                r"坦白|直白|干脆|幽默|官方|书面")
_MANNER = re.compile(
    r"^(?:说话|讲话|回答|回复|答复|解释|写|用词|语气|口气|聊天|说|讲)(?:得|的时候|时)?[^，,。！？]{0,3}?"
    r"(?:" + _MANNER_WORD + r"|慢|快|短|长|少)(?:一)?(?:点|些)|"
    # the manner alone, as what will do: "随意点就行", "简短点就好"
    r"^(?:" + _MANNER_WORD + r")(?:一)?(?:点|些)(?:就行|就好|就可以|吧)")
_NEG_MANNER = re.compile(
    r"^(?:别|不用|不要|无需|不必|用不着)(?:再)?(?:那么|这么|太|跟我|和我|对我)?(?:客气|客套|啰嗦|啰唆|唠叨|绕弯子|拐弯抹角|"
    r"寒暄|煽情|说教|官方|官腔|打官腔|套话|说套话|讲大道理|夸我|拍马屁|安慰我)|"
    # a manner no longer wanted: "不用那么正式了", "别这么详细"
    r"^(?:别|不用|不要|无需|不必|用不着)(?:再)?(?:那么|这么|太)(?:" + _MANNER_WORD + ")")
#: a request with 请 after its topic or occasion: "涉及代码的部分请加上注释", "数学题的时候请写出步骤" (请假 / 请客 /
#: 请教 are no requests to the assistant)
_TOPIC_PLEASE = re.compile(r"^[^，,。！？]{1,12}?(?:的部分|部分|的时候|时|方面|里面?|中)[，,]?\s*请(?!假|客|教|问)")
#: the language or form of the answer, without 都 or 以后: "回答我用繁体字吧", "回复我用英文就行"
_ANSWER_IN = re.compile(r"^(?:回答|回复|答复|跟我说话|和我说话)(?:我|的时候|时)?(?:都|请|就|最好)?用")


#: a convention revised: (a short topic,) (还是 / 那就,) change to or back to + an output value (``_OUTPUT``):
#: "还是改回中文吧", "那就改成公制吧", "金额还是换成美元吧"
_REVISION = re.compile(r"^[^，,。！？]{0,4}?(?:还是|那就|就)?(?:改成|改回|换成|换回|改用|换用)")


def standing(body: str) -> bool:
    """Whether the sentence ``body`` is a standing instruction to the assistant by its shape (a convention for the
    assistant's output, a manner, a negative manner; see the module docstring). ``False`` when its subject is the
    user or another person."""
    body = re.sub(r"^[^，,。！？：:]{1,8}[：:]\s*", "", body.strip())  # a short lead before a colon ("跟你说一下：")
    if not body or _SUBJECT.match(body):
        return False
    if _manner(body):
        return True
    if _situated_convention(body) or _TOPIC_PLEASE.match(body):
        return True
    first = re.split(r"[，,。；;！!]", body)[0]
    if _ANSWER_IN.match(first) and _OUTPUT.search(first):
        return True  # "回答我用繁体字吧": the answer's language
    if _REVISION.match(first) and _OUTPUT.search(first):
        return True  # "还是改回中文吧", "金额还是换成美元吧": a convention revised
    m = _CONVENTION.search(body)
    if m is None or _OUTPUT.search(body) is None:
        return False
    # the convention opens the sentence ("价格都用美元标"): after another clause it may report a trip or a habit
    # ("上周去了日本，价格都用日元算")
    prefix = body[:m.start()]
    return len(prefix) <= 8 and re.search(r"[，,；;：:了过]", prefix) is None


def _manner(clause: str) -> bool:
    addressed = _ADDRESSED.sub("", clause)
    return _MANNER.match(addressed) is not None or _NEG_MANNER.match(addressed) is not None


#: an occasion before a convention: "写代码的时候", "聊健身时" (the 时 of 小时 / 当时 / 同时 is no "when")
_OCCASION = re.compile(r"^[^，,。！？]{1,10}?(?:的时候|(?<![小当同及按准临暂平零几多])时)[，,]?\s*")
_USE = re.compile(r"^(?P<t>[^，,。！？]{1,6}?)(?:都|一律|统一|全部)?(?:用|按|按照|写成|换算成|标成)")


#: a past occasion or a past use ("上周去日本的时候", "时间用的当地时间"): a report, no convention
_PAST = re.compile(r"上周|上个月|昨天|前天|去年|上次|那次|那时|当时|之前|以前|刚才|小时候")
#: an occasion that is a task the assistant does for the user ("给我讲物理题的时候", "你翻译合同时"): what follows
#: says how, for every later time (the Chinese of "When you write cover letters for me, ...")
_TASK_OCCASION = re.compile(r"^(?:你|您)?(?:给我|帮我|替我|为我|跟我)?(?:讲|写|回答|回复|解答|翻译|总结|整理|修改|润色|"
                            r"解释|分析|出题|列|推荐|规划|安排|算|改)[^，,。！？]{0,10}?(?:的时候|时)[，,]?\s*")
#: the same with the benefactive (帮我 / 给我 / 替我 / 为我 + any verb phrase: "帮我写邮件的时候", "给我做PPT时"): the
#: task is the assistant's for the user whatever its verb, so any instruction after it stands ("落款写小安", "人名
#: 保留英文", "字体用微软雅黑")
_FOR_ME_OCCASION = re.compile(r"^(?:你|您)?(?:给我|帮我|替我|为我)[^，,。！？我]{1,12}?(?:的时候|时)[，,]?\s*")
#: what says the clause after an occasion reports rather than instructs: a subject of its own, a done or past verb
#: ("落款写错了"), a question
_REPORT_AFTER = re.compile(r"^(?:我|我们|他|她|它|你|您|老师|用户)|[了过]\s*[。！!]?\s*$|[？?吗呢]\s*$")
#: how the assistant writes: an output verb early in the clause ("先画受力图", "结尾统一加一句", "括号里写上英文原文")
_HOW = re.compile(r"^(?:先|都|统一|一律|请|最好|务必|记得|要|别|不要)?[^，,。！？]{0,12}?"
                  r"(?:写|加|列|标|用|画|附|注明|放|给出|说明|举例)(?![的了过])")
#: a condition on the user's asking ("要是我问你车停在哪", "每次我问你快递单号"), then what to tell them
_ON_MY_ASKING = re.compile(r"^(?:要是|如果|假如|万一|每次|每当|只要|一旦|哪天)?我(?:再)?问(?:你|起)?"
                           r"[^，,。！？]{1,15}[，,]")
_TELL_ME = re.compile(r"提醒我|告诉我|跟我说|和我说|让我|叫我|就说|别乱?猜|不要乱?猜")


def _situated_convention(body: str) -> bool:
    """"写代码的时候注释用英文": on an occasion, an output of the assistant's (a topic of ``_OUTPUT``) in a value of
    ``_OUTPUT`` — a convention with its occasion; "上课的时候老师用英文" names a person, no output; "时间用24小时制"
    the same without an occasion; "上周去日本的时候，时间用的当地时间" reports. An occasion that is a task the
    assistant does for the user, then how ("给我讲物理题的时候先画受力图"), and a condition on the user's asking, then
    what to tell them ("要是我问你车停在哪，别乱猜，提醒我看照片"), stand too."""
    if _PAST.search(body[:20]) or body.rstrip().endswith(("?", "？", "吗")):
        return False
    task = _TASK_OCCASION.match(body)
    # (what to write asked, "落款写什么好", is a question about the task)
    if task and _HOW.match(body[task.end():]) and INTERROGATIVE.search(body[task.end():]) is None:
        return True
    for_me = _FOR_ME_OCCASION.match(body)
    rest = re.split(r"[，,。；;！!]", body[for_me.end():])[0] if for_me else ""
    if for_me and len(rest) >= 2 and _REPORT_AFTER.search(rest) is None and INTERROGATIVE.search(rest) is None:
        return True
    asking = _ON_MY_ASKING.match(body)
    if asking and _TELL_ME.search(body[asking.end():]):
        return True
    m = _OCCASION.match(body)
    first = re.split(r"[，,。；;！!]", body[m.end():] if m else body)[0]
    use = _USE.match(first)
    return use is not None and _OUTPUT.fullmatch(use.group("t")) is not None and \
        _OUTPUT.search(first[use.end():]) is not None and first[use.end():use.end() + 1] not in ("的", "了", "过")


def opens_rule(body: str) -> bool:
    """Whether the sentence ``body`` opens as a standing instruction and holds a marker of one (``RULE_START``,
    ``_RULE_MARK``): "以后回答都用中文", "请别用表情", "Please 以后 reply 我都用中文"."""
    return RULE_START.match(body) is not None and _RULE_MARK.search(body) is not None and _STATED.match(body) is None


def later_rule(body: str) -> bool:
    """Whether a clause after the first is a standing instruction to the assistant: a lasting one addressed to it
    ("报告写完了，以后说话口语化一点"), a manner, or a revised convention softened by 吧 ("回国了，温度改回摄氏度吧").
    A clause after a reported word ("我跟老公说，以后别那么啰嗦") is another's instruction; a convention after a
    report ("上周去了日本，价格都用日元算") reports a habit; a change ending in 了 reports what the user did."""
    clauses = [c.strip() for c in re.split(r"[，,；;]", body)]
    for i in range(1, len(clauses)):
        c = clauses[i]
        if _REPORTED.search(clauses[i - 1]):
            return False
        if not c or _SUBJECT.match(c):
            continue
        if opens_rule(c) and _TO_ASSISTANT.search(c) or _manner(c):
            return True
        if c.endswith("吧") and _REVISION.match(c) and _OUTPUT.search(c):
            return True
    return False


#: a greeting said with 以后, no instruction ("以后多指教", "以后常联系")
_GREETING = re.compile(r"^(?:那)?以后(?:请)?(?:多|常|还请多)?(?:指教|关照|联系|交流|来往|合作|见)")


def rule_clause(clauses: list[str]) -> int | None:
    """The index of the first clause after the first that opens a standing rule of the user's (``opens_rule``),
    ``None`` for none: not after a reported word ("我跟老公说，以后别那么啰嗦"), not one with its own subject, not a
    greeting ("以后多指教"). ``zh_types.cut_at`` reads the sentence apart there ("回国了，以后温度用摄氏度就行")."""
    for i in range(1, len(clauses)):
        c = clauses[i].strip()
        if _REPORTED.search(clauses[i - 1]):
            return None
        if c and not _SUBJECT.match(c) and not _GREETING.match(c) and opens_rule(c):
            return i
    return None


def suggested(sent: str) -> bool:
    """A standing instruction softened by a final 吧 ("以后都用中文回答我吧"): a suggestion, not a question. Other
    sentences ending in 吧 stay out: a guess ("我大概下个月搬去深圳吧") or "let's" ("我们换个话题吧") is no fact."""
    body = sent.rstrip()
    return body.endswith("吧") and (opens_rule(body) and _TO_ASSISTANT.search(body) is not None or standing(body) or
                                   later_rule(body))


def untagged(sent: str) -> str | None:
    """The sentence ``sent`` without a final tag question (``_TAG``) when what is left is a standing instruction
    to the assistant ("以后回答都用英文好吗" -> "以后回答都用英文"); ``None`` otherwise ("明天会下雨吗")."""
    m = _TAG.search(sent)
    if m is None or m.start() == 0:
        return None
    rest = sent[:m.start()]
    lead = re.sub(r"^(?:对了|另外|还有|那个|嗯+|哦)[，,\s]*", "", rest.strip())
    asked = opens_rule(lead) and _TO_ASSISTANT.search(lead) is not None or standing(lead)
    return rest if asked else None
