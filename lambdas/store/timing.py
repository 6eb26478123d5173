"""Jobs with a start time (`runAt`): a `scheduled` job handed to SQS once it is due within the horizon, and
a caller moving a job's start time. Both are one conditional write on the status and start time seen, so
a hand-over and a reschedule that race never both take effect: the loser sees the job as the winner left it.
"""

from lambdas.models.job import Job, JobStatus
from lambdas.store.codec import RUN_AT, millis
from lambdas.store.errors import ConditionFailedError, JobMovedError
from lambdas.store.expressions import Update
from lambdas.store.job_table import JobTable


class JobTiming(JobTable):
    def hand_over(self, job: Job) -> Job | None:
        """A `scheduled` job becomes `pending`, still due at its start time (its message is sent next).
        None when it was not as seen: another sweep handed it over, or a caller moved or cancelled it."""
        try:
            return self._start_at(job, JobStatus.PENDING, job.run_at / 1000)
        except JobMovedError:
            return None

    def move_start(self, job: Job, run_at: float, horizon_seconds: int) -> Job:
        """A job that has not started yet (`scheduled`, or `pending` with a start time) gets a new start
        time: `scheduled` when it is beyond the horizon, else `pending`. JobMovedError when the job was
        not as seen (it started, was handed over, cancelled or moved by another call)."""
        status = JobStatus.SCHEDULED if run_at - self.now() > horizon_seconds else JobStatus.PENDING
        return self._start_at(job, status, run_at)

    def _start_at(self, job: Job, status: JobStatus, run_at: float) -> Job:
        state = self._items.state(job.job_id, job.owner, status, run_at, self.now())
        update = Update(
            assign={**state.assign, RUN_AT: millis(run_at)},
            remove=state.remove,
            condition=f"#status = :seen AND #{RUN_AT} = :run_at",
            values={":seen": job.status.value, ":run_at": job.run_at},
        )
        try:
            return self._as_job(self._update(job.job_id, update))
        except ConditionFailedError:
            raise JobMovedError(job.job_id) from None
