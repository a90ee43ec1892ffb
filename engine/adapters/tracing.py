"""OpenTelemetry SDK and OTLP/HTTP exporter for the engine's spans (issue #12 item 3), when the settings say so.

``Settings.tracing`` is "off" by default: then nothing here imports ``opentelemetry`` and ``engine.wire.tracing``
makes no span and writes no ``traceparent``. With "otlp" (``MEMENGINE_TRACING=otlp``, or the SDK's standard
``OTEL_TRACES_EXPORTER=otlp`` / ``OTEL_EXPORTER_OTLP_ENDPOINT``; ``engine.adapters.settings``) the engine's process
gets its own ``TracerProvider`` (resource ``service.name`` = ``OTEL_SERVICE_NAME``, default ``memengine``) whose
``BatchSpanProcessor`` exports over OTLP/HTTP protobuf to ``Settings.otlp_endpoint`` (the collector's
``/v1/traces``; opentelemetry.io/docs/specs/otlp "OTLP/HTTP"). The provider is not installed as the process-wide
global: an embedding application keeps its own. Needs the ``tracing`` extra (``opentelemetry-sdk``,
``opentelemetry-exporter-otlp-proto-http``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memengine.engine.adapters.settings import Settings, SettingsError
from memengine.engine.wire import tracing


def provider_for(settings: Settings, exporter: Any = None) -> Any:
    """A ``TracerProvider`` exporting to ``exporter`` (default: ``OTLPSpanExporter(settings.otlp_endpoint)``)
    through a ``BatchSpanProcessor``. Raises ``SettingsError`` when the ``tracing`` extra is not installed."""
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        raise SettingsError(
            "MEMENGINE_TRACING=otlp needs the tracing extra: pip install 'memengine[tracing]'") from None
    if exporter is None:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            raise SettingsError("MEMENGINE_TRACING=otlp needs opentelemetry-exporter-otlp-proto-http:"
                                " pip install 'memengine[tracing]'") from None
        exporter = OTLPSpanExporter(endpoint=settings.otlp_endpoint)
    provider = TracerProvider(resource=Resource.create({"service.name": settings.otel_service_name}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def start_tracing(settings: Settings) -> Callable[[], None] | None:
    """Turn tracing on for this process when ``settings.tracing == "otlp"``; returns the function that flushes
    the spans still queued and turns it off again (call it at shutdown), or ``None`` when tracing stays off."""
    if settings.tracing != "otlp":
        return None
    provider = provider_for(settings)
    tracing.enable(provider)

    def stop() -> None:
        tracing.disable()
        provider.shutdown()  # flushes the batch processor: spans of the last requests are not lost

    return stop
