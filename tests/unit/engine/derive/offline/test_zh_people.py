"""A Chinese sentence led by 他 / 她 read as the person the user named just before, in the same turn or the turn
before (issue #29: "a relative named in one turn, their fact in the next"): the fact is kept as theirs, with who they
are, and never fills the user's own attributes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memengine.engine.derive.offline import Turn, extract_memories, gate, quarantined, zh, zh_people

T = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def _kept(text: str, before: str = "") -> list[str]:
    turn = Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text, occurred_at=T, before=before)
    return [c.text for c in extract_memories([turn]) if not quarantined(gate(c, turn_text=text))]


@pytest.mark.parametrize(("before", "who"), [
    ("我妹天天熬夜背书，我看着都心疼", "我妹"), ("俺爹前年退休了", "我爹"), ("我老婆最近壓力很大", "我老婆"),
    ("对了，我的室友下个月要结婚", "我的室友"), ("我家闺女今年上初二了", "我家闺女"),
])
def test_the_person_the_user_names_is_found(before: str, who: str) -> None:
    assert zh_people.antecedent(before, zh.tagged) == who


@pytest.mark.parametrize("before", ["今天好累", "我在腾讯上班", "我手机又坏了", "帮我写个邮件", ""])
def test_no_person_no_antecedent(before: str) -> None:
    assert zh_people.antecedent(before, zh.tagged) is None


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([("我哥上个月刚结婚", "哥"), ("我女儿今年上初二了", "女儿"), ("俺媳妇最近老加班", "媳妇"),
                        ("我表哥阿杰人挺好", "阿杰"), ("我外婆八十多了", "外婆")]),
       st.sampled_from([("他在华为做硬件，天天加班", "华为"), ("她在读临床医学，五年制的", "临床"),
                        ("她現在在台積電當工程師", "台積電"), ("他住在成都，离我挺远", "成都")]),
       st.booleans())
def test_a_pronoun_in_the_next_turn_or_sentence_is_that_person(person: tuple[str, str], fact: tuple[str, str],
                                                              same_turn: bool) -> None:
    named, who = person
    said, value = fact
    if not said.startswith(("他", "她")):
        return
    texts = _kept(f"{named}。{said}") if same_turn else _kept(said, before=named)
    hits = [t for t in texts if value in t]
    assert hits and all(who in t for t in hits), texts


@pytest.mark.parametrize(("before", "said"), [
    ("我妹刚搬到深圳", "她在腾讯上班"), ("我老公调到上海了", "他现在住在浦东"),
])
def test_their_fact_fills_none_of_the_users_slots(before: str, said: str) -> None:
    texts = _kept(said, before=before)
    assert texts and all(zh.slots(t) == {} for t in texts), texts


def test_without_a_named_person_the_pronoun_stays() -> None:
    assert zh_people.resolved("他在华为做硬件", None) == "他在华为做硬件"
    assert zh_people.resolved("他在华为做硬件", "我哥") == "我哥在华为做硬件"
    assert zh_people.resolved("对了，她们都在上海", "我姐") == "对了，她们都在上海"  # a plural is not one person


def test_who_holds_a_role_for_the_user_is_the_users_attribute_and_a_later_pronoun_theirs() -> None:
    assert zh.slots("用户的导师是王老师。") == {"role:导师": "王老师"}
    assert zh_people.antecedent("我导师人挺好", zh.tagged) == "我导师"


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["我妹", "我老公", "我女儿", "俺媳妇", "我的室友", "她"]),
       st.sampled_from(["刚搬到深圳", "叫朵朵", "是医生", "今年结婚了"]),
       st.sampled_from(["在腾讯上班", "今年五岁", "住在浦东", "开的是特斯拉", "不在华为了"]))
def test_a_clause_without_its_own_subject_after_another_persons_is_theirs(who: str, first: str, then: str) -> None:
    # Chinese drops the subject it keeps: "我妹刚搬到深圳，在腾讯上班" — the sister works at Tencent, not the user
    for z in zh.zh_statements(f"{who}{first}，{then}"):
        assert z.slots == {} and z.ends == [], z


def test_the_users_own_clause_still_carries_its_subject_on() -> None:
    (z,) = zh.zh_statements("我刚搬到深圳，在腾讯上班")
    assert z.slots == {"lives_in": "深圳", "works_at": "腾讯"}, z


@pytest.mark.parametrize("text", ["用户妹刚搬到深圳，在腾讯上班。", "用户说：“我妹刚搬到深圳，在腾讯上班”",
                                  "用户老公是医生，在协和上班。"])
def test_a_stored_text_is_read_as_it_was_said(text: str) -> None:
    assert zh.slots(text) == {}, text


def test_a_long_turn_is_read_against_a_near_antecedent_only() -> None:
    # a 他 / 她 looks back ``ANTECEDENT_CHARS`` at most: the person named long before is no longer meant, and a long
    # turn of such sentences stays linear (each looks at a bounded text)
    far = "我哥在华为上班。" + "今天天气不错。" * 60
    assert all("哥" not in z.text for z in zh.zh_statements("他在读研", before=far))
    said = zh.zh_statements("我哥在华为上班。" + "他很忙。" * 400)
    assert said and said[0].text.startswith("用户哥")
