"""A caller's actions on a job: retry a dead one, cancel a pending one. Each is one conditional write on
the job (a transaction with its parent's counters when it is a fan-out's child), conditioned on the
state the caller saw, so two concurrent calls never both take effect: the second raises JobMovedError.
"""

from typing import Any

from lambdas.models.job import Job, JobStatus
from lambdas.store import codec, schema
from lambdas.store.codec import ALERT_CLAIMED_UNTIL, ALERTED_AT, REOPENED_AT, millis
from lambdas.store.errors import ConditionFailedError, JobMovedError, TransactionCancelledError
from lambdas.store.expressions import Update
from lambdas.store.job_table import JobTable


class JobActions(JobTable):
    def reopen(self, job: Job, parent: Job | None, recheck_seconds: int) -> Job:
        """A dead job back to `pending`, due now, with a fresh attempt budget (`attempts` = 0; its
        history and `attemptTotal` go on). Its alert may be raised again if it dies again; `reopenedAt`
        fences off letters about the death before. A fan-out's child moves its parent's `childrenDead`
        back in the same transaction, and a finished parent back to `waiting` (its fan-out alert
        cleared)."""
        now = self.now()
        state = self._items.state(job.job_id, job.owner, JobStatus.PENDING, now, now)
        update = Update(
            assign={**state.assign, "attempts": 0, REOPENED_AT: millis(now)},
            remove=(*state.remove, ALERTED_AT, ALERT_CLAIMED_UNTIL),
            condition=f"#status = :dead AND {codec.ATTEMPT_TOTAL} = :total",
            values={":dead": JobStatus.DEAD.value, ":total": job.attempt_total},
        )
        parent_update = None
        if parent is not None:
            parent_update = self._parent_update(
                parent, codec.counter_changes(JobStatus.DEAD, -1), recheck_seconds
            )
        return self._act(job, update, parent, parent_update)

    def cancel(self, job: Job, parent: Job | None) -> Job:
        """A pending job (or a waiting fan-out) to `cancelled`; its later messages are dropped."""
        now = self.now()
        state = self._items.state(job.job_id, job.owner, JobStatus.CANCELLED, now, now)
        update = Update(
            assign=state.assign,
            remove=state.remove,
            condition="#status = :seen",
            values={":seen": job.status.value},
        )
        parent_update = None
        if parent is not None:
            parent_update = Update(
                assign={},
                add=codec.counter_changes(JobStatus.CANCELLED, 1),
                condition=f"attribute_exists({schema.JOBS_PK})",
            )
        return self._act(job, update, parent, parent_update)

    def _parent_update(self, parent: Job, add: dict[str, int], recheck_seconds: int) -> Update:
        """The parent's counters, and a finished parent back to `waiting`: conditioned on what was seen."""
        assign: dict[str, Any] = {}
        remove: tuple[str, ...] = ()
        if parent.status in (JobStatus.DONE, JobStatus.DEAD):
            now = self.now()
            state = self._items.state(
                parent.job_id, parent.owner, JobStatus.WAITING, now + recheck_seconds, now
            )
            # Its fan-out alert was for the deaths before this retry: new deaths raise a new one.
            assign, remove = state.assign, (*state.remove, ALERTED_AT, ALERT_CLAIMED_UNTIL)
        return Update(
            assign=assign,
            add=add,
            remove=remove,
            condition="#status = :seen",
            values={":seen": parent.status.value},
        )

    def _act(self, job: Job, update: Update, parent: Job | None, parent_update: Update | None) -> Job:
        try:
            if parent is None or parent_update is None:
                return codec.to_job(self._update(job.job_id, update))
            self._with_parent(job.job_id, update, parent.job_id, parent_update)
        except (ConditionFailedError, TransactionCancelledError):
            raise JobMovedError(job.job_id) from None
        return self._require(job.job_id)
