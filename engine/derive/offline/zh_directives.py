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

__all__ = ["standing"]

_SUBJECT = re.compile(r"^(?:我|我们|咱|咱们|俺|他|她|他们|她们|它|用户|大家|别人)")
_CONVENTION = re.compile(r"(?:都|一律|统一|全部|全都|一概|通通|一般都|尽量)"
                         r"(?:用|以|按|按照|写成|换成|改成|换算成|标成|标|写|算)")
#: what the assistant writes, as a topic or as the value of a convention
_OUTPUT = re.compile(
    r"价格|价钱|金额|费用|货币|币种|单位|长度|重量|体重|身高|距离|温度|气温|时间|日期|时区|数字|数据|代码|示例|例子|回答|回复|答复|"
    r"解释|翻译|总结|摘要|标题|列表|格式|语言|称呼|文字|字体|表格|菜谱|食谱|"
    r"人民币|美元|欧元|英镑|日元|港币|公制|英制|公里|英里|公斤|千克|磅|摄氏|华氏|二十四小时|24小时|中文|英文|英语|简体|繁体|"
    r"粤语|日语|"
    # Latin names whole: "Go" is no output inside "Google" ("平时都用Google搜" is a habit)
    r"(?<![A-Za-z])(?:Markdown|markdown|JSON|json|Python|python|Java|Go|Rust|TypeScript|JavaScript|SQL)(?![A-Za-z])")
_MANNER = re.compile(
    r"^(?:说话|讲话|回答|回复|答复|解释|写|用词|语气|口气|聊天|说|讲)(?:得|的时候|时)?[^，,。！？]{0,3}?"
    r"(?:直接|简短|简单|简洁|简明|正式|随意|随便|轻松|温柔|委婉|客气|详细|具体|通俗|易懂|口语化|专业|慢|快|短|长|少|严格|"
    r"坦白|直白|干脆|幽默)(?:一)?(?:点|些)")
_NEG_MANNER = re.compile(
    r"^(?:别|不用|不要|无需|不必|用不着)(?:再)?(?:那么|这么|太|跟我|和我|对我)?(?:客气|客套|啰嗦|啰唆|唠叨|绕弯子|拐弯抹角|"
    r"寒暄|煽情|说教|官方|官腔|打官腔|套话|说套话|讲大道理|夸我|拍马屁|安慰我)")


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
    if _MANNER.match(body) or _NEG_MANNER.match(body):
        return True
    first = re.split(r"[，,。；;！!]", body)[0]
    if _REVISION.match(first) and _OUTPUT.search(first):
        return True  # "还是改回中文吧", "金额还是换成美元吧": a convention revised
    m = _CONVENTION.search(body)
    if m is None or _OUTPUT.search(body) is None:
        return False
    # the convention opens the sentence ("价格都用美元标"): after another clause it may report a trip or a habit
    # ("上周去了日本，价格都用日元算")
    prefix = body[:m.start()]
    return len(prefix) <= 8 and re.search(r"[，,；;：:了过]", prefix) is None
