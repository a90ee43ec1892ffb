"""Weights read only when they match their pinned sha256 (the learned readers: ``statement_reader``, ``attack_reader``,
``change_reader``): a file nobody reviewed is never read, and the reader says "no reading" instead."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import structlog

log = structlog.get_logger(__name__)


def load(path: Path, sha256: str, name: str) -> dict[str, Any] | None:
    """The JSON object at ``path`` when its bytes hash to ``sha256``; ``None`` (logged as ``<name>.weights_missing``
    or ``<name>.weights_mismatch``) when it is missing or differs."""
    try:
        raw = path.read_bytes()
    except OSError:
        log.warning(f"{name}.weights_missing", path=str(path))
        return None
    if hashlib.sha256(raw).hexdigest() != sha256:
        log.warning(f"{name}.weights_mismatch", path=str(path))
        return None
    out: dict[str, Any] = json.loads(raw)
    return out
