"""Settings: seed-000 variable names and defaults, typed errors, secrets never shown."""

from __future__ import annotations

import pytest

from memengine.engine.adapters.settings import PROJECTOR_GROUPS, Settings, SettingsError
from memengine.engine.runtime.groups import GROUPS


def test_defaults_are_seed_000() -> None:
    s = Settings.from_env(env={"MEMENGINE_HOME": "/tmp/x"})
    assert (s.full_recent_count, s.summary_threshold, s.max_summary_tokens, s.condensed_tool_max,
            s.max_messages_per_thread, s.recall_top_k, s.context_window) == (10, 30, 1000, 200, 200, 5, 0)
    assert s.enable_summary is True and s.window == 128_000
    assert s.nats_url is None and s.database_url is None


def test_env_is_read_and_typed() -> None:
    s = Settings.from_env(env={"MEMORY_FULL_RECENT_COUNT": "4", "MEMORY_ENABLE_SUMMARY": "false",
                               "MEMORY_CONTEXT_WINDOW": "32000", "NATS_URL": "nats://h:1", "MEMENGINE_HOME": "/h"})
    assert s.full_recent_count == 4 and s.enable_summary is False and s.window == 32_000
    assert s.nats_url == "nats://h:1"


@pytest.mark.parametrize(("var", "value"), [("MEMORY_FULL_RECENT_COUNT", "ten"), ("MEMORY_ENABLE_SUMMARY", "maybe"),
                                            ("MEMENGINE_STREAM_REPLICAS", "2"), ("MEMENGINE_BATCH_SIZE", "0"),
                                            ("MEMENGINE_PG_SHARED_BUFFERS", "4 GB"),
                                            ("MEMENGINE_PG_SHARED_BUFFERS", "4GB'; DROP"),
                                            ("MEMENGINE_PROJECTORS", "core,vectors"), ("MEMENGINE_PROJECTORS", ",")])
def test_bad_values_name_the_variable(var: str, value: str) -> None:
    with pytest.raises(SettingsError) as info:
        Settings.from_env(env={var: value, "MEMENGINE_HOME": "/h"})
    assert var in str(info.value)


def test_secrets_are_hidden() -> None:
    s = Settings.from_env(env={"API_KEY": "sk-verysecret", "MEMORY_EMBEDDING_API_KEY": "emb-secret",
                               "MEMENGINE_HOME": "/h"})
    assert "verysecret" not in repr(s) and "emb-secret" not in repr(s)
    assert str(s.api_key) == "sk-verysecret"


def test_projector_groups_are_the_runtime_groups() -> None:
    assert PROJECTOR_GROUPS == set(GROUPS)
    assert Settings.from_env(env={"MEMENGINE_HOME": "/h"}).projector_groups == set(GROUPS)
    s = Settings.from_env(env={"MEMENGINE_PROJECTORS": " recall , derived", "MEMENGINE_HOME": "/h"})
    assert s.projector_groups == {"recall", "derived"}
