"""Subject names and the validation of the tokens that go into them.

Layout (DESIGN.md "Subjects and streams"), with ``root`` = ``mem`` by default:

- facts:    ``<root>.fact.<tenant>.<thread>.<EventType>``
- derived:  ``<root>.drv.<tenant>.<thread>.<EventType>``
- dead letters: ``<root>.dlq.<consumer>``
- pushed context: ``<root>.ctx.<tenant>.<thread>``
- request/reply: ``<root>.rpc.<method>``, and ``<root>.rpc.<method>.<tenant>`` (tenant-scoped, for NATS permissions)

The root is configurable (``MEMENGINE_SUBJECT_ROOT``) so that several deployments, or the tests, can share one
NATS account without seeing each other's events.
"""

from __future__ import annotations

import functools
import re

from memengine.events.model import TOKEN_PATTERN

_TOKEN = re.compile(TOKEN_PATTERN)
_ROOT = re.compile(r"[A-Za-z0-9_-]{1,32}")


class InvalidToken(ValueError):
    """A tenant, thread or consumer id that cannot be a subject token.

    Raised for anything outside ``[A-Za-z0-9_-]{1,128}``: in particular ``*``, ``>`` and ``.``, which would turn a
    subject into a wildcard or add a level (DESIGN.md "Subjects and streams").
    """

    def __init__(self, what: str, value: object) -> None:
        self.what = what
        self.value = value
        super().__init__(f"invalid {what} {value!r}: expected 1-128 characters of [A-Za-z0-9_-]")


def check_token(what: str, value: object) -> str:
    """Return ``value`` if it is a valid subject token, else raise ``InvalidToken``."""
    # fullmatch: ``match`` with ``$`` accepted "A\n" ($ matches before a final newline; issue #17 defect 9)
    if not isinstance(value, str) or not _TOKEN.fullmatch(value):
        raise InvalidToken(what, value)
    return value


class Subjects:
    """Subject builders for one deployment root. Every builder validates its tokens (``InvalidToken``)."""

    def __init__(self, root: str = "mem") -> None:
        if not _ROOT.fullmatch(root):
            raise InvalidToken("subject root", root)
        self.root = root

    def fact(self, tenant: str, thread: str, event_type: str) -> str:
        """``<root>.fact.<tenant>.<thread>.<EventType>``"""
        return (f"{self.root}.fact.{check_token('tenant', tenant)}.{check_token('thread', thread)}"
                f".{check_token('event type', event_type)}")

    def derived(self, tenant: str, thread: str, event_type: str) -> str:
        """``<root>.drv.<tenant>.<thread>.<EventType>``"""
        return (f"{self.root}.drv.{check_token('tenant', tenant)}.{check_token('thread', thread)}"
                f".{check_token('event type', event_type)}")

    def dlq(self, consumer: str) -> str:
        """``<root>.dlq.<consumer>``"""
        return f"{self.root}.dlq.{check_token('consumer', consumer)}"

    def context(self, tenant: str, thread: str) -> str:
        """``<root>.ctx.<tenant>.<thread>``: where pushed context for a thread is published."""
        return f"{self.root}.ctx.{check_token('tenant', tenant)}.{check_token('thread', thread)}"

    def served(self, tenant: str, thread: str, event_type: str) -> str:
        """``<root>.served.<tenant>.<thread>.<EventType>``: one answer of the access trail (events/served.py)."""
        return (f"{self.root}.served.{check_token('tenant', tenant)}.{check_token('thread', thread)}"
                f".{check_token('event type', event_type)}")

    def thread_served(self, tenant: str, thread: str) -> str:
        """Filter of every served record of one thread (``served`` listings, forgetting)."""
        return f"{self.root}.served.{check_token('tenant', tenant)}.{check_token('thread', thread)}.*"

    @property
    def all_served(self) -> str:
        """The served stream's subjects: ``<root>.served.*.*.*``."""
        return f"{self.root}.served.*.*.*"

    def parse_served(self, subject: str) -> tuple[str, str, str]:
        """Split a served-record subject into ``(tenant, thread, event_type)``; ``ValueError`` if it is not one."""
        parts = subject.split(".")
        if len(parts) != 5 or parts[0] != self.root or parts[1] != "served" or not all(
                _TOKEN.fullmatch(p) for p in parts[2:]):
            raise ValueError(f"not a served-record subject: {subject!r}")
        return parts[2], parts[3], parts[4]

    def rpc(self, method: str) -> str:
        """``<root>.rpc.<method>``"""
        return f"{self.root}.rpc.{check_token('method', method)}"

    def rpc_scoped(self, method: str, tenant: str) -> str:
        """``<root>.rpc.<method>.<tenant>``: the same method, on a subject NATS permissions can scope to one tenant
        (``engine.adapters.security``); the handler refuses a payload naming another tenant."""
        return f"{self.rpc(method)}.{check_token('tenant', tenant)}"

    def thread_facts(self, tenant: str, thread: str) -> str:
        """Filter for every fact of one thread (used by purge and history); ``>`` so that it also matches the
        stored subjects of a partitioned stream (one more token)."""
        return f"{self.root}.fact.{check_token('tenant', tenant)}.{check_token('thread', thread)}.>"

    def partition_transform(self, partitions: int) -> tuple[str, str]:
        """``(src, dest)`` of the facts stream's subject transform for ``partitions`` > 1 (nats-server subject
        mapping, ``partition(n, wildcard indexes...)``: FNV-1a of tenant and thread modulo n)."""
        if partitions < 2:
            raise ValueError("a partition transform needs at least 2 partitions")
        return (f"{self.root}.fact.*.*.*",
                f"{self.root}.fact.{{{{wildcard(1)}}}}.{{{{wildcard(2)}}}}.{{{{wildcard(3)}}}}"
                f".{{{{partition({partitions},1,2)}}}}")

    def fact_partition(self, partition: int) -> str:
        """Filter of one partition's stored facts: ``<root>.fact.*.*.*.<partition>``."""
        if partition < 0:
            raise ValueError(f"invalid partition {partition}")
        return f"{self.root}.fact.*.*.*.{partition}"

    @property
    def all_facts(self) -> str:
        """Filter of every stored fact (five tokens, or six in a partitioned stream): consumers read with it."""
        return f"{self.root}.fact.>"

    @property
    def publish_facts(self) -> str:
        """``<root>.fact.*.*.*``: the facts stream's subjects, i.e. what a publisher may store (issue #17 defect 12:
        with ``fact.>`` a six-token publish was stored and taken as a fact, or chose its own partition)."""
        return f"{self.root}.fact.*.*.*"

    @property
    def all_derived(self) -> str:
        return f"{self.root}.drv.>"

    @property
    def all_dlq(self) -> str:
        return f"{self.root}.dlq.>"

    def parse_derived(self, subject: str) -> tuple[str, str, str]:
        """Split a derived-event subject into ``(tenant, thread, event_type)``; ``ValueError`` if it is not one."""
        parts = subject.split(".")
        if len(parts) != 5 or parts[0] != self.root or parts[1] != "drv" or not all(
                _TOKEN.fullmatch(p) for p in parts[2:]):
            raise ValueError(f"not a derived-event subject: {subject!r}")
        return parts[2], parts[3], parts[4]

    def parse_fact(self, subject: str, *, partitioned: bool = False) -> tuple[str, str, str]:
        """Split a fact subject into ``(tenant, thread, event_type)``; ``ValueError`` if it is not one.

        Exactly the shapes the contract defines (issue #17 defect 12): ``<root>.fact.<tenant>.<thread>.<Type>``,
        each token a valid token; and, only when ``partitioned`` (the facts stream stores under the partition
        transform, ``partition_transform``), the server-added sixth token, a partition number in canonical decimal.
        Publishers cannot add that token themselves: the stream only stores five-token subjects
        (``publish_facts``), so a six-token subject is the server's, or a relic of an unpartitioned stream from
        before that filter, which is refused.

        Memoised per (root, subject, partitioned): a thread's events share one subject, and the projectors parse
        every event's (issue #13 item 1: 16 us a call in the ingest profile); a refused subject is not cached."""
        return _parse_fact(self.root, subject, partitioned)


@functools.lru_cache(maxsize=16_384)
def _parse_fact(root: str, subject: str, partitioned: bool) -> tuple[str, str, str]:
    parts = subject.split(".")
    if partitioned and len(parts) == 6 and parts[5].isdigit() and str(int(parts[5])) == parts[5]:
        parts = parts[:5]
    if len(parts) != 5 or parts[0] != root or parts[1] != "fact" or not all(_TOKEN.fullmatch(p) for p in parts[2:]):
        raise ValueError(f"not a fact subject: {subject!r}")
    return parts[2], parts[3], parts[4]
