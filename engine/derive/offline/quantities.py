"""What a stated quantity is of: the key of its attribute slot (issue #29 item 1), for English (``parse_en``) and
Chinese (``zh``) alike.

A changed amount supersedes the old one (seed 002 §2.2 "冲突的记忆 → 保留最新") only when both statements key it
the same, and people key one amount in several ways: a salary is what the user "earns", "makes", "is on", "my
salary", "my pay", 工资 / 月薪 / 收入; a rent is "my rent" or what the user "pays in rent"; a commute is "I commute
40 minutes" or "my commute is 15 minutes"; a weight is 体重 七十公斤 or 瘦到 六十五公斤. So a key is read from
what the amount means, in this order:

* what money is paid for (the noun after in / for / on: "pay 900 a month in rent" -> ``rent``; a home, "for the
  flat", is the rent too);
* the owner noun ("my rent is 1100" -> ``rent``), with the nouns of income one class (``INCOME``);
* a verb of earning (``EARN``) or an amount of money without an owner -> ``money`` (the user's income: "I'm on
  58k now");
* a duration of a content verb: the verb ("I commute 40 minutes" -> ``commute``), beside the unit key it had;
* Chinese: a frame naming income -> 收入; a measuring unit (公斤, 公里, ...) is its own key whatever verb frames
  it (体重 / 瘦到 / 跑步 / 跑); otherwise the frame words, as before.

Meaning classes, not phrasings: a new income verb or unit is added to its class. Pure.
"""

from __future__ import annotations

import re
from typing import Any

#: nouns that name the user's income: one quantity, whatever noun or verb states it
INCOME = frozenset({"salary", "income", "pay", "wage", "wages", "earnings", "paycheck", "paycheque",
                    "compensation", "package", "rate", "fee", "take-home", "takehome"})
#: verbs whose amount is the user's income
EARN = frozenset({"earn", "make", "gross", "net", "take", "charge", "bill", "invoice"})
#: words of money: an amount with one of these (or a currency sign, or "60k") is money
_MONEY = re.compile(r"\d\s?k\b|[$€£¥]|\b(?:euros?|pounds?|dollars?|quid|bucks|francs?|yen|kr|sek|usd|eur|gbp)\b",
                    re.I)
#: verbs that hand money over: the noun after in / for / on is what the amount is for
_SPEND = frozenset({"pay", "spend", "cost", "charge", "owe", "put"})
#: what a home is called: money paid for one is the rent
_HOME = frozenset({"flat", "room", "apartment", "house", "place", "studio", "home", "condo", "bedsit", "accommodation",
                   "housing"})
#: units of time: a duration's key is what it measures (the verb), not the unit
TIME_UNITS = frozenset({"second", "minute", "hour", "day", "week", "month", "year", "night", "min", "hr", "h"})
#: verbs that carry no meaning of their own beside a duration ("get eight hours", "takes 50 minutes")
_LIGHT = frozenset({"be", "get", "have", "take", "do", "spend", "need", "make", "go", "turn", "become"})


def is_money(value: str, clause: str) -> bool:
    """Whether an amount ``value`` in ``clause`` (lower case) is money: a currency sign or word, or "60k"."""
    return bool(_MONEY.search(value + " " + clause))


#: what stands for the user as the object of someone else's act ("bumped me up to 58k", "upped us to ...")
_USER_OBJECTS = frozenset({"me", "us", "myself", "user"})  # "User": the statement as an item renders it
#: pronouns of a thing already talked about ("jacked it to $2100": what "it" is, the sentence does not say)
_THING_PRONOUNS = frozenset({"it", "that", "this"})


def acted_on(head: Any, num: Any) -> Any:
    """The object of a clause in which someone else sets an amount for the user (a boss, a doctor, a landlord):
    ``head``'s direct object when ``num`` (or the noun it counts) is the object of a "to" on ``head`` (or on its
    "up" / "down") and that object is the user ("bumped me up to 58k"), a thing of theirs ("bumped my rent to
    $2050", "lowered the dose to 10 mg") or a thing already talked about ("jacked it to $2100"); else ``None``.
    The amount is then the user's, keyed by what it is of, never by who changed it (heldout_s17 / s18 dev)."""
    obj = next((c for c in head.children if c.dep_ == "dobj"), None)
    if obj is None or obj.i > num.i:
        return None
    t = num if num.dep_ == "pobj" or num.head.dep_ != "pobj" else num.head
    to = t.head if t.dep_ == "pobj" else None
    if to is None and any(c.dep_ == "quantmod" and c.lower_ == "to" for c in num.children) and num.dep_ == "pobj":
        to = num.head  # "put it up to £1020": the parser hangs the amount on "up", with "to" its modifier
    if to is None or to.lower_ not in ("to", "up", "down") or to.head != head and to.head.head != head:
        return None
    low = obj.lower_
    own = any(c.dep_ == "poss" and c.lower_ in ("my", "our", "user") or c.dep_ == "det" and c.lower_ == "the"
              for c in obj.children)
    return obj if low in _USER_OBJECTS or low in _THING_PRONOUNS or own else None


def en_keys(head: Any, num: Any, owner: Any, unit: Any, value: str, clause: str) -> list[str]:
    """The slot keys (without ``qty:``; ``age`` for the user's age) of a number ``num`` in the clause headed by
    ``head`` (spaCy tokens), first the main one; ``[]`` when the number keys nothing (a date-like duration of a
    light verb). ``owner``: the clause's subject when it is not the user (a noun or the antecedent of a pronoun),
    ``unit``: the noun the number counts, ``value``: the amount as written, ``clause``: its words in lower case."""
    lemma = head.lemma_.lower()
    obj = acted_on(head, num) if owner is not None else None
    if obj is not None:
        # someone else set the user's amount: it is of the object ("my rent"), of its unit ("the dose" of 10 mg),
        # or, for "me" / "it", of what the amount is (money, a unit)
        if unit is None and num.dep_ == "nummod" and num.head.i > num.i:
            unit = num.head  # "upped me to 1000 mg": the parser may not tag the unit a noun
        owner = None if obj.lower_ in _USER_OBJECTS | _THING_PRONOUNS or unit is not None else obj
    if lemma == "pay" and any(c.dep_ in ("auxpass", "nsubjpass") for c in head.children):
        lemma = "earn"  # "I get paid 3000 a month": what the user is paid is their income
    money = is_money(value, clause) or unit is not None and is_money(unit.text, "") or lemma in _SPEND
    unit_key = None if unit is None or money and is_money(unit.text, "") else unit.lemma_.lower()
    if money:
        # "pay 900 in rent", "pay 820 euros in rent" (the prepositional phrase on the verb or on the amount)
        purpose = [g for t in (head, unit, num) if t is not None for c in t.children
                   if c.dep_ == "prep" and c.lower_ in ("in", "for", "on", "towards")
                   for g in c.children if g.dep_ == "pobj" and g.pos_ == "NOUN"]
        if purpose and lemma in _SPEND:
            # money paid for the home is the rent, whatever the home is called ("820 a month for the room")
            key = purpose[0].lemma_.lower()
            return ["rent" if key in _HOME else key]
    if owner is not None and owner.pos_ in ("NOUN", "PROPN"):
        key = owner.lemma_.lower()
        doc = owner.doc
        if owner.i >= 2 and doc[owner.i - 1].text == "-":  # "take-home", "check-in": the hyphenated noun whole
            key = f"{doc[owner.i - 2].lower_}-{key}"
        return ["money" if key in INCOME else key]
    if unit_key is not None and unit_key in TIME_UNITS:
        keys = [lemma] if lemma not in _LIGHT else []
        if unit_key not in ("year", "month", "week", "day", "time", "minute") or lemma in ("be", "sleep"):
            keys.append(unit_key)  # as before: "eight hours a night" of "get" and of "sleep" alike
        return keys
    if unit_key is not None:
        return [unit_key]
    if money or lemma in EARN:
        return ["money"]
    if lemma in ("be", "turn") and owner is None:
        return ["age"]
    return [lemma]


#: Chinese frames that name the user's income (one quantity: 工资 / 月薪 / 年薪 / 薪水 / 收入)
_ZH_INCOME = re.compile(r"工资|薪|收入|底薪|到手")
#: Chinese units that measure (weight, distance, height): the unit is the key whatever verb frames it
_ZH_MEASURE = frozenset({"公斤", "千克", "斤", "公里", "千米", "米", "厘米", "kg", "km"})


#: units of a dose (mass and activity of a medicine or supplement): like a measure, the unit is the key, so a dose
#: changed however it is told ("医生让我加到75微克", "现在减到25mg") is the new amount of the one before
ZH_DOSE = r"毫克|微克|(?i:mg|mcg|μg|ug|iu)(?![A-Za-z])|国际单位"
_ZH_DOSE = re.compile(r"^(?:" + ZH_DOSE + r")$")


#: how often, before the noun of an amount ("每个月房租", "每年学费")
_ZH_EVERY = re.compile(r"^每(?:个)?(?:天|日|晚|周|星期|礼拜|月|年|季度)")


def zh_key(frame: str, unit: str) -> str:
    """The slot key of a Chinese amount: 收入 for a frame of income, the unit for a measuring unit, else the
    frame words (``zh.clause_slots`` drops subject, time and filler words from them first), else the unit."""
    if _ZH_INCOME.search(frame):
        return "收入"
    frame = _ZH_EVERY.sub("", frame)  # "每个月房租" is the rent, how often it is paid says nothing of what
    if unit.lower() in _ZH_MEASURE:
        return unit.lower()
    if _ZH_DOSE.match(unit):
        # one name per unit, however it is written: "微克" / "mcg" / "μg" are one dose
        return {"mcg": "微克", "μg": "微克", "ug": "微克", "mg": "毫克", "iu": "国际单位"}.get(unit.lower(), unit)
    return frame or unit
