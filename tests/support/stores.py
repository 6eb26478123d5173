"""The one way tests build a JobStore: from the environment the stack gives its functions.

The shard count, the table and the TTL all come from a function's environment as the synthesized
template declares it (`Pipeline.env` in-process, `Provisioned.function_env` for the local runtime), so
a store a test builds reads and writes the same index shards the handlers do.
"""

import time
from collections.abc import Callable, Mapping
from typing import Any

from lambdas import config
from lambdas.models.job import Job
from lambdas.store.jobs import JobStore


class StoreForTests(JobStore):
    """The production store plus the shortcuts tests take to put a job in a state: one attempt claimed,
    then ended `done` or `dead`, each through the same conditional writes the worker makes."""

    def claim(self, job_id: str, lease_seconds: int) -> Job:
        return self.claim_attempt(job_id, lease_seconds).job

    def complete(self, job: Job, result: Any) -> Job:
        return self.as_written(job, self.succeed(job, result))

    def fail(self, job: Job, error: str) -> Job:
        return self.as_written(job, self.die(job, error))


def store_from_env(
    env: Mapping[str, str], clock: Callable[[], float] = time.time, shards: int | None = None
) -> StoreForTests:
    """A JobStore over the stack's jobs table; `shards` overrides the stack's count on purpose only."""
    return StoreForTests(
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
