"""Retry delays: exponential backoff with full jitter."""

import math
import random
from collections.abc import Callable

from lambdas import config


def retry_delay(
    attempt: int,
    base_seconds: float,
    cap_seconds: float,
    retry_after: float | None = None,
    rng: Callable[[], float] | None = None,
) -> int:
    """Seconds to wait before attempt `attempt + 1`, after attempt `attempt` (1-based) failed.

    Full jitter spreads retries of jobs that failed together (the same outage) over the whole window
    instead of sending them back in step. A `retry_after` the remote side asked for is a floor.
    """
    window = min(cap_seconds, base_seconds * 2 ** (attempt - 1))
    delay = (rng or random.random)() * window
    if retry_after is not None:
        delay = max(delay, retry_after)
    return min(math.ceil(delay), config.SQS_MAX_VISIBILITY_SECONDS)
