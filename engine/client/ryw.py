"""Read-your-writes for an agent session (issue #27 item 3): the last stream sequence a session wrote per thread.

An MCP session (``engine.integrations.mcp_server``) or an adapter instance records turns and then asks for context;
the model should not have to carry ``record_turn``'s ``seq`` into ``get_context``'s ``after_seq`` for the context to
hold what it just wrote. ``LastWritten`` remembers, per thread, the highest sequence this session's writes were
acknowledged at; ``after(thread, given)`` is the ``after_seq`` its next read of that thread sends: the larger of
that and the caller's own. Bounded: the least recently written threads are forgotten past ``max_threads`` (a read
of a forgotten thread just does not wait, as before).
"""

from __future__ import annotations

from collections import OrderedDict


class LastWritten:
    """Thread -> the highest stream sequence written there through this session (module docstring)."""

    def __init__(self, max_threads: int = 10_000) -> None:
        self.max_threads = max_threads
        self._seqs: OrderedDict[str, int] = OrderedDict()

    def note(self, thread: str, seq: int) -> None:
        """A write to ``thread`` was acknowledged at stream sequence ``seq``."""
        self._seqs[thread] = max(seq, self._seqs.get(thread, 0))
        self._seqs.move_to_end(thread)
        while len(self._seqs) > self.max_threads:
            self._seqs.popitem(last=False)

    def after(self, thread: str, given: int | None = None) -> int | None:
        """The ``after_seq`` for a read of ``thread``: the larger of ``given`` (the caller's) and this session's last
        write there; ``None`` when neither is known."""
        own = self._seqs.get(thread)
        if own is None:
            return given
        return own if given is None else max(own, given)
