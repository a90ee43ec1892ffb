"""The long-running process's collector settings (engine.runtime.gc_tuning, issue #13 item 6): start-up frozen, a
larger young generation, undone by ``restore``; configured by ``MEMENGINE_GC_GEN0``."""

from __future__ import annotations

import gc

import pytest

from memengine.engine.adapters.settings import Settings, SettingsError
from memengine.engine.runtime.gc_tuning import GEN0_THRESHOLD, restore, tune_after_startup


def test_tune_freezes_start_up_and_raises_the_young_threshold() -> None:
    before = gc.get_threshold()
    survivor = [object() for _ in range(100)]  # alive across the collection: frozen with the rest of start-up
    frozen_before = gc.get_freeze_count()
    got = tune_after_startup(12_345)
    try:
        assert got == before
        assert gc.get_threshold() == (12_345, before[1], before[2])
        assert gc.get_freeze_count() >= frozen_before + len(survivor)
    finally:
        restore(got)
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_zero_leaves_the_interpreter_defaults() -> None:
    before = gc.get_threshold()
    frozen = gc.get_freeze_count()
    assert tune_after_startup(0) == before
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen


def test_setting_from_the_environment() -> None:
    assert Settings.from_env(env={"MEMENGINE_HOME": "/h"}).gc_gen0_threshold == GEN0_THRESHOLD
    assert Settings.from_env(env={"MEMENGINE_HOME": "/h", "MEMENGINE_GC_GEN0": "0"}).gc_gen0_threshold == 0
    with pytest.raises(SettingsError) as info:
        Settings.from_env(env={"MEMENGINE_HOME": "/h", "MEMENGINE_GC_GEN0": "-1"})
    assert "MEMENGINE_GC_GEN0" in str(info.value)
