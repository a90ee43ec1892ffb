"""The per-tenant token bucket of the RPC edge (``engine.read.rpc.RateLimiter``; issue #17 defect 5), on an injected
clock: the admission arithmetic without wall time."""

from __future__ import annotations

from memengine.engine.read.rpc import RateLimiter


def test_a_full_bucket_admits_its_burst_then_refuses() -> None:
    limiter = RateLimiter(rate=50, burst=100)
    admitted = [limiter.allow("t", now=10.0) for _ in range(150)]
    assert admitted.count(True) == 100 and admitted[100:] == [False] * 50


def test_the_bucket_refills_at_the_rate_and_never_beyond_the_burst() -> None:
    limiter = RateLimiter(rate=50, burst=100)
    for _ in range(100):
        assert limiter.allow("t", now=0.0)
    assert not limiter.allow("t", now=0.0)
    # 0.1 s refills 5 tokens: five more requests, not six
    assert [limiter.allow("t", now=0.1) for _ in range(6)] == [True] * 5 + [False]
    # an hour idle refills to the burst, not to 50 x 3600
    assert [limiter.allow("t", now=3600.0) for _ in range(101)].count(True) == 100


def test_over_any_span_admissions_stay_within_burst_plus_refill() -> None:
    limiter = RateLimiter(rate=50, burst=100)
    now, admitted = 0.0, 0
    for _ in range(10_000):  # a flood of one request per millisecond for 10 s
        admitted += limiter.allow("t", now=now)
        now += 0.001
    assert admitted <= 100 + 50 * now + 1 and admitted >= 50 * now


def test_tenants_have_their_own_buckets_and_zero_rate_is_unlimited() -> None:
    limiter = RateLimiter(rate=1, burst=1)
    assert limiter.allow("a", now=0.0) and not limiter.allow("a", now=0.0)
    assert limiter.allow("b", now=0.0)
    unlimited = RateLimiter(rate=0)
    assert all(unlimited.allow("a", now=0.0) for _ in range(1000))
