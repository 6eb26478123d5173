"""The one way tests build a JobStore: from the environment the stack gives its functions.

The shard count, the table and the TTL all come from a function's environment as the synthesized
template declares it (`Pipeline.env` in-process, `Provisioned.function_env` for the local runtime), so
a store a test builds reads and writes the same index shards the handlers do.
"""

import time
from collections.abc import Callable, Mapping

from lambdas import config
from lambdas.store.jobs import JobStore


def store_from_env(
    env: Mapping[str, str], clock: Callable[[], float] = time.time, shards: int | None = None
) -> JobStore:
    """A JobStore over the stack's jobs table; `shards` overrides the stack's count on purpose only."""
    return JobStore(
        env[config.ENV_JOBS_TABLE],
        int(env[config.ENV_STATUS_SHARDS]) if shards is None else shards,
        int(env[config.ENV_FINISHED_TTL_DAYS]),
        clock=clock,
    )


class Clock:
    """A clock the test moves by hand: lease expiries and overdue jobs without sleeping."""

    def __init__(self, start: float | None = None) -> None:
        self.now = time.time() if start is None else start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
