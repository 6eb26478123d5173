"""A caller's actions on a job: retry a dead one, cancel a pending one. Each is one conditional write on
the job (a transaction with its fan-out's counters item when it is a child), conditioned on the state
the caller saw, so two concurrent calls never both take effect: the second raises JobMovedError.
"""

from typing import Any

from lambdas.models.job import Job, JobStatus
from lambdas.store import codec, schema, transactions
from lambdas.store.codec import (
    ALERT_CLAIMED_UNTIL,
    ALERTED_AT,
    CHILDREN_FINISHED,
    CHILDREN_TOTAL,
    REOPENED_AT,
    millis,
)
from lambdas.store.errors import (
    ConditionFailedError,
    JobMovedError,
    ParentMovedError,
    TransactionCancelledError,
)
from lambdas.store.expressions import Update
from lambdas.store.job_table import JobTable

# A waiting fan-out's child may be reopened on its counters alone while the parent has not finished,
# which it cannot have while some child is still counted as not finished.
_PARENT_UNFINISHED = (
    f"attribute_exists({schema.JOBS_PK}) AND "
    f"(attribute_not_exists(#{CHILDREN_TOTAL}) OR #{CHILDREN_FINISHED} < #{CHILDREN_TOTAL})"
)
_COUNTERS_EXIST = f"attribute_exists({schema.JOBS_PK})"


class JobActions(JobTable):
    def reopen(self, job: Job, parent: Job | None, recheck_seconds: int) -> Job:
        """A dead job back to `pending`, due now, with a fresh attempt budget (`attempts` = 0; its
        history and `attemptTotal` go on). Its alert may be raised again if it dies again; `reopenedAt`
        fences off letters about the death before.

        A fan-out's child moves its parent's counters back in the same transaction: on the counters
        item alone while the parent has not finished (its counters say so), and a parent seen finished
        back to `waiting` too (conditioned on the state seen; its fan-out alert cleared). JobMovedError
        when the job was not dead any more, ParentMovedError when the parent was not as seen: read it
        again and decide again."""
        now = self.now()
        state = self._items.state(job.job_id, job.owner, JobStatus.PENDING, now, now)
        update = Update(
            assign={**state.assign, "attempts": 0, REOPENED_AT: millis(now)},
            remove=(*state.remove, ALERTED_AT, ALERT_CLAIMED_UNTIL),
            condition=f"#status = :dead AND {codec.ATTEMPT_TOTAL} = :total",
            values={":dead": JobStatus.DEAD.value, ":total": job.attempt_total},
        )
        if parent is None:
            return self._act(job, update, [])
        counts = codec.counter_changes(JobStatus.DEAD, -1)
        if parent.children is not None and not parent.children.apart:
            parent_update = self._parent_update(parent, counts, recheck_seconds)
            return self._act(job, update, [self._on_parent(parent.job_id, parent_update)])
        if parent.status not in (JobStatus.DONE, JobStatus.DEAD):
            unfinished = Update(assign=self._counters_ttl(), add=counts, condition=_PARENT_UNFINISHED)
            return self._act(job, update, [self._on_counters(parent.job_id, unfinished)])
        counters = Update(assign=self._counters_ttl(), add=counts, condition=_COUNTERS_EXIST)
        back = self._parent_update(parent, {}, recheck_seconds)
        return self._act(
            job, update, [self._on_counters(parent.job_id, counters), self._on_parent(parent.job_id, back)]
        )

    def cancel(self, job: Job, parent: Job | None) -> Job:
        """A pending job (or a waiting fan-out) to `cancelled`; its later messages are dropped. A
        fan-out's child moves its parent's counters in the same transaction."""
        now = self.now()
        state = self._items.state(job.job_id, job.owner, JobStatus.CANCELLED, now, now)
        update = Update(
            assign=state.assign,
            remove=state.remove,
            condition="#status = :seen",
            values={":seen": job.status.value},
        )
        if parent is None:
            return self._act(job, update, [])
        counts = codec.counter_changes(JobStatus.CANCELLED, 1)
        if parent.children is not None and not parent.children.apart:
            on_parent = Update(assign={}, add=counts, condition=_COUNTERS_EXIST)
            return self._act(job, update, [self._on_parent(parent.job_id, on_parent)])
        counters = Update(assign=self._counters_ttl(), add=counts, condition=_COUNTERS_EXIST)
        return self._act(job, update, [self._on_counters(parent.job_id, counters)])

    def _parent_update(self, parent: Job, add: dict[str, int], recheck_seconds: int) -> Update:
        """A finished parent back to `waiting` (with `add`): conditioned on the state seen."""
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

    def _on_parent(self, parent_id: str, change: Update) -> transactions.Operation:
        return transactions.update("parent", self._table, codec.key(parent_id), change)

    def _on_counters(self, parent_id: str, change: Update) -> transactions.Operation:
        return transactions.update("counters", self._table, codec.counters_key(parent_id), change)

    def _act(self, job: Job, update: Update, others: list[transactions.Operation]) -> Job:
        """`update` on the job, with `others` in one transaction when there are any."""
        try:
            if not others:
                return self._as_job(self._update(job.job_id, update))
            own = transactions.update("job", self._table, codec.key(job.job_id), update)
            transactions.write(self._ddb, [own, *others])
        except ConditionFailedError:
            raise JobMovedError(job.job_id) from None
        except TransactionCancelledError as cancelled:
            if "job" in cancelled.failed or not cancelled.failed:
                raise JobMovedError(job.job_id) from None
            raise ParentMovedError(job.job_id) from None
        return self._require(job.job_id)
