"""Prometheus metrics and the liveness / readiness endpoints (issue #6 §8).

``memengine up --metrics-port N`` (or ``MEMENGINE_METRICS_PORT``) serves on ``MEMENGINE_METRICS_HOST`` (``127.0.0.1``:
loopback unless configured, issue #17; the container image sets ``0.0.0.0`` for scrapers and probes):

- ``GET /metrics``: Prometheus text format 0.0.4. Gathered at scrape time (one stream-info call per stream, one
  consumer listing, two small SQL queries), so every figure is current and no background task is needed:

  =============================================== ========= ===================================================
  metric                                          type      meaning
  =============================================== ========= ===================================================
  ``memengine_stream_last_seq{stream}``           gauge     last sequence of each stream
  ``memengine_stream_messages{stream}``           gauge     messages held (the DLQ stream's = DLQ size)
  ``memengine_projection_checkpoint{projection}`` gauge     last sequence the projection applied (any process)
  ``memengine_projection_lag{projection}``        gauge     stream last seq - checkpoint, in events
  ``memengine_consumer_pending{stream,consumer}`` gauge     messages the durable consumer has not been given yet
  ``memengine_projection_events_total``           counter   events folded by this process, per projector and
                                                            projection (``rate()`` = events/s)
  ``memengine_projector_dead_letters_total``      counter   events this process dead-lettered, per projector
  ``memengine_projector_active{projector}``       gauge     1 if this process holds the projector's lock
  ``memengine_dead_letters{consumer,status}``     gauge     rows of ``dead_letters`` (all processes)
  ``memengine_rpc_duration_seconds{method}``      histogram time to answer a request, decode to reply
  ``memengine_rpc_requests_total{method,code}``   counter   replies by code (``ok`` or the error code)
  ``memengine_llm_calls_total{model}`` ...        counter   LLM calls, failures, prompt / completion tokens, turns
  ``memengine_llm_fallbacks_total{model,task,reason}`` counter answers not used (the offline rules decided instead)
  ``memengine_served_records_total{outcome}``     counter   access-trail answers published / dropped_full /
                                                            dropped_failed (issue #30; no user or thread label)
  ``memengine_served_bytes_total``                counter   bytes of served records published
  ``memengine_served_pending``                    gauge     answers queued for the served stream
  ``memengine_read_models_up``                    gauge     1 if the last scrape reached PostgreSQL and NATS
  ``memengine_embedding_backlog_rows{model}``     gauge     turns waiting for their vector (recallable by words
                                                            meanwhile; engine.embedding.backlog)
  ``memengine_embedding_oldest_waiting_seconds``  gauge     age of the longest-waiting turn's event in the log
  ``memengine_embedding_texts_per_second``        gauge     texts embedded per second over the worker's last 30 s
  ``memengine_embedding_texts_total{model}``      counter   texts this process sent to the embedding model
  =============================================== ========= ===================================================

- ``GET /healthz`` (liveness): 200 while the event loop answers and the NATS connection is not closed for good.
- ``GET /readyz`` (readiness): 200 when NATS is connected and PostgreSQL answers ``SELECT 1`` within 2 s (and the
  query handler's broker runs, for the query role); else 503 with the reasons as JSON.

``snapshot(engine)`` returns the shared figures as a dict; ``memengine status`` prints the same figures and, given a
running ``up``'s endpoint, its process counters (``scrape``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.request
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import structlog
from nats.js.errors import NotFoundError
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from memengine.engine.adapters.checkpoints import CheckpointStore
from memengine.engine.embedding.backlog import embedding_backlog
from memengine.engine.read.rpc import REGISTRY  # the RPC histograms: timed at the RPC edge, served here

if TYPE_CHECKING:
    from memengine.engine.bootstrap import Engine

log = structlog.get_logger("memengine.metrics")


async def snapshot(engine: "Engine") -> dict[str, Any]:
    """The figures ``/metrics`` and ``memengine status`` share: ``streams`` (messages, bytes, first/last seq),
    ``checkpoints`` (projection, version, stream, last_seq, lag, updated_at), ``consumers`` (stream, name, pending,
    ack_pending, redelivered, waiting, delivered_seq), ``dead_letters`` (consumer, status, count), ``projectors``
    (this process: active, events, dead, skipped, batches, last_seq, projections), ``llm`` (this process's calls
    and tokens, or ``None``) and ``embedding`` (per model: waiting, oldest_seq, oldest_age_s, texts_per_s,
    progress_at; ``engine.embedding.backlog``)."""
    streams: dict[str, dict[str, int]] = {}
    for name in (engine.streams.facts, engine.streams.derived, engine.streams.dlq, engine.streams.served):
        try:
            si = await engine.js.stream_info(name)
        except NotFoundError:
            if name == engine.streams.served:  # the access trail is optional to answering (issue #30)
                continue
            raise
        streams[name] = {"messages": si.state.messages, "bytes": si.state.bytes,
                         "first_seq": si.state.first_seq, "last_seq": si.state.last_seq}
    consumers = []
    for stream in (engine.streams.facts, engine.streams.derived, engine.streams.served):
        if stream not in streams:
            continue
        for ci in await engine.js.consumers_info(stream):
            consumers.append({"stream": stream, "name": ci.name, "pending": ci.num_pending,
                              "ack_pending": ci.num_ack_pending, "redelivered": ci.num_redelivered,
                              "waiting": ci.num_waiting,
                              "delivered_seq": ci.delivered.stream_seq if ci.delivered else None})
    rows = await CheckpointStore(engine.pool).rows()
    checkpoints = [{"projection": r["projection"], "version": r["version"], "stream": r["stream"],
                    "last_seq": r["last_seq"],
                    "lag": max(0, streams.get(r["stream"], {}).get("last_seq", 0) - r["last_seq"]),
                    "updated_at": r["updated_at"].isoformat()} for r in rows]
    dead = await engine.pool.fetch(
        "SELECT consumer, status, count(*) AS n FROM dead_letters GROUP BY 1, 2 ORDER BY 1, 2")
    return {"streams": streams, "consumers": consumers, "checkpoints": checkpoints,
            "dead_letters": [{"consumer": r["consumer"], "status": r["status"], "count": r["n"]} for r in dead],
            "projectors": process_figures(engine), "llm": llm_figures(engine), "trail": trail_figures(engine),
            "embedding": await embedding_backlog(engine.pool, engine.js, engine.streams.facts)}


def process_figures(engine: "Engine") -> dict[str, dict[str, Any]]:
    """Counters of this process's projector runners (zero in a process on standby)."""
    out = {}
    for runner in (engine.runner, engine.recall, engine.derived, *([engine.access] if engine.access else [])):
        s = runner.stats
        out[runner.name] = {"active": bool(runner.active), "events": s.events, "dead": s.dead,
                            "skipped": s.skipped, "batches": s.batches, "last_seq": s.last_seq,
                            "projections": [p.name for p in runner.projections]}
    return out


def trail_figures(engine: "Engine") -> dict[str, int] | None:
    """This process's access-trail counters (``engine.read.trail.TrailStats``: recorded, published, bytes,
    dropped_full, dropped_failed, pending), or ``None`` with the trail off (issue #30)."""
    if engine.trail is None:
        return None
    s = engine.trail.stats()
    return {"recorded": s.recorded, "published": s.published, "bytes": s.bytes, "dropped_full": s.dropped_full,
            "dropped_failed": s.dropped_failed, "pending": s.pending}


def llm_figures(engine: "Engine") -> dict[str, Any] | None:
    """The enricher's LLM accounting (``engine.derive.llm.Usage``), or ``None`` with the offline deriver."""
    deriver: Any = getattr(engine.enricher, "deriver", None)
    usage = getattr(deriver, "usage", None)
    if usage is None:
        return None
    turns = usage.turns
    return {"model": deriver.model, "calls": usage.calls, "failures": usage.failures,
            "prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
            "prompt_tokens_sent": usage.prompt_tokens_sent, "turns": turns,
            # the cost per user turn (issue #29 item 3: what users of Graphiti and Mem0 cannot see)
            "calls_per_turn": round(usage.calls / turns, 3) if turns else None,
            "tokens_per_turn": round((usage.prompt_tokens + usage.completion_tokens) / turns, 1) if turns else None,
            "fallbacks": dict(usage.fallbacks)}


class _EngineCollector:
    """Turns the last ``snapshot`` (refreshed by the HTTP handler before each scrape) into metric families."""

    def __init__(self, engine: "Engine") -> None:
        self.engine = engine
        self.last: dict[str, Any] | None = None
        self.up = 0

    def collect(self) -> Iterator[Metric]:
        snap = self.last or {}
        up = GaugeMetricFamily("memengine_read_models_up", "1 if the last scrape reached PostgreSQL and NATS.")
        up.add_metric([], self.up)
        yield up
        g_last = GaugeMetricFamily("memengine_stream_last_seq", "Last sequence of the stream.", labels=["stream"])
        g_msgs = GaugeMetricFamily("memengine_stream_messages", "Messages held by the stream (DLQ: its size).",
                                   labels=["stream"])
        for name, s in snap.get("streams", {}).items():
            g_last.add_metric([name], s["last_seq"])
            g_msgs.add_metric([name], s["messages"])
        yield g_last
        yield g_msgs
        g_cp = GaugeMetricFamily("memengine_projection_checkpoint", "Last stream sequence the projection applied.",
                                 labels=["projection"])
        g_lag = GaugeMetricFamily("memengine_projection_lag", "Stream last sequence minus the checkpoint (events).",
                                  labels=["projection"])
        for c in snap.get("checkpoints", []):
            g_cp.add_metric([c["projection"]], c["last_seq"])
            g_lag.add_metric([c["projection"]], c["lag"])
        yield g_cp
        yield g_lag
        g_pend = GaugeMetricFamily("memengine_consumer_pending", "Messages not yet delivered to the consumer.",
                                   labels=["stream", "consumer"])
        for c in snap.get("consumers", []):
            g_pend.add_metric([c["stream"], c["name"]], c["pending"])
        yield g_pend
        g_dead = GaugeMetricFamily("memengine_dead_letters", "Rows of dead_letters.", labels=["consumer", "status"])
        for d in snap.get("dead_letters", []):
            g_dead.add_metric([d["consumer"], d["status"]], d["count"])
        yield g_dead
        g_wait = GaugeMetricFamily("memengine_embedding_backlog_rows",
                                   "Turns waiting for their vector (recallable by their words meanwhile).",
                                   labels=["model"])
        g_age = GaugeMetricFamily("memengine_embedding_oldest_waiting_seconds",
                                  "Seconds since the log stored the event of the longest-waiting turn (0: none).",
                                  labels=["model"])
        g_rate = GaugeMetricFamily("memengine_embedding_texts_per_second",
                                   "Texts embedded per second over the embedder worker's last 30 s.",
                                   labels=["model"])
        for b in snap.get("embedding", []):
            g_wait.add_metric([b["model"]], b["waiting"])
            g_age.add_metric([b["model"]], b["oldest_age_s"] or 0.0)
            g_rate.add_metric([b["model"]], b["texts_per_s"])
        yield g_wait
        yield g_age
        yield g_rate
        worker = self.engine.embed_worker
        if worker is not None:
            c_emb = CounterMetricFamily("memengine_embedding_texts", "Texts this process sent to the embedding model.",
                                        labels=["model"])
            c_emb.add_metric([worker.embedder.name], worker.stats.embedded)
            yield c_emb
        # Process counters are read live (in-memory, no I/O): they are right even if the refresh failed.
        c_ev = CounterMetricFamily("memengine_projection_events", "Events folded by this process.",
                                   labels=["projector", "projection"])
        c_dead = CounterMetricFamily("memengine_projector_dead_letters", "Events this process dead-lettered.",
                                     labels=["projector"])
        g_act = GaugeMetricFamily("memengine_projector_active", "1 if this process holds the projector's lock.",
                                  labels=["projector"])
        for name, p in process_figures(self.engine).items():
            for projection in p["projections"]:
                c_ev.add_metric([name, projection], p["events"])
            c_dead.add_metric([name], p["dead"])
            g_act.add_metric([name], 1 if p["active"] else 0)
        yield c_ev
        yield c_dead
        yield g_act
        trail = trail_figures(self.engine)
        if trail is not None:  # issue #30; labels bounded: the three outcomes, never a user or thread
            c_srv = CounterMetricFamily("memengine_served_records", "Answers of the access trail by outcome"
                                        " (published, dropped_full: queue full, dropped_failed: publish failed).",
                                        labels=["outcome"])
            for outcome in ("published", "dropped_full", "dropped_failed"):
                c_srv.add_metric([outcome], trail[outcome])
            yield c_srv
            c_bytes = CounterMetricFamily("memengine_served_bytes", "Bytes of served records published.")
            c_bytes.add_metric([], trail["bytes"])
            yield c_bytes
            g_pend_t = GaugeMetricFamily("memengine_served_pending", "Answers queued for the served stream.")
            g_pend_t.add_metric([], trail["pending"])
            yield g_pend_t
        llm = llm_figures(self.engine)
        if llm is not None:
            for key, help_ in (("calls", "LLM calls made."), ("failures", "LLM calls that failed."),
                               ("prompt_tokens", "Prompt tokens reported by the model server."),
                               ("completion_tokens", "Completion tokens reported by the model server."),
                               ("prompt_tokens_sent", "Prompt tokens counted here (cl100k_base)."),
                               ("turns", "User turns given to the model for extraction.")):
                fam = CounterMetricFamily(f"memengine_llm_{key}", help_, labels=["model"])
                fam.add_metric([llm["model"]], llm[key])
                yield fam
            fb = CounterMetricFamily("memengine_llm_fallbacks", "Model answers not used, the offline rules deciding"
                                     " instead, by task and reason (engine.derive.llm.FALLBACK_REASONS).",
                                     labels=["model", "task", "reason"])
            for key, n in sorted(llm["fallbacks"].items()):
                task, _, reason = key.partition(":")
                fb.add_metric([llm["model"], task, reason], n)
            yield fb


class _Forward:
    """Exposes the process-wide RPC registry through the per-server one."""

    def collect(self) -> Iterator[Metric]:
        yield from REGISTRY.collect()


class MetricsServer:
    """The HTTP endpoint: ``/metrics``, ``/healthz``, ``/readyz``. ``port=0`` picks a free port (``.port`` after
    ``start()``). A tiny asyncio HTTP/1.0 server: one request per connection, GET only."""

    def __init__(self, engine: "Engine", port: int, host: str = "127.0.0.1") -> None:
        self.engine = engine
        self.host = host
        self.port = port
        self.collector = _EngineCollector(engine)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self.collector)
        self.registry.register(_Forward())
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> "MetricsServer":
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("metrics endpoint", host=self.host, port=self.port)
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

    async def render(self) -> bytes:
        """Refresh the snapshot and render the text format."""
        try:
            self.collector.last = await asyncio.wait_for(snapshot(self.engine), timeout=5)
            self.collector.up = 1
        except Exception as exc:  # noqa: BLE001 - a scrape must answer even when a server is down
            log.warning("metrics snapshot failed", error=repr(exc))
            self.collector.up = 0
        return generate_latest(self.registry)

    async def readiness(self) -> tuple[bool, dict[str, Any]]:
        """``(ready, checks)``: ``nats`` connected, ``postgres`` answering, ``query`` broker running (if served)."""
        checks: dict[str, Any] = {"nats": bool(self.engine.nc.is_connected)}
        try:
            await asyncio.wait_for(self.engine.pool.fetchval("SELECT 1"), timeout=2)
            checks["postgres"] = True
        except Exception as exc:  # noqa: BLE001 - a health check reports any failure of the database as down, never raises
            checks["postgres"] = False
            checks["postgres_error"] = type(exc).__name__
        if "query" in self.engine.roles:
            checks["query"] = self.engine.broker is not None and bool(getattr(self.engine.broker, "running", True))
        return all(v for k, v in checks.items() if not k.endswith("_error")), checks

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), timeout=5)
            while (await asyncio.wait_for(reader.readline(), timeout=5)) not in (b"\r\n", b"\n", b""):
                pass  # headers are not needed
            parts = line.decode("latin-1").split()
            method, path = (parts[0], parts[1].split("?")[0]) if len(parts) >= 2 else ("", "")
            ctype = "application/json"
            if method != "GET":
                status, body = 405, b'{"error": "GET only"}'
            elif path == "/metrics":
                status, body, ctype = 200, await self.render(), "text/plain; version=0.0.4; charset=utf-8"
            elif path == "/healthz":
                alive = not self.engine.nc.is_closed
                status, body = (200 if alive else 503), json.dumps({"alive": alive}).encode()
            elif path == "/readyz":
                ready, checks = await self.readiness()
                status, body = (200 if ready else 503), json.dumps({"ready": ready, **checks}).encode()
            else:
                status, body = 404, b'{"error": "not found"}'
            reason = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 503: "Service Unavailable"}[status]
            writer.write(f"HTTP/1.0 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                         "Connection: close\r\n\r\n".encode() + body)
            await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


def scrape(url: str, timeout: float = 3.0) -> dict[str, Any]:
    """Read a running ``memengine up``'s ``/metrics`` and summarise its process figures for ``memengine status``:
    ``projection_events`` per ``projector/projection``, ``rpc`` per method (``requests``, ``errors``,
    ``mean_ms``), ``llm`` counters. Raises ``OSError`` if it cannot be reached."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url, timeout=timeout) as resp:  # an operator-given URL
        text = resp.read().decode()
    out: dict[str, Any] = {"url": url, "projection_events": {}, "rpc": {}, "llm": {}, "trail": {}}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == "memengine_projection_events_total":
                out["projection_events"][f"{s.labels['projector']}/{s.labels['projection']}"] = int(s.value)
            elif s.name == "memengine_rpc_requests_total":
                r = out["rpc"].setdefault(s.labels["method"], {"requests": 0, "errors": 0, "sum_s": 0.0})
                r["requests"] += int(s.value)
                if s.labels["code"] != "ok":
                    r["errors"] += int(s.value)
            elif s.name == "memengine_rpc_duration_seconds_sum":
                out["rpc"].setdefault(s.labels["method"], {"requests": 0, "errors": 0, "sum_s": 0.0})["sum_s"] = s.value
            elif s.name == "memengine_served_records_total":
                out["trail"][s.labels["outcome"]] = int(s.value)
            elif s.name == "memengine_llm_fallbacks_total":
                key = f"fallbacks {s.labels['task']} {s.labels['reason']}"
                out["llm"][key] = out["llm"].get(key, 0) + int(s.value)
            elif s.name.startswith("memengine_llm_") and s.name.endswith("_total"):
                out["llm"][s.name[len("memengine_llm_"):-len("_total")]] = int(s.value)
    llm = out["llm"]
    if llm.get("turns"):  # per user turn: what a turn costs (issue #29 item 3)
        llm["calls per turn"] = round(llm.get("calls", 0) / llm["turns"], 2)
        llm["tokens per turn"] = round((llm.get("prompt_tokens", 0) + llm.get("completion_tokens", 0))
                                       / llm["turns"], 1)
    for r in out["rpc"].values():
        r["mean_ms"] = round(1000 * r.pop("sum_s") / r["requests"], 3) if r["requests"] else None
    return out
