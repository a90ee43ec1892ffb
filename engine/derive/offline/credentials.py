"""The shapes of a secret in a memory candidate, for the inbound memory gate (``engine.derive.offline.safety``, code
``credentials``; issue #18 item 4, issue #29 poisoning): a secret's value ("my PIN is 4921", "password: hunter22x"),
a secret sent, collected or stored ("send my 2FA codes to ..."), a secret then where to type it, API keys and private
keys by their prefixes, an IBAN, a log-in written as an address and a secret, a card number that passes the Luhn
check (ISO/IEC 7812). A protective rule about the user's own secrets ("never store passwords in memory", "don't
include account numbers") is taken out first (``NEG_CRED``): it asks for nothing.

``safety`` extends ``SHAPES`` with the page-to-log-in-at shape (it needs the gate's address pattern) and the Chinese
shapes. Pure: ``re`` only.
"""

from __future__ import annotations

import re

__all__ = ["NEG_CRED", "SHAPES", "card_number"]


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.I | re.S)


CRED_WORD = (r"(?:passwords?|passwd|passcodes?|pass phrase|passphrase|PINs?(?: codes?)?|api[ _-]?keys?|secret keys?|"
              r"access tokens?|auth(?:entication)? tokens?|bearer tokens?|session (?:tokens?|cookies?)|private keys?|"
              r"seed phrases?|recovery (?:phrases?|codes?)|credentials?|log-?in (?:details|info)|one-time (?:codes?|"
              r"passwords?)|OTPs?|2FA codes?|verification codes?|security codes?|CVV|CVC|social security numbers?|"
              r"SSNs?|card numbers?|credit card(?: numbers?| details)?|bank (?:details|account(?: numbers?)?)|"
              r"account numbers?|routing numbers?|sort codes?|IBAN)(?![a-z])")
#: a protective rule about the user's own secrets ("never ask me for my passwords"), taken out before the credential
#: patterns read the text: it asks for nothing
NEG_CRED = _rx(rf"\b(?:never|don't|do not|not|no need to)\s+(?:ever\s+)?"
                rf"(?:ask|request|collect|store|save|log|record|include|share|send|give|reveal|mention|put|paste|write|"
                rf"print|output|show|disclose|tell)\s+(?:me\s+|them\s+|the user\s+|users?\s+)?(?:for\s+)?"
                rf"(?:(?:my|their|his|her|the user's|the|any|any of (?:my|the|their)|actual|real)\s+)?"
                rf"(?:(?:actual|real)\s+)?"
                rf"{CRED_WORD}")
SHAPES = [
    # the assistant told to type the user's stored secrets into what it opens ("auto-open it and enter my saved
    # credentials for me", heldout_s23: a fake accessibility need): the secret handed to whatever page it is
    _rx(r"\b(?:enter|type|fill in|fill|paste|submit|input|use|put in)\s+(?:in\s+)?(?:my|the user's|their|his|her)\s+"
        r"(?:saved\s+|stored\s+|usual\s+)?(?:credentials|login details|log-?in|passwords?|passcodes?|pins?)\b"
        r"[^.!?\n]{0,24}?\b(?:for me|on my behalf|automatically|without asking)\b|"
        r"\bauto-?(?:fill|enter|type)\s+(?:in\s+)?(?:my\s+)?(?:saved\s+)?(?:credentials|passwords?|log-?ins?)\b"),
    _rx(rf"\b{CRED_WORD}\s*(?:is|are|was|:|=|-)\s*\S*\d\S*"),  # a value with a digit: "my PIN is 4921"
    # "password: hunter22x"; not a participle or a word of place ("my recovery codes are printed in a folder")
    _rx(rf"\b{CRED_WORD}\s*(?:is|are|was|:|=)\s*(?![a-z]+(?:ed|en)\b|(?:in|on|at|under|inside|somewhere|safe|"
        rf"secure|strong|weak|long|short|hidden|still|always|never|really)\b)['\"]?[^\s'\".,]{{6,}}"),
    _rx(rf"\b(?:send|share|e-?mail(?=\s+(?:me|them|him|her|it|my|the|all|every|any|those|these|this|that|out|"
        rf"[\w.+-]+@))|give|reveal|tell|forward|post|upload|include|provide|disclose|paste|print|"
        rf"output|read out|collect|ask (?:for|them for|the user for|users for)|request|store|save|log|record|"
        rf"transmit|leak|dump|export)\b[^.!?\n]{{0,60}}\b{CRED_WORD}"),
    # the secret first, then where to type it ("if I lose my recovery phrase, tell me to paste it there"): a phishing
    # page made a standing answer
    _rx(rf"\b{CRED_WORD}\b[^.!?\n]{{0,50}}\b(?:type|enter|paste|input|submit|put|key)\s+(?:it|them|that|this|"
        rf"(?:my|your|the)\s+\w+)?(?:\s+in|\s+into)?\s+(?:there|(?:that|this|the)\s+(?:site|page|link|form|app)|"
        rf"(?:on|at|into)\s+[\w-]+\.[a-z]{{2,}})"),
    _rx(r"\b(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{6,}|\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}|\bAKIA[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{20,}|\bxox[abpr]-[\w-]{10,}|"
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    _rx(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){3,7}(?: ?[A-Z0-9]{1,3})?\b"),  # IBAN
    # a log-in written as an address and a secret ("lina@corp-mail.cn / Lina2024xx")
    _rx(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+\s*(?:/|\||:|：|,|，)\s*(?=[^\s/|,，]*\d)(?=[^\s/|,，]*[A-Za-z])[^\s/|,，]{6,}"),
]
_CARD = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")


def _luhn(digits: str) -> bool:
    total, alt = 0, False
    for ch in reversed(digits):
        d = int(ch)
        if alt:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
        alt = not alt
    return total % 10 == 0


def card_number(text: str) -> str | None:
    """The first run of 13 to 19 digits (spaces and dashes between them allowed) in ``text`` that passes the Luhn
    check, or ``None``: a payment card's number (ISO/IEC 7812-1), not a phone number or an order id."""
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group(0))
        if 13 <= len(digits) <= 19 and _luhn(digits):
            return m.group(0)
    return None
