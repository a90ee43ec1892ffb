"""Trace context on the wire: W3C ``traceparent`` / ``tracestate`` in NATS headers, and the spans around them.

Issue #12 item 3: OpenTelemetry spans from publish through projector commit to the query reply, off by default.
The header is the W3C Trace Context (www.w3.org/TR/trace-context, "traceparent header"), written and read by the
OpenTelemetry API's ``TraceContextTextMapPropagator``; NATS headers carry it like HTTP headers. Spans follow the
OpenTelemetry messaging conventions (opentelemetry.io/docs/specs/semconv/messaging/messaging-spans): ``publish``
(PRODUCER), ``project <projector>`` (CONSUMER: one span per committed batch, *linked* to the publish span of every
traced event in it, and its child when the batch holds exactly one), ``query <method>`` (SERVER: the query
handler's reply, a child of the caller's span when the request carried a ``traceparent``).

This module lives in ``engine.wire`` because the client (agent side) injects the header and may import nothing of
the engine's adapters; the SDK and the OTLP exporter are set up by ``engine.adapters.tracing``. Off (the default)
it imports nothing: ``opentelemetry`` is imported the first time ``enable()`` is called, so ``memengine --help``
and every untraced process never load it, and no header is added. Only the OpenTelemetry *API* is used here
(``opentelemetry-api``); an agent process that wants its publishes traced calls ``enable()`` (its global tracer
provider) or ``enable(provider)``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from typing import Any, TypeVar

#: The tracer when tracing is on (``enable``), else ``None``: the one switch every call checks first.
_tracer: Any = None
#: Spans link to at most this many publishes (the SDK's default ``OTEL_SPAN_LINK_COUNT_LIMIT`` is 128).
MAX_LINKS = 128


def enable(provider: Any = None) -> None:
    """Trace from now on, with ``provider`` (an ``opentelemetry.sdk.trace.TracerProvider``; ``None``: the global
    one, which an agent process configures itself). Imports ``opentelemetry`` (``opentelemetry-api``)."""
    global _tracer
    from opentelemetry import trace

    _tracer = (provider or trace.get_tracer_provider()).get_tracer("memengine")


def disable() -> None:
    """Stop tracing: spans are no longer made, headers no longer written."""
    global _tracer
    _tracer = None


def enabled() -> bool:
    """Whether ``enable()`` is in force."""
    return _tracer is not None


_H = TypeVar("_H", bound=MutableMapping[str, str])


def inject(headers: _H) -> _H:
    """Write the current span's ``traceparent`` (and ``tracestate``) into ``headers`` (NATS or HTTP) and return
    them; unchanged when tracing is off or no span is current."""
    if _tracer is not None:
        from opentelemetry.propagate import inject as _inject

        _inject(headers)
    return headers


def _context(headers: Mapping[str, str] | None) -> Any:
    """The remote context of ``headers``' ``traceparent`` (an OpenTelemetry ``Context``), or ``None``."""
    if not headers or "traceparent" not in headers:
        return None
    from opentelemetry.propagate import extract

    return extract(dict(headers))


@contextlib.contextmanager
def span(name: str, *, kind: str = "internal", parent: Mapping[str, str] | None = None,
         links: Iterable[Mapping[str, str] | None] = (), attributes: Mapping[str, Any] | None = None,
         ) -> Iterator[Any]:
    """A span named ``name`` around the block, current inside it; yields the span, or ``None`` when tracing is
    off (then it costs one comparison). ``kind``: internal | producer | consumer | server | client. ``parent``:
    the headers of a remote caller (its ``traceparent`` becomes the parent; else the current span is). ``links``:
    headers of the messages a batch span covers (their spans are linked, at most ``MAX_LINKS``). An exception
    leaving the block is recorded on the span and re-raised."""
    if _tracer is None:
        yield None
        return
    from opentelemetry import trace

    span_links = []
    for headers in links:
        ctx = _context(headers)
        sc = trace.get_current_span(ctx).get_span_context() if ctx is not None else None
        if sc is not None and sc.is_valid:
            span_links.append(trace.Link(sc))
            if len(span_links) >= MAX_LINKS:
                break
    with _tracer.start_as_current_span(name, context=_context(parent), kind=trace.SpanKind[kind.upper()],
                                       links=span_links, attributes=dict(attributes or {})) as s:
        yield s


def set_attributes(s: Any, **attributes: Any) -> None:
    """Set ``attributes`` on ``s`` (a span from ``span``; nothing when it is ``None``). Dots in names are written
    as ``__``: ``messaging__message__id`` = ``messaging.message.id``."""
    if s is not None:
        for key, value in attributes.items():
            if value is not None:
                s.set_attribute(key.replace("__", "."), value)


@contextlib.contextmanager
def remote_parent(headers: Mapping[str, str] | None) -> Iterator[None]:
    """Make the remote span of ``headers``' ``traceparent`` current inside the block (spans started there become
    its children); nothing when tracing is off or there is no ``traceparent``."""
    ctx = _context(headers) if _tracer is not None else None
    if ctx is None:
        yield
        return
    from opentelemetry import context

    token = context.attach(ctx)
    try:
        yield
    finally:
        context.detach(token)
