"""Fixed places for tests at any depth of the tree (issue #31 item 5: tests mirror the packages, so a test's own
``Path(__file__).parents[n]`` changed with every move): the repository root, ``tests/data`` and the shared data
folder beside the worktrees (``/work/wt/shared``: the LoCoMo dev set, never copied into the repository)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
DATA = TESTS / "data"
SHARED_DATA = ROOT.parent / "shared" / "data"
