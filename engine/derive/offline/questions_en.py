"""Whether an English clause asks or leaves open what it is about (issue #29): "how do I improve", "when I turn left",
"that's what I'm on" state nothing to remember. Split from ``parse_en`` (module size); pure."""

from __future__ import annotations

import re
from typing import Any

#: a sentence asked, with its mark or without it ("how do i not get lost on campus", "any tips for a first car?"):
#: read without a parse, for what the learned readers keep or fold (``generalise.learned``, ``same_slot``)
ASKED = re.compile(r"\?\s*$|^\s*(?:how|what|what's|where|when|why|who|which|should|shall|can|could|would|will|"
                   r"is|are|am|do|does|did|any|anyone|tips)\b", re.I)


def asks(doc: Any, head: Any, idx: list[int]) -> bool:
    """Whether a clause asks or leaves open what it is about ("how do I improve", "when I turn left", "that's what
    I'm on"): a wh-word of its own, not one of a relative clause inside it ("a city where it rains"). Such a clause
    states nothing to remember."""
    for i in idx:
        t = doc[i]
        if t.tag_ not in ("WP", "WRB", "WDT", "WP$") or t.i == head.i:
            continue
        up = t.head
        while up.i != head.i and up.dep_ not in ("relcl", "acl") and up.head.i != up.i:
            up = up.head
        if up.i == head.i:
            return True
    return False
