"""Engines serving the HTTP API and console (issue #12) for the API and browser tests. Import the ``*_fixture``
functions into a test module; the fixtures are named ``http_engine``, ``keyed_engine`` and ``api``."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import msgspec
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan

#: The keys of the keyed engine: tenant `default` (admin) and tenant `acme`.
KEY_DEFAULT = "key-of-default-0123456789"
KEY_ACME = "key-of-acme-9876543210"


@pytest.fixture(name="http_engine")
async def http_engine_fixture(settings: Settings) -> AsyncIterator[Engine]:
    """The whole engine with the HTTP server on a free loopback port and no keys (loopback = tenant default)."""
    async with lifespan(msgspec.structs.replace(settings, http_port=0)) as e:
        yield e


@pytest.fixture(name="keyed_engine")
async def keyed_engine_fixture(settings: Settings, tmp_path: Path) -> AsyncIterator[Engine]:
    """The engine with two API keys in a keys file (stored hashed)."""
    keys = tmp_path / "http-keys"
    keys.write_text(f"# tenant sha256 [admin]\ndefault {hashlib.sha256(KEY_DEFAULT.encode()).hexdigest()} admin\n"
                    f"acme {hashlib.sha256(KEY_ACME.encode()).hexdigest()}\n")
    async with lifespan(msgspec.structs.replace(settings, http_port=0, http_keys_file=str(keys))) as e:
        yield e


@pytest.fixture(name="api")
async def api_fixture(http_engine: Engine) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client on the live server of ``http_engine``."""
    async with httpx.AsyncClient(base_url=http_engine.http.url, timeout=30) as c:
        yield c
