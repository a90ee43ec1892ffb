"""Which database errors a retry can fix (``engine.adapters.postgres.is_transient``): the runner retries those and
dead-letters the rest, so a data error taken for a transient one wedges a projection on one event forever."""

from __future__ import annotations

import asyncpg
import asyncpg.exceptions._base as asyncpg_base
import pytest

from memengine.engine.adapters.postgres import is_bad_data, is_transient


@pytest.mark.parametrize("exc", [
    asyncpg_base.DataError("invalid input for query argument $1: 10**30 (value out of int64 range)"),
    asyncpg.DataError("invalid input syntax for type integer"),
    asyncpg.exceptions.NumericValueOutOfRangeError("value out of range"),
    asyncpg.exceptions.CharacterNotInRepertoireError("invalid byte sequence for encoding UTF8: 0x00"),
])
def test_a_value_the_database_cannot_take_is_not_transient(exc: BaseException) -> None:
    # asyncpg's own refusal to encode a parameter is an InterfaceError subclass: it was taken for a lost connection
    assert is_bad_data(exc)
    assert not is_transient(exc)


@pytest.mark.parametrize("exc", [
    ConnectionResetError("reset by peer"),
    TimeoutError(),
    asyncpg.exceptions.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
    asyncpg.exceptions.DeadlockDetectedError("deadlock detected"),
    asyncpg.exceptions.SerializationError("could not serialize access"),
    asyncpg.exceptions.CannotConnectNowError("the database system is starting up"),
])
def test_infrastructure_errors_are_transient(exc: BaseException) -> None:
    assert is_transient(exc)
