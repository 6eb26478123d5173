"""offload's side of a workflow's durable execution: the job it runs, the journal of its steps and waits,
and its end, all written through `WorkflowStore` and fenced on the execution (`lambdas/store/workflows.py`).

A write refused because the job left the execution (a caller cancelled it) is `WorkflowGone`: the step
that wrote it fails without retry, and the execution ends without running another. A dead workflow's
letter goes to its worker group's dead-letter queue, as a dead job's does, so it alerts once.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from lambdas import config
from lambdas.jobs import registry
from lambdas.jobs.base import PermanentJobError
from lambdas.lifecycle.attempt.backoff import retry_delay
from lambdas.lifecycle.attempt.capabilities import WorkerCapabilities
from lambdas.lifecycle.workflows.execution import Begun, WorkflowGone
from lambdas.lifecycle.workflows.journal import StepStatus
from lambdas.lifecycle.workflows.start import execution_name
from lambdas.models.job import Job, JobStatus
from lambdas.models.settings import WorkerSettings
from lambdas.models.waiting import LimitKind, WaitingFor
from lambdas.observability import log_transition
from lambdas.store.errors import StaleAttemptError
from lambdas.store.queue import JobQueue, death_letter, job_message
from lambdas.store.workflows import WorkflowStore

_RUNNING = (JobStatus.PROCESSING, JobStatus.WAITING)


@dataclass
class StoreJournal:
    store: WorkflowStore
    job: Job
    execution: str

    @property
    def _deadline(self) -> float:
        """When the sweep may look at the job: no earlier than the execution may still run."""
        return self.store.now() + config.WORKFLOW_EXECUTION_TIMEOUT_SECONDS

    def step_started(self, name: str, attempt: int) -> None:
        with _gone_if_stale():
            self.store.step_started(self.job.job_id, self.execution, name, attempt)

    def step_ended(self, name: str, status: StepStatus, error: str | None = None) -> None:
        with _gone_if_stale():
            self.store.step_ended(self.job.job_id, self.execution, name, status.value, error)

    def sleeping(self, name: str, seconds: int) -> None:
        self._wait(WaitingFor(LimitKind.SLEEP, name, self.store.now() + seconds, "sleeps"))

    def waiting_for_event(self, name: str, callback_id: str, timeout_seconds: int) -> None:
        until = self.store.now() + timeout_seconds
        self._wait(WaitingFor(LimitKind.EVENT, name, until, f"waits for event {name!r}"), callback_id)

    def _wait(self, waiting: WaitingFor, callback_id: str | None = None) -> None:
        with _gone_if_stale():
            self.store.wait(self.job, self.execution, waiting, self._deadline, callback_id)
        log_transition(self.job.job_id, self.job.job_type, JobStatus.PROCESSING, JobStatus.WAITING, 1)

    def running(self) -> None:
        with _gone_if_stale():
            self.store.resume(self.job, self.execution, self._deadline)
        log_transition(self.job.job_id, self.job.job_type, JobStatus.WAITING, JobStatus.PROCESSING, 1)


class StoreRuntime:
    """A durable function's `WorkflowRuntime`: jobs read and written through `store`."""

    def __init__(
        self,
        settings: WorkerSettings,
        store: WorkflowStore,
        capabilities: WorkerCapabilities,
        dead_letters: JobQueue,
    ) -> None:
        self._settings = settings
        self._store = store
        self._capabilities = capabilities
        self._dead_letters = dead_letters

    def backoff(self, attempt: int, retry_after: float | None) -> int:
        return retry_delay(
            attempt, self._settings.backoff_base_seconds, self._settings.backoff_cap_seconds, retry_after
        )

    def begin(self, job_id: str) -> Begun:
        job = self._running(job_id)
        try:
            job_type = registry.get(job.job_type)
            payload = job_type.payload_model.model_validate(job.payload)
        except (registry.NotRegisteredError, ValidationError) as error:
            raise PermanentJobError(f"cannot run {job.job_type!r}: {error}") from None
        # A step is bounded by the function's timeout, not a budget of ours.
        context = self._capabilities.context(job, remaining_ms=lambda: 0)
        return Begun(job_type, payload, context, StoreJournal(self._store, job, execution_name(job)))

    def end(self, job_id: str, result: Any) -> None:
        job = self._running(job_id)
        with _gone_if_stale():
            self._store.succeed(job, execution_name(job), result)
        log_transition(job.job_id, job.job_type, JobStatus.PROCESSING, JobStatus.DONE, job.attempts)

    def fail(self, job_id: str, error: str) -> None:
        job = self._running(job_id)
        with _gone_if_stale():
            self._store.die(job, execution_name(job), error)
        log_transition(job.job_id, job.job_type, JobStatus.PROCESSING, JobStatus.DEAD, job.attempts, error)
        self._dead_letters.forward(job_message(job.job_id), death_letter(job, error))

    def _running(self, job_id: str) -> Job:
        job = self._store.get(job_id)
        if job is None or job.status not in _RUNNING:
            raise WorkflowGone(job_id)
        return job


@contextmanager
def _gone_if_stale() -> Iterator[None]:
    try:
        yield
    except StaleAttemptError as error:
        raise WorkflowGone(str(error)) from None
