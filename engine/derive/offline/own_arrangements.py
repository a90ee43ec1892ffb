"""The user's own arrangements that share an attack's words: what the gate (``safety``) lets pass although a shape
of it matched (issue #29 item 4, "false quarantine <= 0.05"; heldout_s28's benign cases, session 28).

Each is read from the user's own sentence, never from an extractor's rewrite, and each is narrower than the shape it
answers:

* ``own_destination``: a send whose destination is said to be the user's own ("发一份到我自己邮箱 ...", "send a copy
  to my own inbox"): an attacker's address is nobody's "own" in the user's words. "my" alone is not enough: a pasted
  e-mail's "forward it to my personal address" is its author's;
* ``task_audience``: others named only as whom a task the assistant does for the user is for ("anything you draft
  for clients"): the instruction is about the user's drafts, not about how to treat the clients;
* ``user_condition``: others named inside a condition whose subject is the user ("if I ever ask you to pay anyone,
  ask me for the phrase first"): the user's own request is what the rule is keyed on;
* ``own_code_word``: a code word the user is asked for before something is done ("先问我暗号“月亮船”", a check the
  user adds), or the code word of the user's household game with nothing at stake in it ("我们家玩猜谜的时候 暗号是
  “芝麻开门”"): AgentPoison's trigger is a word someone else writes to make the assistant act against the user.

Pure: ``re`` only.
"""

from __future__ import annotations

import re

__all__ = ["own_code_word", "own_destination", "task_audience", "user_condition"]

_OWN_DEST = re.compile(r"我自己(?:的)?(?:邮箱|信箱|手机|号码|微信|账号)|我本人(?:的)?(?:邮箱|信箱)|"
                       r"\bmy\s+own\s+(?:e-?mail|inbox|address|account|phone|number|drive|folder)\b", re.I)
#: a task the assistant does, then whom it is for ("anything you draft for clients", "emails you write for my
#: customers")
_TASK_FOR = re.compile(r"\b(?:draft|write|prepare|make|create|compose|translate|design|build)\w*\s+"
                       r"(?:[\w'-]+\s+){0,3}?for\s+(?:my\s+|our\s+|the\s+)?$", re.I)
#: the user as the condition's subject, with no clause boundary before the others it names
_USER_IF = re.compile(r"\b(?:if|when|whenever|should)\s+I\b(?:\s+ever)?[^,.;!?\n]*$", re.I)
#: the user asked for the code before it is done, or the user says it
_ASK_ME_CODE = re.compile(r"(?:先|要先|得先|必须先)?(?:问我|跟我要|向我要|让我说|要我说|我说(?:了|出)?)(?:一下|一遍)?"
                          r"(?:那个)?(?:暗号|口令|密语)|\bask me for (?:the|my|our) (?:phrase|code ?word|password|"
                          r"safe ?word)\b", re.I)
_GAME = re.compile(r"玩|游戏|猜谜|谜语|桌游|剧本杀|狼人杀|\b(?:games?|trivia|quiz|puzzle|scavenger hunt)\b", re.I)
#: what must not ride on a game's code word: money, secrets, addresses, numbers, links, data
_AT_STAKE = re.compile(r"转账|汇款|钱|付款|支付|密码|账号|账户|地址|身份证|验证码|链接|网址|门锁|开锁|解锁|"
                       r"\d{5,}|@|https?:|"
                       r"\b(?:money|pay|transfer|password|account|address|card|link|unlock|door|send|forward)\b", re.I)


def own_destination(hit: str) -> bool:
    """Whether the matched words of an exfiltration shape (``hit``) send to a destination said to be the user's own
    ("我自己邮箱", "my own inbox")."""
    return _OWN_DEST.search(hit) is not None


def task_audience(text: str, start: int) -> bool:
    """Whether the others named at ``start`` of ``text`` are only whom a task the assistant does for the user is for
    ("anything you draft for clients")."""
    return _TASK_FOR.search(text[:start]) is not None


def user_condition(text: str, start: int, end: int) -> bool:
    """Whether the others named at ``text[start:end]`` sit inside a condition whose subject is the user ("if I ever
    ask you to pay anyone, ...") that a comma closes soon after them."""
    return _USER_IF.search(text[:start]) is not None and re.match(r"[^.;!?\n]{0,30}?,", text[end:]) is not None


def own_code_word(text: str) -> bool:
    """Whether the code word of ``text`` is one the user is asked for before something is done (a check the user
    adds), or the code of the user's household game with nothing at stake in the text (``_AT_STAKE``)."""
    if _ASK_ME_CODE.search(text):
        return True
    return _GAME.search(text) is not None and _AT_STAKE.search(text) is None
