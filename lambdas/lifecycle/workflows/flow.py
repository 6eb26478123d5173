"""The workflow context a workflow type's `run(payload, flow)` gets: three operations on AWS's durable
execution engine (`aws_durable_execution_sdk_python.DurableContext`), in offload's words.

- `step(name, fn, *args)`: the SDK's step. Its result is checkpointed; a replay (after a crash, a sleep
  or an event) returns the recorded result without calling `fn` again. `RetryableJobError` (or any
  other exception) is retried by the SDK's retry strategy with offload's backoff (full jitter, the
  job's `maxAttempts` as the step's attempts); `PermanentJobError` is never retried: the step fails,
  and with it the workflow (`dead`, one alert).
- `sleep(name, seconds)`: the SDK's wait: the function is not running while it waits.
- `wait_for_event(name, timeout_seconds)`: the SDK's wait for a callback. Its id is written to the job
  (the journal) by the callback's submitter, so `POST /jobs/{jobId}/events` can complete it; the event's
  `data` is returned, or `None` when the timeout passes first.

What the job's record shows (steps, `waiting` and for what) is written through a `Journal`, only when
the operation really happens, never when a replay passes it again, so a workflow's writes grow with its
operations, not with how often it is replayed.
"""

import json
from collections.abc import Callable
from typing import Any, Protocol

from aws_durable_execution_sdk_python import CallbackTimeoutError, DurableContext, StepContext
from aws_durable_execution_sdk_python.config import Duration, StepConfig, WaitForCallbackConfig
from aws_durable_execution_sdk_python.retries import RetryDecision
from aws_durable_execution_sdk_python.types import WaitForCallbackContext

from lambdas.jobs.base import JobContext, PermanentJobError, RetryableJobError, RetryLater
from lambdas.lifecycle.attempt.backoff import retry_delay
from lambdas.lifecycle.workflows.journal import Journal, StepStatus, WorkflowGone

# The SDK refuses a wait shorter than a second; a retry's delay is a wait too.
_MIN_DELAY_SECONDS = 1
# The longest a durable execution may run (and so sleep or wait): one year.
MAX_WAIT_SECONDS = 366 * 24 * 3600


class Backoff(Protocol):
    def __call__(self, attempt: int, retry_after: float | None) -> int: ...


def job_backoff(base_seconds: float, cap_seconds: float) -> Backoff:
    """A step's retry delay: the worker's backoff, so a step retries as a plain job would."""

    def delay(attempt: int, retry_after: float | None) -> int:
        return retry_delay(attempt, base_seconds, cap_seconds, retry_after)

    return delay


class DurableFlow:
    """`lambdas.jobs.base.Flow` on the SDK's `DurableContext`."""

    def __init__(
        self, durable: DurableContext, context: JobContext, journal: Journal, backoff: Backoff
    ) -> None:
        self._durable = durable
        self._journal = journal
        self._backoff = backoff
        self._context = context

    @property
    def context(self) -> JobContext:
        return self._context

    def step(self, name: str, fn: Callable[..., Any], *args: Any) -> Any:
        def body(step: StepContext) -> Any:
            self._journal.step_started(name, step.attempt)
            try:
                result = fn(*args)
                _checkpointable(name, result)
            except Exception as error:
                self._journal.step_ended(name, StepStatus.FAILED, _describe(error))
                raise
            self._journal.step_ended(name, StepStatus.DONE)
            return result

        config = StepConfig(retry_strategy=self._retry_strategy)
        return self._durable.step(body, name=name, config=config)

    def sleep(self, name: str, seconds: float) -> None:
        seconds = _bounded(seconds, "sleep")
        if not self._durable.is_replaying():
            self._journal.sleeping(name, seconds)
        self._durable.wait(Duration.from_seconds(seconds), name=name)
        if not self._durable.is_replaying():
            self._journal.running()

    def wait_for_event(self, name: str, timeout_seconds: float) -> Any:
        timeout = _bounded(timeout_seconds, "wait_for_event")

        def submit(callback_id: str, _: WaitForCallbackContext) -> None:
            self._journal.waiting_for_event(name, callback_id, timeout)

        config = WaitForCallbackConfig(timeout=Duration.from_seconds(timeout))
        try:
            raw = self._durable.wait_for_callback(submit, name=name, config=config)
        except CallbackTimeoutError:
            raw = None
        if not self._durable.is_replaying():
            self._journal.running()
        return None if raw is None else json.loads(raw)

    def _retry_strategy(self, error: Exception, attempts_made: int) -> RetryDecision:
        if isinstance(error, PermanentJobError | WorkflowGone) or attempts_made >= self._context.max_attempts:
            return RetryDecision.no_retry()
        if isinstance(error, RetryLater):
            delay = error.seconds
        else:
            retry_after = error.retry_after if isinstance(error, RetryableJobError) else None
            delay = self._backoff(attempts_made, retry_after)
        return RetryDecision.retry(Duration.from_seconds(max(_MIN_DELAY_SECONDS, delay)))


def _bounded(seconds: float, operation: str) -> int:
    if not _MIN_DELAY_SECONDS <= seconds <= MAX_WAIT_SECONDS:
        raise PermanentJobError(
            f"{operation} takes {_MIN_DELAY_SECONDS} to {MAX_WAIT_SECONDS} seconds, not {seconds}"
        )
    return int(seconds)


def _checkpointable(name: str, result: Any) -> None:
    """A step's result is checkpointed as JSON: anything else fails the step for good, here, rather than
    in the SDK's serializer after the side effect happened (a retry would repeat it)."""
    try:
        json.dumps(result)
    except (TypeError, ValueError) as error:
        raise PermanentJobError(f"step {name!r} returned a value JSON cannot hold: {error}") from None


def _describe(error: Exception) -> str:
    return (
        str(error)
        if isinstance(error, PermanentJobError | RetryableJobError)
        else f"{type(error).__name__}: {error}"
    )
