"""Issue #17: the metrics endpoint binds to loopback unless configured (``MEMENGINE_METRICS_HOST``)."""

from __future__ import annotations

import msgspec
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan
from memengine.engine.ops.metrics import MetricsServer

pytestmark = pytest.mark.integration


async def test_metrics_bind_to_loopback_unless_configured(settings: Settings) -> None:
    assert Settings.from_env(env={}).metrics_host == "127.0.0.1"
    assert Settings.from_env(env={"MEMENGINE_METRICS_HOST": "0.0.0.0"}).metrics_host == "0.0.0.0"
    async with lifespan(settings, roles={"query"}) as engine:
        for server, host in ((MetricsServer(engine, 0), "127.0.0.1"),  # the class default, too
                             (MetricsServer(engine, 0, settings.metrics_host), "127.0.0.1"),
                             (MetricsServer(engine, 0, msgspec.structs.replace(
                                 settings, metrics_host="0.0.0.0").metrics_host), "0.0.0.0")):
            await server.start()
            try:
                assert server._server is not None
                assert {s.getsockname()[0] for s in server._server.sockets} == {host}
            finally:
                await server.stop()
