"""Embedded NATS and PostgreSQL under ``HOME``, kept running until interrupted: benches given their URLs
(``NATS_URL`` / ``DATABASE_URL``) load a store once and measure it again in later runs, e.g. with another tree's
code (``bench/context_query.py``).

    python bench/_servers.py HOME        # prints: export NATS_URL=... DATABASE_URL=...; Ctrl-C stops both
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

from memengine.engine.adapters.embedded import EmbeddedNats, EmbeddedPostgres, server_tuning
from memengine.engine.adapters.settings import Settings

if __name__ == "__main__":
    home = Path(sys.argv[1])
    home.mkdir(parents=True, exist_ok=True)
    settings = Settings.from_env(home=str(home))
    nats = EmbeddedNats(settings.home_path)
    pg = EmbeddedPostgres(settings.home_path, server_tuning(settings.pg_shared_buffers))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        print(f"export NATS_URL={nats.start()} DATABASE_URL={pg.start()}", flush=True)
        while not stop.wait(1.0):  # a timed wait: the SIGTERM handler runs between waits
            pass
    except KeyboardInterrupt:
        pass
    finally:
        pg.stop()
        nats.stop()
