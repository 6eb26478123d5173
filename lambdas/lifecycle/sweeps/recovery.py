"""The sweeper: finds jobs whose message was lost or whose worker died, and sends them again.

- `pending` jobs whose message should have been consumed more than `grace` seconds ago: the
  SendMessage after the put failed, or the message was lost. A job that is only waiting out its
  backoff is not overdue (its due time is when its message becomes visible), so it is left alone.
- `processing` jobs whose lease expired: the worker crashed or timed out. They go back to `pending`.
- `waiting` parents whose check is due: finished if all their children have (a repair for a child
  whose last step was interrupted), else checked again later.
- `processing` or `waiting` workflows past their execution's deadline: Lambda timed the execution out
  (durableConfig executionTimeout), so it never wrote the job's end; the sweep writes it, `dead` with
  the reason, fenced on the job still running that execution, so once. Then its letter goes to its
  worker group's dead-letter queue, as the worker's and the workflow's own do, so it is counted in
  one alert like every dead job. Only the sweep whose write took sends it, so a later sweep (which no
  longer sees a dead job) never alerts again. Should the send fail after the write, the job stays dead
  without an alert: the sweep logs an error and counts it in its report's `errors` (no sweep could
  find it again without reading every dead job). A workflow handed over whose execution never started
  (no ARN) is requeued as any expired lease is.
- `scheduled` jobs due within the horizon: handed to SQS with the delay left (`start_times`). A
  scheduled job is never taken for a lost one: it is in a state of its own, which the passes above
  never read.
Each re-send is preceded by a conditional update, so overlapping sweeps send a job at most once.
The sweep pages through everything overdue until its time budget runs out; the next sweep goes on.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from lambdas import config
from lambdas.lifecycle.attempt import parents
from lambdas.lifecycle.sweeps.start_times import hand_over_due
from lambdas.models.job import Job, JobStatus
from lambdas.observability import log_transition, logger
from lambdas.store.errors import StaleAttemptError
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue, death_letter, job_message


@dataclass
class SweepReport:
    requeued_pending: int = 0
    requeued_expired: int = 0
    parents_finished: int = 0
    handed_over: int = 0
    workflows_timed_out: int = 0
    out_of_time: bool = False
    errors: list[str] = field(default_factory=list)

    @property
    def requeued(self) -> int:
        return self.requeued_pending + self.requeued_expired


# A job just re-sent is not looked at again for at least this long, even with a grace of zero.
MIN_RECHECK_SECONDS = 60


class Sweeper:
    def __init__(
        self,
        store: JobStore,
        queue: JobQueue,
        grace_seconds: int,
        horizon_seconds: int = config.SCHEDULE_HORIZON_SECONDS,
    ) -> None:
        self._horizon = horizon_seconds
        self._store = store
        self._queue = queue
        self._grace = grace_seconds
        self._recheck = max(grace_seconds, MIN_RECHECK_SECONDS)

    def sweep(self, has_time: Callable[[], bool]) -> SweepReport:
        report = SweepReport()
        # First: a job due soon must not wait behind a long repair.
        report.handed_over = hand_over_due(self._store, self._queue, self._horizon, has_time)
        now = self._store.now()
        lost = self._store.by_status(JobStatus.PENDING, due_before=now - self._grace)
        expired = self._store.by_status(JobStatus.PROCESSING, due_before=now)
        waiting = self._store.by_status(JobStatus.WAITING, due_before=now)
        for jobs, action in ((lost, self._resend), (expired, self._resend), (waiting, self._settle)):
            if not self._each(jobs, action, has_time, report):
                report.out_of_time = True
                break
        return report

    def _each(
        self,
        jobs: Iterable[Job],
        action: Callable[[Job, SweepReport], None],
        has_time: Callable[[], bool],
        report: SweepReport,
    ) -> bool:
        for job in jobs:
            if not has_time():
                return False
            try:
                action(job, report)
            except Exception as error:
                logger.exception("recovery of one job failed; the next sweep retries it", jobId=job.job_id)
                report.errors.append(f"{job.job_id}: {type(error).__name__}")
        return True

    def _resend(self, job: Job, report: SweepReport) -> None:
        if self._timed_out_workflow(job, report):
            return
        reason = None
        if job.status is JobStatus.PROCESSING:
            reason = f"lease expired on attempt {job.attempts}: the worker crashed or timed out"
        if not self._store.requeue(job, self._recheck, reason):
            return  # another sweep got there first, or the job moved on
        self._queue.send_job(job)
        if job.status is JobStatus.PROCESSING:
            report.requeued_expired += 1
            log_transition(
                job.job_id, job.job_type, JobStatus.PROCESSING, JobStatus.PENDING, job.attempts, reason
            )
        else:
            report.requeued_pending += 1
            logger.info("lost message re-sent", jobId=job.job_id)

    def _settle(self, job: Job, report: SweepReport) -> None:
        if self._timed_out_workflow(job, report):
            return
        if parents.settle(self._store, job.job_id, self._recheck) is not None:
            report.parents_finished += 1

    def _timed_out_workflow(self, job: Job, report: SweepReport) -> bool:
        """True when `job` is a started workflow (its due time is then its execution's deadline)."""
        if job.execution is None:
            return False
        workflows = self._store.workflows()
        if not workflows.execution_arn(job.job_id):
            return False  # its execution never started: the next claim starts it
        reason = (
            f"the workflow ran past its execution timeout ({config.WORKFLOW_EXECUTION_TIMEOUT_SECONDS} s)"
        )
        try:
            workflows.die(job, job.execution, reason)
        except StaleAttemptError:
            return True  # it ended, or was cancelled, meanwhile
        report.workflows_timed_out += 1
        log_transition(job.job_id, job.job_type, job.status, JobStatus.DEAD, job.attempts, reason)
        try:
            self._queue.dead_letters_for(job.job_type).forward(
                job_message(job.job_id), death_letter(job, reason)
            )
        except Exception as error:
            logger.exception(
                "a timed-out workflow is dead, but its alert could not be sent", jobId=job.job_id
            )
            report.errors.append(f"{job.job_id}: {type(error).__name__}")
        return True
