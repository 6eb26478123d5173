"""Job types that exist only in tests: they let each lifecycle line be driven on purpose.

Registered by the tests' fixtures; the deployed API never knows them.
"""

import time

from pydantic import BaseModel, ConfigDict, Field

from lambdas.jobs.base import JobContext, JobType, PermanentJobError, RetryableJobError


class _Payload(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class EchoPayload(_Payload):
    value: str = "ok"


class FlakyPayload(_Payload):
    fail_times: int = Field(alias="failTimes", ge=0)
    retry_after: float | None = Field(default=None, alias="retryAfter")


class SleepPayload(_Payload):
    seconds: float = Field(ge=0, le=30)


def _echo(payload: EchoPayload, context: JobContext) -> dict[str, object]:
    return {"echo": payload.value, "attempt": context.attempt}


def _flaky(payload: FlakyPayload, context: JobContext) -> dict[str, object]:
    if context.attempt <= payload.fail_times:
        raise RetryableJobError(f"transient failure {context.attempt}", retry_after=payload.retry_after)
    return {"succeededOnAttempt": context.attempt}


def _always_fail(payload: EchoPayload, context: JobContext) -> None:
    raise RuntimeError(f"downstream unavailable (attempt {context.attempt})")


def _permanent(payload: EchoPayload, context: JobContext) -> None:
    raise PermanentJobError(f"input can never succeed: {payload.value}")


def _sleep(payload: SleepPayload, context: JobContext) -> dict[str, object]:
    time.sleep(payload.seconds)
    return {"slept": payload.seconds}


TEST_JOB_TYPES = (
    JobType("test_echo", EchoPayload, _echo),
    JobType("test_flaky", FlakyPayload, _flaky),
    JobType("test_always_fail", EchoPayload, _always_fail),
    JobType("test_permanent", EchoPayload, _permanent),
    JobType("test_sleep", SleepPayload, _sleep),
)
