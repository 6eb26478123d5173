"""Retries: a job type's policy as this stack applies it, and the delay before each retry (exponential
backoff with full jitter)."""

import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lambdas import config
from lambdas.models.retry import RetryPolicy


@dataclass(frozen=True)
class Retries:
    """A type's retry policy with the stack's override over it and the stack's defaults under it."""

    attempts: int
    base_seconds: float
    cap_seconds: float
    window_seconds: int | None

    def delay(
        self, attempt: int, retry_after: float | None = None, rng: Callable[[], float] | None = None
    ) -> int:
        return retry_delay(attempt, self.base_seconds, self.cap_seconds, retry_after, rng)


def retries(
    name: str,
    declared: RetryPolicy,
    overrides: Mapping[str, Mapping[str, Any]],
    base_seconds: float,
    cap_seconds: float,
) -> Retries:
    """The policy `name` runs under: `declared` with the stack's `retryPolicies` entry over it; an unset
    field is the stack's (`maxAttempts` 5, `backoffBaseSeconds`, `backoffCapSeconds`, no window)."""
    policy = _policy(name, declared, overrides)
    base = policy.backoff_base_seconds or base_seconds
    return Retries(
        attempts=policy_attempts(name, declared, overrides),
        base_seconds=base,
        cap_seconds=policy.backoff_cap_seconds or max(cap_seconds, base),
        window_seconds=policy.window_seconds,
    )


def policy_attempts(name: str, declared: RetryPolicy, overrides: Mapping[str, Mapping[str, Any]]) -> int:
    """The attempts a job of type `name` gets when its submitter names none."""
    return _policy(name, declared, overrides).attempts or config.DEFAULT_MAX_ATTEMPTS


def _policy(name: str, declared: RetryPolicy, overrides: Mapping[str, Mapping[str, Any]]) -> RetryPolicy:
    return declared.overridden(dict(overrides[name])) if name in overrides else declared


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
    window = min(cap_seconds, base_seconds * 2 ** min(attempt - 1, 64))
    delay = (rng or random.random)() * window
    if retry_after is not None:
        delay = max(delay, retry_after)
    return min(math.ceil(delay), config.MAX_RETRY_WINDOW_SECONDS)


def span(seconds: float) -> str:
    """`259200` -> "3 days": a window as a reader says it."""
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds:g} s"
