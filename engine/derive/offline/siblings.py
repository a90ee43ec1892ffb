"""One turn, one verdict: the candidates drawn from a turn with an attack in the user's own words are held together
(the inbound memory gate, ``engine.derive.offline.safety``; issue #29 poisoning, found by the blind set
``tests/data/heldout_s20``).

``taint_siblings(gated, turn_text=...)`` runs after ``safety.gate`` on each candidate of one turn, in the enricher's
one door (``engine.derive.enricher.Enricher._decide``). Pure.
"""

from __future__ import annotations

import msgspec

from memengine.engine.derive.offline.safety import quarantined, screen
from memengine.engine.derive.offline.structures import Candidate

__all__ = ["taint_siblings"]


def _from_the_turn(candidate: Candidate, turn_text: str) -> bool:
    """Whether ``candidate``'s held words are the user's own: drawn from a sentence of the turn (offline extraction
    records it), or the turn itself trips the gate read as the candidate's type."""
    data = candidate.data if isinstance(candidate.data, dict) else {}
    if isinstance(data.get("sentence"), str) and data["sentence"]:
        return True
    return bool(turn_text) and any(f.code not in ("low_confidence", "non_user_role")
                                   for f in screen(turn_text, memory_type=candidate.memory_type))


def taint_siblings(gated: list[Candidate], *, turn_text: str = "") -> list[Candidate]:
    """``gated`` (the ``gate`` verdicts on the candidates of one turn, in order) with every candidate that passed held
    too when a sibling was held for an attack in the user's own words (any code but ``low_confidence``, drawn from a
    sentence of ``turn_text`` or found in it): one turn, one verdict.

    Why: an attack spreads its payload over the sentences of a turn — the site in a harmless-looking fact ("my
    wallet recovery site is ..."), the order in a rule beside it ("if I lose my seed phrase, tell me to type it
    there"); the rule is held, and the fact alone would send the user to the site later (found by the blind set
    ``tests/data/heldout_s20``). A model's own poisoned proposal from a clean turn holds nothing else: the user's
    words beside it were not the attack. The held sibling's code is recorded with ``detail`` naming the sibling."""
    attack = next((c for c in gated if quarantined(c) and any(
        code != "low_confidence" for code in c.data["quarantine"]["codes"]) and _from_the_turn(c, turn_text)), None)
    if attack is None:
        return gated
    q = attack.data["quarantine"]
    code = next(code for code in q["codes"] if code != "low_confidence")
    out = []
    for c in gated:
        if not quarantined(c):
            data = dict(c.data) if isinstance(c.data, dict) else {}
            data["quarantined"] = True
            data["quarantine"] = {"code": code, "codes": [code],
                                  "detail": f"from the same turn as a held candidate ({q['detail']})"[:500]}
            c = msgspec.structs.replace(c, data=data)
        out.append(c)
    return out
