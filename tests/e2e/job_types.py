"""Test-only job types for the running local runtime: imported in every function process through
OFFLOAD_LOCAL_EXTRA_MODULES (never set by `make run`), so the API accepts them and the worker runs them."""

import time
from pathlib import Path

from pydantic import BaseModel, Field

from lambdas.jobs import registry
from lambdas.jobs.base import JobContext, JobType, PermanentJobError
from tests.support.job_types import TEST_JOB_TYPES


class SlowFirstPayload(BaseModel):
    seconds: float = Field(ge=0, le=60)


def _slow_first(payload: SlowFirstPayload, context: JobContext) -> dict[str, object]:
    # Outlives the function timeout on the first attempt only: the retry after the kill succeeds.
    if context.attempt == 1:
        time.sleep(payload.seconds)
    return {"finishedOnAttempt": context.attempt}


SLOW_FIRST = JobType("test_slow_first", SlowFirstPayload, _slow_first)


class BlockedPayload(BaseModel):
    blocker: str = Field(min_length=1, description="A file on this machine: the job fails while it exists.")


def _blocked(payload: BlockedPayload, context: JobContext) -> dict[str, object]:
    # A cause an operator can fix between attempts (delete the file), as a retry after a fix needs.
    if Path(payload.blocker).exists():
        raise PermanentJobError(f"blocked by {payload.blocker}")
    return {"unblockedOnAttempt": context.attempt}


BLOCKED = JobType("test_blocked", BlockedPayload, _blocked)


class MarkerPayload(BaseModel):
    path: str


def _needs_marker(payload: MarkerPayload, context: JobContext) -> dict[str, object]:
    # Dead at once until the test creates the file: a dead job that a manual retry takes to done.
    if not Path(payload.path).exists():
        raise PermanentJobError(f"{payload.path} does not exist yet")
    return {"found": payload.path}


NEEDS_MARKER = JobType("test_needs_marker", MarkerPayload, _needs_marker)

for job_type in (*TEST_JOB_TYPES, SLOW_FIRST, BLOCKED, NEEDS_MARKER):
    if job_type.name not in registry.names():
        registry.register(job_type)
