"""A workflow job's writes: the worker's hand-over to its durable execution, then the execution's own
(steps, waits, end), each one conditional write fenced on the job still running that execution.

A workflow job runs `processing` while a step runs and `waiting` while it sleeps or waits for an event;
either way its `dueAt` (the sweeper's index) is the execution's deadline, so the recovery sweep, which
requeues a `processing` job whose lease expired, leaves a running workflow alone. A caller's cancel
moves the job out of both states: every later write of its execution fails its condition
(StaleAttemptError), and the execution ends without running another step.
"""

import time
from collections.abc import Callable
from typing import Any

from lambdas.models.job import AttemptOutcome, Job, JobStatus
from lambdas.models.timestamps import iso_time
from lambdas.models.waiting import WaitingFor
from lambdas.store import codec, schema
from lambdas.store.codec import (
    EVENT_CALLBACK,
    EXECUTION,
    EXECUTION_ARN,
    LAST_ERROR,
    MAX_ERROR_CHARS,
    RESULT,
    STEP_PREFIX,
    WAITING_FOR,
    history_entry,
)
from lambdas.store.errors import ConditionFailedError, JobMovedError, StaleAttemptError, domain_errors
from lambdas.store.expressions import Update, marshal
from lambdas.store.job_table import JobTable

_RUNNING = f"#{codec.STATUS} IN (:processing, :waiting) AND #{EXECUTION} = :execution"
_ATTEMPT = f"#{codec.STATUS} = :processing AND {codec.ATTEMPTS} = :attempt"


class WorkflowStore:
    """A workflow job's writes on the jobs table (`JobStore.workflows()` makes one, sharing its clock)."""

    def __init__(self, table: JobTable, now: Callable[[], float] = time.time) -> None:
        self._table = table
        self.now = now

    def get(self, job_id: str) -> Job | None:
        return self._table.get(job_id, counts=False)

    # ---- The worker ------------------------------------------------------------------------------

    def hand_over(self, job: Job, execution: str) -> None:
        """The claimed attempt hands the job to its durable execution (StaleAttemptError when the
        attempt lost the job); its lease stays until the execution has started."""
        update = Update(
            assign={EXECUTION: execution},
            # A retried one's earlier life's steps and execution ARN (the sweep reads an ARN as "started").
            remove=[EXECUTION_ARN, *(f"{STEP_PREFIX}{step.name}" for step in job.steps)],
            condition=_ATTEMPT,
            values={":processing": "processing", ":attempt": job.attempts},
        )
        self._table.write_or_stale(job.job_id, update)

    def started(self, job: Job, execution: str, arn: str, deadline: float) -> None:
        """The execution runs: the job is due (for the sweep) only at its deadline; its ARN kept for
        a cancel to stop it. Written only while the job is still in the execution's hands."""
        update = Update(
            assign={schema.DUE_AT: codec.millis(deadline), EXECUTION_ARN: arn},
            condition=_RUNNING,
        )
        self._fenced(job.job_id, execution, update)

    def execution_arn(self, job_id: str) -> str | None:
        item = self._table.raw_item(codec.key(job_id))
        return None if item is None else codec.unmarshal(item).get(EXECUTION_ARN)

    # ---- The execution: steps and waits ----------------------------------------------------------

    def step_started(self, job_id: str, execution: str, name: str, attempt: int) -> None:
        now = iso_time(self.now())
        if attempt == 1:
            # `seq` orders the steps; a real clock's, not the store's (a test's clock may stand still).
            record = {"seq": time.time_ns() // 1000, "startedAt": now, "attempts": 1, "status": "running"}
            self._write(job_id, execution, "SET #step = :record", {":record": record}, name)
            return
        self._write(
            job_id,
            execution,
            "SET #step.attempts = :attempt, #step.#s = :running, #step.startedAt = :now "
            "REMOVE #step.endedAt, #step.#e",
            {":attempt": attempt, ":running": "running", ":now": now},
            name,
            {"#s": "status", "#e": "error"},
        )

    def step_ended(self, job_id: str, execution: str, name: str, status: str, error: str | None) -> None:
        values: dict[str, Any] = {":status": status, ":now": iso_time(self.now())}
        expression = "SET #step.#s = :status, #step.endedAt = :now"
        names = {"#s": "status"}
        if error is not None:
            expression += ", #step.#e = :error"
            values[":error"] = error[: codec.HISTORY_ERROR_CHARS]
            names["#e"] = "error"
        self._write(job_id, execution, expression, values, name, names)

    def wait(
        self, job: Job, execution: str, waiting: WaitingFor, deadline: float, callback_id: str | None = None
    ) -> None:
        """The workflow sleeps or waits for an event: `waiting`, saying for what and until when."""
        state = self._table.items.state(job.job_id, job.owner, JobStatus.WAITING, deadline, self.now())
        assign = {**state.assign, WAITING_FOR: codec.waiting_value(waiting)}
        remove = list(state.remove)
        if callback_id is None:
            remove.append(EVENT_CALLBACK)
        else:
            assign[EVENT_CALLBACK] = {"name": waiting.key, "id": callback_id}
        self._fenced(job.job_id, execution, Update(assign=assign, remove=remove, condition=_RUNNING))

    def resume(self, job: Job, execution: str, deadline: float) -> None:
        """A sleep or a wait is over: `processing` again."""
        state = self._table.items.state(job.job_id, job.owner, JobStatus.PROCESSING, deadline, self.now())
        remove = (*state.remove, WAITING_FOR, EVENT_CALLBACK)
        self._fenced(job.job_id, execution, Update(assign=state.assign, remove=remove, condition=_RUNNING))

    def event_callback(self, job_id: str, name: str) -> str | None:
        """The callback that completes the wait for event `name`, if the job waits for it now."""
        item = self._table.raw_item(codec.key(job_id))
        if item is None:
            return None
        raw = codec.unmarshal(item)
        callback = raw.get(EVENT_CALLBACK)
        if raw.get(codec.STATUS) != JobStatus.WAITING.value or not callback or callback["name"] != name:
            return None
        return str(callback["id"])

    def cancel(self, job: Job) -> Job:
        """A caller cancels the running workflow (JobMovedError when it is no longer running)."""
        now = self.now()
        state = self._table.items.state(job.job_id, job.owner, JobStatus.CANCELLED, now, now)
        update = Update(
            assign=state.assign,
            remove=(*state.remove, WAITING_FOR, EVENT_CALLBACK),
            condition=_RUNNING,
            values={":processing": "processing", ":waiting": "waiting", ":execution": job.execution},
        )
        try:
            return self._table.as_job(self._table.update(job.job_id, update))
        except ConditionFailedError:
            raise JobMovedError(job.job_id) from None

    # ---- The execution's end ---------------------------------------------------------------------

    def succeed(self, job: Job, execution: str, result: Any) -> None:
        self._end(job, execution, JobStatus.DONE, AttemptOutcome.DONE, {RESULT: codec.compact_json(result)})

    def die(self, job: Job, execution: str, error: str) -> None:
        extra = {LAST_ERROR: error[:MAX_ERROR_CHARS]}
        self._end(job, execution, JobStatus.DEAD, AttemptOutcome.DEAD, extra, error)

    def _end(
        self,
        job: Job,
        execution: str,
        status: JobStatus,
        outcome: AttemptOutcome,
        extra: dict[str, Any],
        error: str | None = None,
    ) -> None:
        now = self.now()
        state = self._table.items.state(job.job_id, job.owner, status, now, now)
        entry = history_entry(job.attempt_total, job.attempt_started_at, now, outcome, error)
        update = Update(
            assign={**state.assign, **entry, **extra},
            remove=(*state.remove, WAITING_FOR, EVENT_CALLBACK),
            condition=_RUNNING,
        )
        self._fenced(job.job_id, execution, update)

    def _fenced(self, job_id: str, execution: str, update: Update) -> None:
        values = {
            **update.values,
            ":processing": "processing",
            ":waiting": "waiting",
            ":execution": execution,
        }
        self._table.write_or_stale(
            job_id, Update(update.assign, update.condition, values, update.add, update.remove)
        )

    def _write(
        self,
        job_id: str,
        execution: str,
        expression: str,
        values: dict[str, Any],
        step: str,
        names: dict[str, str] | None = None,
    ) -> None:
        """One write of a step's record (a nested path, which `Update` does not make)."""
        all_values = {**values, ":processing": "processing", ":waiting": "waiting", ":execution": execution}
        try:
            with domain_errors():
                self._table.ddb.update_item(
                    TableName=self._table.name,
                    Key=codec.key(job_id),
                    UpdateExpression=expression,
                    ConditionExpression=_RUNNING,
                    ExpressionAttributeNames={
                        "#step": f"{STEP_PREFIX}{step}",
                        f"#{codec.STATUS}": codec.STATUS,
                        f"#{EXECUTION}": EXECUTION,
                        **(names or {}),
                    },
                    ExpressionAttributeValues=marshal(all_values),
                )
        except ConditionFailedError:
            raise StaleAttemptError(job_id) from None
