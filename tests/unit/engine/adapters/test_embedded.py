"""The embedded PostgreSQL's tuning (issue #13 item 4): shared_buffers sized to the machine, synchronous reads."""

from __future__ import annotations

import os
import re

import pytest

from memengine.engine.adapters.embedded import server_tuning, shared_buffers_default


def test_shared_buffers_is_a_quarter_of_ram_within_bounds() -> None:
    mb = int(re.fullmatch(r"(\d+)MB", shared_buffers_default()).group(1))  # type: ignore[union-attr]
    ram_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    assert mb == max(128, min(8192, ram_mb // 4))


def test_tuning_takes_an_explicit_size_and_reads_synchronously() -> None:
    assert server_tuning("512MB") == {"shared_buffers": "512MB", "io_method": "sync"}
    assert server_tuning("")["shared_buffers"] == shared_buffers_default()


@pytest.mark.parametrize("sysconf_error", [ValueError, OSError])
def test_unknown_memory_falls_back_to_the_server_default(monkeypatch: pytest.MonkeyPatch,
                                                         sysconf_error: type[Exception]) -> None:
    def fail(name: str) -> int:
        raise sysconf_error(name)

    monkeypatch.setattr(os, "sysconf", fail)
    assert shared_buffers_default() == "128MB"
