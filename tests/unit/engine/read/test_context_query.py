"""``engine.read.context_query.pruned_row``: a pruned turn brought back from its recall row reads and costs what its
message did in the transcript (issue #27): no speaker label, no photo caption the recall fold adds for search."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from memengine.engine.read.context_query import pruned_row
from memengine.events import TextBlock
from memengine.projections.content import message_tokens


def _recall_row(speaker: str, piece: str) -> dict[str, object]:
    return {"seq": 7, "event_id": "e7", "role": "user", "user_id": speaker, "session_id": "s1",
            "occurred_at": datetime(2023, 5, 8, tzinfo=UTC), "piece": piece, "speaker": speaker}


def test_caption_and_label_are_not_part_of_the_message() -> None:
    row = pruned_row(_recall_row("Caroline", "Caroline: Look at my new painting! [shares a photo of a sunset]"))
    assert msgspec.json.decode(row.content) == [{"type": "text", "text": "Look at my new painting!"}]
    assert row.tokens_full == row.tokens_condensed == message_tokens([TextBlock(text="Look at my new painting!")])
    # brackets inside the text stay; only the fold's trailing suffix goes
    row = pruned_row(_recall_row("Jon", "Jon: I [shares nothing] said it"))
    assert msgspec.json.decode(row.content)[0]["text"] == "I [shares nothing] said it"


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet="abc xyz.!?[]", min_size=1, max_size=80).map(lambda t: " ".join(t.split())),
       caption=st.one_of(st.none(), st.text(alphabet="a photo of dog", min_size=1, max_size=40)))
def test_pruned_turn_costs_what_its_message_did(text: str, caption: str | None) -> None:
    """Whatever the text and caption, the row's text is the turn's own (as ``projections.vectors.split_text`` built
    the piece from it) and it is charged as the transcript fold charges that message."""
    body = text + (f" [shares {caption}]" if caption else "")
    row = pruned_row(_recall_row("Gina", f"Gina: {body}"))
    got = msgspec.json.decode(row.content)[0]["text"]
    if caption or not text.endswith("]"):
        assert got == text
    assert row.tokens_full == message_tokens([TextBlock(text=got)])
