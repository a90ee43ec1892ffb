"""Chinese standing instructions without 以后 / 请 / 每次 (engine.derive.offline.zh_directives, issue #29 item 1): a
convention for what the assistant writes ("价格都用美元"), a manner the assistant should have ("回答简短点"), and a
negative directive about its manner ("别那么啰嗦"). Phrasings written for this test."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memengine.engine.derive.offline import Turn, extract_memories, gate, quarantined
from memengine.engine.derive.offline.zh_directives import standing

T = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize("body", [
    "价格都用美元标", "温度一律用摄氏度", "日期统一写成年月日", "示例代码都用Go写", "距离全都按公里算",
    "回答简短点", "讲话随意一些", "解释得通俗点", "别那么啰嗦", "不用跟我客套",
])
def test_conventions_and_manners_for_the_assistant_stand(body: str) -> None:
    assert standing(body)


@pytest.mark.parametrize("body", [
    "平时都用微信支付",  # the user's habit: no output of the assistant's
    "平时都用Google搜",  # "Go" inside a name is no programming language
    "我们家都用苹果手机",
    "我说话直接点",  # the user's own manner
    "他回答简短点就好了",
    "别担心",
    "不用了，谢谢",
    "我都用公制",  # a statement about the user (其他 readers may keep it as a fact)
])
def test_habits_the_users_own_manner_and_chatter_do_not_stand(body: str) -> None:
    assert not standing(body)


def _rules(text: str) -> list[str]:
    turn = Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text, occurred_at=T)
    return [c.text for c in extract_memories([turn])
            if c.memory_type == "RULE" and not quarantined(gate(c, turn_text=text))]


@pytest.mark.parametrize("text", ["价格都用美元标，别用人民币。", "回答简短点，不要列太多条。",
                                  "跟你说一下：示例代码都用Go写。",
                                  "以后报价格的时候，都帮我换算成港币好不好"])  # a 好不好 after it
def test_a_chinese_convention_or_manner_becomes_an_active_rule(text: str) -> None:
    assert _rules(text), text


def test_a_convention_after_another_clause_reports_rather_than_instructs() -> None:
    assert not standing("上周去了日本，价格都用日元算，挺方便")


@pytest.mark.parametrize("text", ["还是换回繁体吧，简体看着别扭", "那就改成公制吧", "改用英文回复吧，我在练口语",
                                  "金额还是换成美元吧"])
def test_a_convention_changed_back_is_a_rule(text: str) -> None:
    """A convention the user revises ("还是改回中文吧": change, back to, an output value) instructs as the first one
    did, softened by 吧 or not (blind s17 u-010, s18 u-009: the revision was lost and the old rule stayed)."""
    assert _rules(text), text


@pytest.mark.parametrize("body", ["我还是换回安卓吧", "还是换个话题吧", "改成明天见吧"])
def test_a_change_of_the_users_own_or_of_no_output_is_no_rule(body: str) -> None:
    assert not standing(body)


# --- session 20 (zh30): heldout_s19 classes (now dev); phrasings written for these tests ---

@pytest.mark.parametrize("body", ["你回答正式一点，我要拿去写报告", "您解释得通俗点", "你以后说话简短点"])
def test_a_manner_addressed_to_you_stands(body: str) -> None:
    """"你回答正式一点" asks the assistant as "回答正式一点" does (blind s17 u-021, s19 u-028 kept it as a FACT)."""
    assert standing(body)


@pytest.mark.parametrize("text", [
    "报告写完了，以后说话口语化一点，别那么官方",  # a manner after a report
    "项目结束了，以后回答请用英文",
    "回国了，温度改回摄氏度吧",  # a revision after a report (s19 u-024)
    "考完试了，从现在起提醒我早点睡",
])
def test_a_standing_instruction_after_a_report_is_a_rule(text: str) -> None:
    assert _rules(text), text


@pytest.mark.parametrize("text", [
    "我搬回国了，手机改回中文了",  # a change the user made (了): no instruction
    "我跟老公说，以后别那么啰嗦",  # reported speech: said to another
    "昨天开会老板说以后回答客户要正式点",
])
def test_a_later_clause_of_a_report_or_of_reported_speech_is_no_rule(text: str) -> None:
    assert not _rules(text), text


@pytest.mark.parametrize("text", [
    "Please 以后 reply 我都用中文 ok？",  # a tag question asks for the rule, it asks nothing else (s19 mx-s-004)
    "以后回答都用英文好吗？",
    "以后叫我小林可以吗？",
    "温度以后都用摄氏度行吗",
])
def test_a_standing_instruction_with_a_tag_question_is_a_rule(text: str) -> None:
    turn = Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text, occurred_at=T)
    # a naming request is who the user is (PROFILE, see test_zh); any other is a RULE
    assert [c for c in extract_memories([turn]) if c.memory_type in ("RULE", "PROFILE")
            and not quarantined(gate(c, turn_text=text))], text


@pytest.mark.parametrize("text", ["写代码的时候注释用英文", "算账的时候金额用美元", "聊健身时重量用公斤"])
def test_a_convention_for_a_situation_is_a_rule(text: str) -> None:
    """"另外，写代码的时候注释用英文" (s19 k-007): when X, the output Y in Z — a convention with its occasion."""
    assert _rules(text), text


def test_a_situation_of_another_persons_is_no_rule() -> None:
    assert not _rules("上课的时候老师用英文")


@pytest.mark.parametrize("text", ["涉及代码的部分请加上注释", "数学题的时候请写出步骤",
                                  "回答我用繁体字吧，在香港读了四年书", "回复我用英文就行"])
def test_a_request_after_a_topic_or_an_answer_language_is_a_rule(text: str) -> None:
    """"另外，涉及代码的部分请加上注释" (s18 k-007) asks with 请 after its topic; "回答我用繁体字吧" (s18 u-023) sets
    the answer's language without 都 or 以后."""
    assert _rules(text), text


@pytest.mark.parametrize("text", ["现在不用那么正式了，随意点就行", "不用那么详细了", "简短点就好"])
def test_a_manner_revised_or_bare_is_a_rule(text: str) -> None:
    """"现在不用那么正式了，随意点就行" (s17 u-021) revises a manner."""
    assert _rules(text), text


@pytest.mark.parametrize("text", ["我请了三天假", "快点吧，要迟到了", "便宜点就行", "今天的部分请假了"])
def test_requests_of_no_lasting_manner_are_no_rule(text: str) -> None:
    assert not _rules(text), text


@pytest.mark.parametrize("text", [
    # an occasion that is a task the assistant does for the user, then how (heldout_s20's benign class, own words)
    "给我讲物理题的时候先画受力图，再列公式，最后写结论。",
    "帮我写周报的时候，结尾统一加一句“下周计划”，别写太长。",
    "你翻译合同的时候，专有名词后面括号里写上英文原文。",
    # a condition on the user's asking, then what the assistant should say
    "要是我问你车停在哪，别乱猜，提醒我看手机里的照片就行。",
    "每次我问你快递单号，就告诉我去看短信。",
    # a bare convention: an output of the assistant's in a value of the output's
    "时间用24小时制，距离用公里，谢谢。",
])
def test_an_instruction_for_the_assistants_task_or_the_users_asking_is_a_rule(text: str) -> None:
    turn = Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text, occurred_at=T)
    kept = [(c.memory_type, c.text) for c in extract_memories([turn]) if not quarantined(gate(c, turn_text=text))]
    assert any(kind == "RULE" for kind, _ in kept), kept


@pytest.mark.parametrize("text", [
    "我给学生讲物理题的时候先画受力图。",  # the user's own way of teaching: a habit, no instruction
    "要是我问你借钱，你会借吗？",  # a question
    "上周去日本的时候，时间用的当地时间。",  # a report
    "老师写板书的时候，结尾都加一句总结。",  # another person's habit
])
def test_the_users_habits_questions_and_others_occasions_are_no_rule(text: str) -> None:
    turn = Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text, occurred_at=T)
    assert not [c for c in extract_memories([turn]) if c.memory_type == "RULE"]


def _rule_texts(text: str) -> list[str]:
    turn = Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text, occurred_at=T)
    return [c.text for c in extract_memories([turn])
            if c.memory_type == "RULE" and not quarantined(gate(c, turn_text=text))]


@pytest.mark.parametrize(("text", "task"), [
    # a task the assistant does for the user, opened by 帮我 / 给我 / 替我 (a request's opening, which the question cut
    # used to drop with the occasion), then how — no 统一 / 以后 / 一直 (session 21's known defect, own words)
    ("帮我写邮件的时候，落款写“小安”。", "邮件"),
    ("帮我翻译合同的时候，人名保留英文。", "合同"),
    ("给我做PPT的时候，字体用微软雅黑。", "PPT"),
    ("帮我回复客户的时候，语气客气一点。", "客户"),
    ("替我整理会议纪要时，待办事项放在最前面。", "会议纪要"),
    ("帮我起草通知的时候，落款写行政部。", "通知"),
])
def test_how_to_do_a_task_for_the_user_is_a_rule_with_its_task(text: str, task: str) -> None:
    rules = _rule_texts(text)
    assert any(task in r for r in rules), rules


@pytest.mark.parametrize("text", [
    "帮我写邮件的时候我突然想起来还没吃饭。",  # the user's own subject: a report
    "上次帮我写邮件的时候，落款写错了。",  # a past occasion
    "帮我写邮件的时候，落款写什么好？",  # a question
])
def test_a_task_occasion_before_a_report_or_a_question_is_no_rule(text: str) -> None:
    assert not _rule_texts(text), text
