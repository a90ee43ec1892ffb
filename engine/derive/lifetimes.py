"""How long a derived memory lasts, from what the fact is (issue #29 item 1; seed 004 §4 "记忆类型" / "保留时长机制").

Every deriver (the offline rules, a model) proposes a priority with each candidate; the enricher passes it through
``lifetime_priority`` before it turns the priority into ``expires_at``, so that the lifetime follows the kind of
fact, whoever proposed it, and not the phrasing a rule happened to match:

* lasting (PERMANENT, never expires): who the person is (name, age, origin, nationality, gender and sexual identity,
  religion, where they live), their family and relationships (partner, children, parents, adoption, marriage), their
  health (allergies, conditions, diet), their work, studies and career, biographical milestones ("started
  transitioning in 2020", "grew up in ..."), and the seed 004 §4 "permanent" types: PREFERENCE, SKILL, behaviour
  RULEs;
* short (at most SHORT_TERM, 3 days; a mood TRANSIENT, 1 day): moods and feelings of the moment, plans and to-dos
  bound to a near time ("next week", "tomorrow", 明天, 下周), task-scoped rules (seed 004 §4 RULE "24h (任务规则)");
* everything else keeps the deriver's priority; a TASK is never lasting (a goal or plan stops once done or dropped).

Short wins over lasting ("I'm visiting my mom next week" is a plan). English and Chinese (substring cues: Chinese
has no spaces, and a cue such as 过敏 or 女儿 is a word on its own). Pure: no I/O, no clock.

**When a fact expires, and against what clock** (issue #29 item 1; seed 004 §4 ``expires_at = now + lifetime``
taken at extraction, seed 004 §6 "检索流程均包含过期记忆过滤 (expires_at < now() 自动排除)"): the lifetime counts
from when the fact was SAID, the turn's ``occurred_at`` (for a live conversation the seed's extraction ``now``; for
an imported history the original timestamp, not the import time), and validity is judged against the READER's clock
(now, or the request's ``as_of``). So an imported 2023 conversation read in 2026 keeps its lasting facts (no
``expires_at``) and has its plans and moods of 2023 expired, exactly as a reader in 2026 of a live 2023 conversation
would see them; ``--as-of`` 2023 shows what was valid then.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from memengine.engine.derive.offline import parse_en, zh
from memengine.engine.derive.policy import PRIORITIES, PRIORITY_RANK

_WORD = r"(?<![\w-])(?:{})(?![\w-])"


def _en(words: str) -> re.Pattern[str]:
    """Alternatives written over several lines (a line break joins them; spaces inside one are kept), whole words."""
    return re.compile(_WORD.format(re.sub(r"\s*\n\s*", "", words.strip())), re.I)


def _zh(words: str) -> re.Pattern[str]:
    return re.compile(re.sub(r"\s*\n\s*", "", words.strip()))


#: Who the person is.
_IDENTITY_EN = _en(r"""name(?:'s| is| was)|named|(?:is|be|am|'m) called|nickname|years old|aged? \d+|born|birthday|
    grew up|raised in|
    (?:is|am|'m|are|comes?|came|originally) from|hometown|home country|native|nationality|citizen(?:ship)?|immigra\w*|
    moved (?:to|from|here|back)|relocated|
    (?:lives?|lived|living) (?:in|at|near|with|alone|abroad)|resides?|based in|identif(?:y|ies|ied) as|
    trans(?:gender)?(?: woman| man)?|transition\w*|
    gay|lesbian|bisexual|queer|non-binary|nonbinary|pronouns?|religio\w*|christian|muslim|jewish|buddhist|
    hindu|atheist|catholic|introvert\w*|extrovert\w*|personality|left-handed|right-handed|mother tongue|
    native language|speaks? \w+ fluently|bilingual""")
#: Family and relationships.
_FAMILY_EN = _en(r"""mom|mum|mother|dad|father|parents?|kids?|child|children|son|daughters?|sons|baby|babies|
    husband|wife|spouse|partner|boyfriend|girlfriend|fianc[eé]e?|married|marriage|wedding|divorced?|engaged|
    (?:is|am|'m|are) single|
    widow(?:ed|er)?|brothers?|sisters?|siblings?|twins?|grand(?:ma|pa|mother|father|parents?|kids?|children|son|
    daughter)|aunt|uncle|cousins?|nieces?|nephews?|in-laws?|family|families|adopt\w*|foster\w*|pregnan\w*|mom-to-be|
    becoming a (?:mom|mother|dad|father|parent)|pets?|
    (?:has|have|had|owns?|adopted|got) (?:a|an|two|three) (?:dog|cat|puppy|kitten|rabbit|parrot|horse)s?""")
#: Health, body and diet.
_HEALTH_EN = _en(r"""allerg\w*|intoleran\w*|diabet\w*|asthma\w*|celiac|coeliac|diagnos\w*|disorder|disease|
    condition|chronic|disabilit\w*|disabled|wheelchair|blind|deaf|adhd|autis\w*|depression|anxiety disorder|
    ptsd|medication|insulin|surgery|glasses|contact lenses|vegan|vegetarian|pescatarian|keto|gluten|
    lactose|halal|kosher|sober|sobriety|teetotal\w*|doesn't drink|don't drink|blood type|pacemaker|cancer""")
#: Work, studies and career.
_CAREER_EN = _en(r"""works?|worked|working as|job|jobs|career\w*|profession\w*|occupation|employer|employed|
    employee|company|colleagues?|boss|manager|hired|promot\w*|retired|retirement|founded|startup|
    freelance\w*|self-employed|degree|diploma|graduat\w*|university|college|studies|studying|student|major\w*|
    phd|master's|bachelor's|teacher|nurse|doctor|engineer|developer|lawyer|counsel(?:or|lor)s?|
    therapist|artist|musician|writer|designer|scientist|researcher|accountant|chef|volunteers? (?:at|with|for)""")
#: The same in Chinese.
_LASTING_ZH = _zh(r"""名字|我叫|叫我|名叫|岁|出生|生日|来自|老家|家乡|国籍|住在|搬到|搬家|定居|籍贯|信仰|宗教|
    变性|跨性别|同性恋|性别|母语|家人|家里|父母|爸爸|妈妈|父亲|母亲|老公|老婆|丈夫|妻子|先生|太太|对象|男朋友|
    女朋友|未婚|结婚|已婚|离婚|单身|订婚|孩子|儿子|女儿|宝宝|怀孕|哥哥|姐姐|弟弟|妹妹|兄弟|姐妹|爷爷|奶奶|外公|
    外婆|领养|收养|宠物|狗|猫|过敏|糖尿病|哮喘|高血压|乳糖不耐|诊断|病史|慢性|残疾|吃素|素食|纯素|不吃|忌口|清真|
    戒酒|不喝酒|眼镜|手术|血型|抑郁症|工作|上班|公司|职业|工程师|老师|医生|护士|律师|设计师|程序员|经理|老板|同事|
    入职|辞职|跳槽|退休|创业|专业|大学|学校|毕业|读研|博士|硕士|学生|学位""")
#: A condition of the body, lasting even when said with a mood (``zh.slots`` reads no slot of a Latin object: "对
#: gluten 过敏").
_CONDITION_ZH = _zh(r"""过敏|不耐受?|糖尿病|哮喘|高血压|慢性|残疾|色盲|抑郁症""")
#: A mood or feeling of the moment.
_MOOD_EN = _en(r"""feel(?:s|ing)?|felt|mood|stressed(?: out)?|tired|exhausted|sleepy|bored|upset|anxious|nervous|
    worried|sad|grumpy|annoyed|frustrated|overwhelmed|hungry|sick today|under the weather|in a (?:good|bad) mood""")
_MOOD_ZH = _zh(r"""心情|情绪|好累|很累|太累|累死|好烦|很烦|烦死|难过|伤心|郁闷|焦虑|紧张|生气|无聊|开心|高兴|困了|好困|
    饿了|不舒服|感觉""")
#: A near time: a plan, reminder or to-do bound to it is short-lived.
_NEAR_EN = _en(r"""today|tonight|tomorrow|this (?:morning|afternoon|evening|week|weekend|month)|next (?:week|weekend|
    month|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|right now|at the moment|for now|later today|soon|
    in (?:a|an|two|three|few|\d+) (?:minutes?|hours?|days?|weeks?)|(?:on|by) (?:monday|tuesday|wednesday|thursday|
    friday|saturday|sunday)(?!,? \d)|by (?:tomorrow|tonight|the end of)|
    deadline|for this (?:task|session|chat|conversation|project)""")
_NEAR_ZH = _zh(r"""今天|今晚|明天|后天|今早|这周|本周|下周|下个月|下星期|周末|待会|一会儿|马上|现在|这次|本次|暂时|
    截止|之前要|星期[一二三四五六日天]|周[一二三四五六日]""")
#: Intention words: with a near time the statement is a plan.
_PLAN_EN = _en(r"""going to|gonna|plan(?:s|ning|ned)? to|will|'ll|intend\w* to|about to|need(?:s)? to|has to|have to|
    must|want(?:s)? to|hop(?:e|es|ing) to|remind\w*|appointment|meeting|schedul\w*""")
_PLAN_ZH = _zh(r"""打算|计划|准备|要|需要|记得|提醒|安排|预约|约了|想去|会去|将""")


def _must_zh(text: str) -> bool:
    """Whether a Chinese ``text`` has the modal 得 ("must": "周末得加班"): not the complement 得 after a verb or an
    adjective, which says how ("晒得跟炭一样黑", "游得很开心"). jieba tags both ``ud``: the word before decides."""
    if "得" not in text:
        return False
    words = zh.tagged(text)
    return any(w == "得" and (i == 0 or not words[i - 1][1].startswith(("v", "a")))
               for i, (w, _) in enumerate(words))

_CJK = re.compile(r"[\u3400-\u9fff]")
#: Seed 004 §4 "默认保留": these types are permanent unless the statement is short-lived.
_LASTING_TYPES = frozenset({"PROFILE", "PREFERENCE", "SKILL", "RULE"})


def fact_kind(memory_type: str, text: str, tags: Iterable[str] = ()) -> str:
    """``"lasting"``, ``"mood"``, ``"plan"``, ``"task"`` (a TASK not bound to a near time) or ``"other"``: what the fact
    is, from its type, text and tags.

    ``text`` is the candidate's text (a paraphrase such as "Caroline's name is Caroline" or the user's own words, in
    English or Chinese); ``tags`` the deriver's tags (a tag naming a lasting kind, e.g. ``health``, counts like its
    word). A mood or a plan bound to a near time wins over a lasting cue (see the module docstring)."""
    mtype = memory_type.upper()
    tagged = " ".join(tags)
    if mtype not in ("TASK", "ERROR") and (_zh_attribute(text) or _CONDITION_ZH.search(text)):
        return "lasting"  # a condition lasts whatever it is said with ("对 gluten 过敏，面包 pasta 都不能碰，有点 sad")
    if _MOOD_EN.search(text) or _MOOD_ZH.search(text):
        if _NEAR_ZH.search(text) and _zh_attribute(text, near_ok=True):
            return "plan"  # "下个月订婚，紧张": the engagement is a plan, not the day's nerves (it outlives them)
        if mtype not in ("PREFERENCE", "RULE", "SKILL") or _NEAR_EN.search(text) or _NEAR_ZH.search(text):
            return "mood"
    near = bool(_NEAR_EN.search(text) or _NEAR_ZH.search(text))
    if mtype not in ("TASK", "ERROR") and _fills_slot(text, near):
        return "lasting"
    if near and (mtype in ("TASK", "RULE") or _PLAN_EN.search(text) or _PLAN_ZH.search(text) or _must_zh(text)
                 or _ONGOING.search(text)):
        return "plan"  # "is putting together a show next month": what is under way for a near time is a plan
    if mtype == "TASK":
        return "plan" if near else "task"
    if mtype == "ERROR":
        return "other"  # seed 004 §4: an error lesson is kept 7 days, whatever it mentions
    if mtype != "RULE" and _one_off(text):
        return "other"  # an occasion ("went to an adoption meeting on 14 July"), not what the person is
    if (mtype in _LASTING_TYPES or any(p.search(text) or p.search(tagged) for p in
                                       (_IDENTITY_EN, _FAMILY_EN, _HEALTH_EN, _CAREER_EN, _LASTING_ZH))):
        return "lasting"
    return "other"


#: verbs whose past tense changes who someone is or what they have (a biographical milestone: "started
#: transitioning", "moved from Sweden", "got a cat", "adopted a boy"), unlike an occasion that is over once told
_MILESTONES = frozenset("""start begin become move relocate emigrate immigrate marry wed adopt foster divorce separate
    graduate retire transition grow raise bear found join quit leave lose die diagnose convert settle buy sell get
    come switch change give stop turn learn break split propose engage hire promote fire lay inherit name enrol enroll
    qualify recover survive apply""".split())
_ONGOING = re.compile(r"\b(?:is|are|am|'m|'re)\s+(?:\w+ly\s+)?\w+ing\b", re.I)


def _one_off(text: str) -> bool:
    """Whether an English ``text`` tells an occasion: its main verb in the simple past, an action that is over once
    told ("Caroline went to a council meeting for adoption", "Melanie took the kids to the museum"), not a
    milestone (``_MILESTONES``; "pass" only as "pass away") nor a past state ("was", "used to"). A word of a lasting
    kind in it (adoption, kids, trans) does not make the occasion a lasting fact (issue #29 defect 3: such
    occasions were PERMANENT core memory). ``False`` without the parser."""
    if _CJK.search(text) is not None or not parse_en.available():
        return False
    doc = parse_en.parsed(text)
    root = next((t for t in doc if t.dep_ == "ROOT"), None)
    if root is None or root.tag_ != "VBD" or root.pos_ != "VERB":
        return False
    lemma = root.lemma_.lower()
    if lemma == "say":
        return False  # 'User said: "..."': the user's own words kept whole, read by their cues
    if lemma == "pass":
        return not any(c.dep_ in ("prt", "advmod") and c.lower_ in ("away", "on") for c in root.children)
    if lemma == "get":  # "got engaged", "got a cat", "got my degree": a change; "got lots of help": an occasion
        return not any(c.dep_ in ("acomp", "auxpass", "attr", "oprd") or c.dep_ == "dobj" and any(
            d.lower_ in ("a", "an", "another", "my", "our", "their", "his", "her") for d in c.children)
            for c in root.children)
    if lemma == "have":  # "had a baby": a milestone; "had the chance to volunteer": an occasion
        return not any(c.dep_ == "dobj" and _FAMILY_EN.search(" ".join(t.text for t in c.subtree))
                       for c in root.children)
    return lemma not in _MILESTONES


#: the slots (``zh.slots``) that say who the user is: where they live, work and study, their job, age, name, marital
#: state, shift, diet, and what they use and drive
_ZH_ATTRIBUTES = frozenset({"name", "lives_in", "works_at", "studies_at", "job", "age", "marital", "shift", "diet",
                            "uses", "drives"})


def _zh_attribute(text: str, *, near_ok: bool = False) -> bool:
    """Whether a Chinese ``text`` states one of the user's attributes (``_ZH_ATTRIBUTES``), done (了) or without a
    near time (or with one, ``near_ok``): "用户入职网易了，有点小激动" lasts whatever feeling it is said with (a
    Chinese statement keeps its clauses together, where the English path splits a mood off); "用户下周要搬到厦门" is
    a plan."""
    if _CJK.search(text) is None or not _ZH_ATTRIBUTES & zh.slots(text).keys():
        return False
    return near_ok or "了" in text or not _NEAR_ZH.search(text)


def _fills_slot(text: str, near: bool) -> bool:
    """Whether an English ``text`` states an attribute of the person (``parse_en.slots``: where they live and work,
    their job, age, marital state, diet, a role someone holds for them, an amount of theirs...): such a fact lasts
    until a newer value replaces it, however it was phrased ("User started at Deloitte", "User turned 30"). Without
    the parser (the nlp extra) the word cues alone decide. With a near time (``near``) only a past statement counts
    ("User started at Deloitte on Monday"): "User is moving to Berlin next month" is a plan."""
    if _CJK.search(text) is not None or not parse_en.slots(text):
        return False
    doc = parse_en.parsed(text)
    return not near or doc is not None and any(t.tag_ in ("VBD", "VBN") and t.dep_ == "ROOT" for t in doc)


def lifetime_priority(memory_type: str, text: str, priority: str, tags: Iterable[str] = ()) -> str:
    """The priority (seed 004 §4; ``PRIORITY_TTL`` turns it into ``expires_at = occurred_at + lifetime``) for a
    derived candidate of ``memory_type`` / ``text`` / ``tags`` that its deriver proposed with ``priority``.

    lasting -> PERMANENT; mood -> TRANSIENT; plan -> the deriver's priority capped at SHORT_TERM; task ->
    capped at LONG_TERM; other -> the deriver's priority (an unknown one reads LONG_TERM). Deterministic: the same
    candidate always gets the same lifetime, so a rebuild from the log (``memengine verify``) is exact."""
    given = priority if priority in PRIORITIES else "LONG_TERM"
    kind = fact_kind(memory_type, text, tags)
    if kind == "lasting":
        return "PERMANENT"
    if kind == "mood":
        return "TRANSIENT"
    if kind == "plan":
        return given if PRIORITY_RANK[given] <= PRIORITY_RANK["SHORT_TERM"] else "SHORT_TERM"
    if kind == "task":
        return given if PRIORITY_RANK[given] <= PRIORITY_RANK["LONG_TERM"] else "LONG_TERM"
    return given
