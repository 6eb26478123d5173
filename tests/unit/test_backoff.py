"""Retry delays: exponential window, full jitter inside it, a cap, and Retry-After as a floor."""

import random
import statistics

import pytest

from lambdas.config import MAX_RETRY_WINDOW_SECONDS
from lambdas.lifecycle.attempt.backoff import retries, retry_delay
from lambdas.models.retry import OUTAGE_RETRIES


@pytest.mark.parametrize(
    ("attempt", "window"), [(1, 10), (2, 20), (3, 40), (4, 80), (5, 160), (6, 300), (9, 300)]
)
def test_the_window_doubles_per_attempt_up_to_the_cap(attempt: int, window: int) -> None:
    assert retry_delay(attempt, 10, 300, rng=lambda: 1.0) == window


def test_full_jitter_spreads_delays_over_the_whole_window() -> None:
    assert retry_delay(3, 10, 300, rng=lambda: 0.0) == 0
    assert retry_delay(3, 10, 300, rng=lambda: 0.25) == 10
    delays = {retry_delay(3, 10, 300) for _ in range(500)}
    assert min(delays) < 10
    assert max(delays) > 30
    assert all(0 <= d <= 40 for d in delays)


def test_retry_after_is_a_floor_not_a_replacement() -> None:
    assert retry_delay(1, 10, 300, retry_after=120, rng=lambda: 0.1) == 120
    assert retry_delay(6, 10, 300, retry_after=5, rng=lambda: 1.0) == 300


def test_no_delay_exceeds_the_longest_retry_window() -> None:
    """A delay beyond SQS's waits is a `scheduled` job's start time: it is bounded by the week a retry
    policy may span, not by a message's visibility timeout."""
    assert retry_delay(1, 10, 300, retry_after=10**9) == MAX_RETRY_WINDOW_SECONDS


def test_the_outage_policy_retries_for_a_day_and_more_as_docs_job_types_says() -> None:
    """docs/job-types.md: 42 hours of retries on average, 31 or more for 19 jobs in 20 (its 3-day
    window is a bound these delays do not reach). Broken line: `OUTAGE_RETRIES`' cap of 6 hours as 1."""
    policy = retries("send_email", OUTAGE_RETRIES, {}, 10, 300)
    rng = random.Random(7).random
    spans = [sum(policy.delay(a, rng=rng) for a in range(1, policy.attempts)) / 3600 for _ in range(4000)]
    assert policy.attempts == 25
    assert 40 <= statistics.mean(spans) <= 44
    assert 30 <= statistics.quantiles(spans, n=20)[0] <= 32
    assert max(spans) < 72
