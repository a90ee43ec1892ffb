"""Tracing configuration (issue #12 item 3): which environment turns it on, where spans go, and that off costs no
import of OpenTelemetry (engine.adapters.tracing, engine.wire.tracing)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from memengine.engine.adapters.settings import Settings, SettingsError
from memengine.engine.adapters.tracing import provider_for, start_tracing
from memengine.engine.wire import tracing


@pytest.mark.parametrize(("env", "mode", "endpoint"), [
    ({}, "off", "http://localhost:4318/v1/traces"),
    ({"MEMENGINE_TRACING": "otlp"}, "otlp", "http://localhost:4318/v1/traces"),
    ({"OTEL_TRACES_EXPORTER": "otlp"}, "otlp", "http://localhost:4318/v1/traces"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"}, "otlp", "http://collector:4318/v1/traces"),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/custom"}, "otlp", "http://c:4318/custom"),
    # the explicit switch wins over the standard variables
    ({"MEMENGINE_TRACING": "off", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, "off", "http://c:4318/v1/traces"),
    ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, "off",
     "http://c:4318/v1/traces"),
])
def test_tracing_settings_from_the_environment(env: dict[str, str], mode: str, endpoint: str) -> None:
    s = Settings.from_env(env=env)
    assert (s.tracing, s.otlp_endpoint) == (mode, endpoint)


@pytest.mark.parametrize("env", [{"MEMENGINE_TRACING": "jaeger"}, {"OTEL_TRACES_EXPORTER": "zipkin"}])
def test_an_unknown_exporter_is_a_settings_error(env: dict[str, str]) -> None:
    with pytest.raises(SettingsError, match="MEMENGINE_TRACING"):
        Settings.from_env(env=env)


def test_otlp_exports_over_http_to_the_configured_endpoint() -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    s = Settings.from_env(env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SERVICE_NAME": "mem-a"})
    provider = provider_for(s)
    try:
        [processor] = provider._active_span_processor._span_processors
        exporter = processor._batch_processor._exporter
        assert isinstance(exporter, OTLPSpanExporter)
        assert exporter._endpoint == "http://collector:4318/v1/traces"
        assert provider.resource.attributes["service.name"] == "mem-a"
    finally:
        provider.shutdown()
    assert start_tracing(Settings.from_env(env={})) is None and not tracing.enabled()


def test_tracing_off_imports_no_opentelemetry() -> None:
    code = ("import sys\n"
            "from memengine.engine.adapters import tracing as a\n"
            "from memengine.engine.adapters.settings import Settings\n"
            "from memengine.engine.client import memory_client\n"
            "from memengine.engine.runtime import runner\n"
            "from memengine.engine.wire import tracing as w\n"
            "assert a.start_tracing(Settings.from_env(env={})) is None\n"
            "h = w.inject({})\n"
            "with w.span('publish') as s,"
            " w.remote_parent({'traceparent': '00-' + '1' * 32 + '-' + '2' * 16 + '-01'}):\n"
            "    assert s is None and h == {}\n"
            "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
