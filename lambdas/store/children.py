"""A job's terminal write, with its fan-out parent's counters in the same transaction, which also tells
the last child that it is the last and lets it finish the parent: no read of the parent, no settle.

The parent's part of the transaction is conditioned on "this child is not the last one": the parent is
not `waiting` yet (it finishes itself when it starts waiting, if its children were quicker), or its
`childrenFinished` is not `childrenBeforeLast` (DynamoDB conditions cannot add, so the parent stores
`childrenTotal - 1` when it starts waiting). When that condition fails, the cancellation hands back the
parent as it stood (ReturnValuesOnConditionCheckFailure): waiting, with one child left, this one. A
second transaction then writes the child, moves the counters and finishes the parent, conditioned on the
same equality, so of two racing writers exactly one finishes it; if the parent moved in between (a
child retried by a caller, the fan-out cancelled) the child decides again from the start. The counts
stay exact because every change of them commits with the child's own write, and a child whose attempt
lost its lease changes nothing (its own condition fails the whole transaction).

Extra puts (a webhook delivery's log line) commit in the same transaction.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lambdas.models.job import Job, JobStatus
from lambdas.store import codec, schema, transactions
from lambdas.store.codec import CHILDREN_BEFORE_LAST, CHILDREN_FINISHED
from lambdas.store.errors import StaleAttemptError, StoreError, TransactionCancelledError
from lambdas.store.expressions import Update
from lambdas.store.job_table import JobTable
from lambdas.store.transactions import Put

# Each round is a change someone else made to the parent between this child's two transactions.
MAX_ROUNDS = 10
_NOT_LAST = (
    f"attribute_exists({schema.JOBS_PK}) AND (#status <> :waiting OR "
    f"attribute_not_exists(#{CHILDREN_BEFORE_LAST}) OR #{CHILDREN_FINISHED} <> #{CHILDREN_BEFORE_LAST})"
)
_LAST = f"#status = :waiting AND #{CHILDREN_FINISHED} = #{CHILDREN_BEFORE_LAST}"


@dataclass(frozen=True)
class Ended:
    """What a terminal write did. `job`: the job as written, when the write returned it (a lone
    UpdateItem does, a transaction does not). `parent_finished`: the parent, when this write finished it."""

    job: Job | None
    parent_finished: Job | None = None


class ChildWrites(JobTable):
    def _end(
        self, job_id: str, parent_id: str | None, change: Update, status: JobStatus, puts: Sequence[Put] = ()
    ) -> Ended:
        """Write a terminal `status` (StaleAttemptError when `change`'s condition fails)."""
        if parent_id:
            return self._end_child(job_id, parent_id, change, status, puts)
        return Ended(self._write_job(job_id, change, puts))

    def _write_job(self, job_id: str, change: Update, puts: Sequence[Put] = ()) -> Job | None:
        """One write of the job, with `puts` in a transaction if there are any; the job as written when
        the write returned it. StaleAttemptError when `change`'s condition fails."""
        if not puts:
            return self._update_or_stale(job_id, change)
        self._write_or_stale(job_id, [self._job_op(job_id, change)], puts)
        return None

    def _end_child(
        self, job_id: str, parent_id: str, change: Update, status: JobStatus, puts: Sequence[Put]
    ) -> Ended:
        job = self._job_op(job_id, change)
        counters = codec.counter_changes(status, 1)
        not_last = Update(assign={}, add=counters, condition=_NOT_LAST, values={":waiting": "waiting"})
        for _ in range(MAX_ROUNDS):
            try:
                self._write_or_stale(job_id, [job, self._parent_op(parent_id, not_last)], puts)
                return Ended(None)
            except TransactionCancelledError as cancelled:
                seen = cancelled.seen.get("parent") or self._raw(parent_id)
            if seen is None:  # the parent is gone (expired): the child's own write still happens
                self._write_or_stale(job_id, [job], puts)
                return Ended(None)
            finishing = self._finishing(codec.unmarshal(seen), counters)
            try:
                self._write_or_stale(job_id, [job, self._parent_op(parent_id, finishing)], puts)
            except TransactionCancelledError:
                continue  # the parent moved after it was seen: decide again
            return Ended(None, codec.job_from_values(finishing.applied_to(codec.unmarshal(seen))))
        raise StoreError(f"the parent {parent_id} kept changing under its child {job_id}'s write")

    def _finishing(self, parent: dict[str, Any], counters: dict[str, int]) -> Update:
        """The last child's change to its waiting parent: the counters, and `done`."""
        now = self.now()
        state = self._items.state(parent[schema.JOBS_PK], parent.get("owner", ""), JobStatus.DONE, now, now)
        return Update(
            assign=state.assign,
            add=counters,
            remove=state.remove,
            condition=_LAST,
            values={":waiting": "waiting"},
        )

    def _write_or_stale(
        self, job_id: str, operations: list[transactions.Operation], puts: Sequence[Put]
    ) -> None:
        """The transaction. StaleAttemptError when the job's own condition failed (its attempt lost the
        job), TransactionCancelledError when only the parent's did, StoreError when it could not commit
        for another reason (conflicts that did not clear)."""
        try:
            transactions.write(self._ddb, operations, puts)
        except TransactionCancelledError as cancelled:
            if "job" in cancelled.failed:
                raise StaleAttemptError(job_id) from None
            if "parent" not in cancelled.failed:
                raise StoreError(f"the write of job {job_id} could not commit: {cancelled}") from None
            raise

    def _job_op(self, job_id: str, change: Update) -> transactions.Operation:
        return transactions.update("job", self._table, codec.key(job_id), change)

    def _parent_op(self, parent_id: str, change: Update) -> transactions.Operation:
        return transactions.update("parent", self._table, codec.key(parent_id), change, seen=True)

    def _raw(self, job_id: str) -> dict[str, Any] | None:
        item: dict[str, Any] | None = self._ddb.get_item(
            TableName=self._table, Key=codec.key(job_id), ConsistentRead=True
        ).get("Item")
        return item
