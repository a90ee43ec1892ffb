"""Frames that make a first-person sentence something other than the speaker's own life (issue #29: "a
hypothetical, a character in a story" must not become a memory), and the sentences that merely hold a frame's word."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memengine.engine.derive.offline import Turn, extract_memories, framing
from memengine.engine.derive.offline.structures import Candidate


@pytest.mark.parametrize(("sentence", "frame"), [
    ("假如我明年辞职去读研，存款够吗", "hypothetical"),
    ("要是我搬去大理，房租大概多少", "hypothetical"),
    ("What if I moved to Lisbon next year, would my pension follow me?", "hypothetical"),
    ("If I were a vet, I'd have cats everywhere", "hypothetical"),
    ("写一个短篇小说，主角是个住在厦门的木匠", "fiction"),
    ("Write me a poem about a lighthouse keeper who lives alone in Maine", "fiction"),
    ("let's role-play: you're my landlord and I'm a tenant from Leeds", "fiction"),
    ("(as Dana) I've been a surgeon for twenty years", "fiction"),
    ("帮我翻译一下这段邮件", "text_work"),
    ("把这句话翻成日语", "text_work"),
    ("Can you summarize this for my boss?", "text_work"),
    ("昨晚梦见自己考上了清华", "dream"),
    ("I dreamt I was living in Tokyo again", "dream"),
    ("听说深圳的房价又涨了", "hearsay"),
    ("I read an article that says people in Denmark sleep the most", "hearsay"),
    ("just watched a doc about a beekeeper in Vermont", "media"),
    ("Finally finished that book about a woman who sails around the world alone", "media"),
    ("最近在追《繁花》，宝总太帅了", "media"),
    ("刚看完一部纪录片，讲西藏的牧民", "media"),
    ("帮我朋友问一下，她怀孕三个月了，还能喝咖啡吗", "for_another"),
    ("asking for a friend: is it ok to take ibuprofen with a sprained ankle", "for_another"),
    ("I daydream about moving to Lisbon sometimes", "dream"),
    ("帮我写个简历模板，假设是学法律的应届生", "hypothetical"),
])
def test_a_frame_is_named(sentence: str, frame: str) -> None:
    assert framing.framed(sentence) == frame


@pytest.mark.parametrize("sentence", [
    "主要是作息乱，在医院做护士",       # 要是 inside 主要是
    "对花生过敏，如果误食会休克",       # a condition after the fact is the fact's
    "dairy wrecks me if I have any",
    "在字节做产品经理，不知道怎么讲故事",  # 故事 not written
    "I'm a story editor at the BBC",
    "my daughter loves bedtime stories",
    "I read a lot of books, I'm a librarian",       # a work without what it is about
    "我在书店上班，每天看很多书",
    "my friend and I both work at the hospital",
])
def test_a_statement_holding_a_frames_word_is_not_framed(sentence: str) -> None:
    assert framing.framed(sentence) is None


def _kept(words: str, sentence: str) -> Candidate:
    return Candidate(memory_type="FACT", text=f"用户说：“{words}”", importance=0.5, confidence=0.7, tags=[],
                     priority="normal", user_id="u", source_event_ids=["e"], data={"sentence": sentence})


def test_a_request_for_work_on_a_text_frames_the_rest_of_its_turn() -> None:
    kept = _kept("作者在西雅图当了十年护士", "作者在西雅图当了十年护士")
    assert framing.dropped(kept) is None
    assert framing.dropped(kept, turn_text="帮我总结一下这段：作者在西雅图当了十年护士") == "text_work"
    # a dream frames its own sentence only
    assert framing.dropped(kept, turn_text="昨晚梦见一个人。作者在西雅图当了十年护士") is None


def _typed(text: str, sentence: str) -> Candidate:
    return Candidate(memory_type="PROFILE", text=text, importance=0.5, confidence=0.7, tags=[], priority="normal",
                     user_id="u", source_event_ids=["e"], data={"sentence": sentence})


def test_a_typed_reading_is_dropped_only_inside_a_story_or_a_text_to_work_on() -> None:
    assert framing.dropped(_typed("用户住在大理。", "要是我住在大理")) is None  # the rules' own to skip
    assert framing.dropped(_typed("User is a pilot.", "I'm a pilot, summarize this article for me")) is None
    assert framing.dropped(_typed("User is a pilot.", "I'm writing a story where I'm a pilot")) == "fiction"
    assert framing.dropped(_typed("User lives in Oslo.", "translate 'I live in Oslo' into German")) == "text_work"
    assert framing.dropped(_typed("用户是开茶馆的老板。", "帮我写个小说开头，我是开茶馆的老板")) == "fiction"
    assert framing.dropped(_typed("User is a pilot.", "I'm a pilot")) is None
    assert framing.dropped(_typed("User is a pilot.", "I'm a pilot"), turn_text="summarize this: I'm a pilot") is None
    rule = Candidate(memory_type="RULE", text="用户要求：帮我翻译合同的时候，人名保留英文。", importance=0.5,
                     confidence=0.9, tags=[], priority="normal", user_id="u", source_event_ids=["e"],
                     data={"sentence": "帮我翻译合同的时候，人名保留英文。"})
    assert framing.dropped(rule) is None  # how to do the text work is the user's own rule


def test_a_text_the_user_asks_to_keep_something_of_is_not_framed() -> None:
    kept = _kept("小李，下周三下午两点开会，带上季度报表", "小李，下周三下午两点开会，带上季度报表")
    turn = "帮我总结一下这条消息，记住开会时间：小李，下周三下午两点开会，带上季度报表"
    assert framing.dropped(kept, turn_text=turn) is None


def test_a_typed_reading_that_says_what_was_watched_or_dreamt_is_dropped_unless_a_liking() -> None:
    watched = _typed("User just watched a documentary about a guy who climbed Everest without oxygen.",
                     "just watched a documentary about a guy who climbed Everest without oxygen")
    assert framing.dropped(watched) == "media"
    dreamt = _typed("User daydreams about moving to Lisbon.", "I daydream about moving to Lisbon sometimes")
    assert framing.dropped(dreamt) == "dream"
    liked = _typed("User's favourite show is a series about chefs.", "my favourite show is a series about chefs")
    assert framing.dropped(liked) is None
    assert framing.dropped(_kept("最近在追《繁花》，宝总太帅了", "最近在追《繁花》，宝总太帅了")) == "media"
    assert framing.dropped(_kept("最喜欢的剧是《繁花》", "看了三遍《繁花》，最喜欢的剧")) is None


@pytest.mark.parametrize("text", ["honestly I'm basically a walking encyclopedia of 90s sitcoms lmao",
                                  "我简直是个人形闹钟哈哈哈 每天五点就醒"])
def test_a_self_label_said_as_a_joke_is_not_kept(text: str) -> None:
    turn = Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text,
                occurred_at=datetime(2026, 11, 20, tzinfo=UTC))
    assert not [c.text for c in extract_memories([turn]) if c.memory_type in ("PROFILE", "FACT")]
