"""A job's terminal write, with its fan-out's counters in the same transaction, which also tells the
last child that it is the last and lets it finish the parent: no read of the parent, no settle.

The counters live in the fan-out's own small item (`codec.counters_id`: the counts, `childrenTotal` and
`childrenBeforeLast`), created before the first child is sent and armed with `childrenBeforeLast` when
the parent starts waiting. A child's part of the transaction is on that item, never on the parent's
(whose payload may be 256 KB, and DynamoDB bills a write by the item's size), conditioned on "this child
is not the last one": `childrenBeforeLast` is not there yet, or `childrenFinished` is not it
(DynamoDB conditions cannot add, so `childrenTotal - 1` is stored). When that condition fails, the
cancellation hands back the counters as they stood (ReturnValuesOnConditionCheckFailure): one child
left, this one. A second transaction then writes the child, moves the counters and makes the parent
`done` (conditioned on the same equality and on the parent `waiting`), so of two racing writers exactly
one finishes it; if the counters moved in between (a child retried by a caller) the child decides again
from the start, and if the parent is not waiting (cancelled, or running again) the child only counts.
The counts stay exact because every change of them commits with the child's own write, and a child
whose attempt lost its lease changes nothing (its own condition fails the whole transaction).

A parent whose children started before counters items existed has no counters item: its children count
on the parent's own item, as they did then (`_end_on_parent`).

Extra puts (a webhook delivery's log line) commit in the same transaction.
"""

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from lambdas.models.job import Job, JobStatus
from lambdas.store import codec, schema, transactions
from lambdas.store.codec import CHILDREN_BEFORE_LAST, CHILDREN_FINISHED, OWNER, STATUS
from lambdas.store.errors import StaleAttemptError, StoreError, TransactionCancelledError
from lambdas.store.expressions import Update
from lambdas.store.job_table import JobTable
from lambdas.store.transactions import Put

_WAITING = {":waiting": JobStatus.WAITING.value}
# Each round is a change someone else made to the parent between this child's two transactions.
MAX_ROUNDS = 10
_NOT_LAST = (
    f"attribute_exists({schema.JOBS_PK}) AND "
    f"(attribute_not_exists(#{CHILDREN_BEFORE_LAST}) OR #{CHILDREN_FINISHED} <> #{CHILDREN_BEFORE_LAST})"
)
_LAST = f"#{CHILDREN_FINISHED} = #{CHILDREN_BEFORE_LAST}"
_COUNTERS_EXIST = f"attribute_exists({schema.JOBS_PK})"
# The same rules on the parent's own item, for a parent counted there (before counters items existed).
_NOT_LAST_ON_PARENT = (
    f"attribute_exists({schema.JOBS_PK}) AND (#{STATUS} <> :waiting OR "
    f"attribute_not_exists(#{CHILDREN_BEFORE_LAST}) OR #{CHILDREN_FINISHED} <> #{CHILDREN_BEFORE_LAST})"
)
_LAST_ON_PARENT = f"#{STATUS} = :waiting AND #{CHILDREN_FINISHED} = #{CHILDREN_BEFORE_LAST}"


@dataclass(frozen=True)
class FinishedParent:
    """The parent a child's write finished, as its `waiting -> done` log line names it."""

    job_id: str
    job_type: str
    attempts: int


@dataclass(frozen=True)
class Ended:
    """What a terminal write did. `job`: the job as written, when the write returned it (a lone
    UpdateItem does, a transaction does not). `parent_finished`: the parent, when this write finished it."""

    job: Job | None
    parent_finished: FinishedParent | None = None


class ChildEndings:
    """A job's terminal write: alone, with extra puts, or a child's with its fan-out's counters."""

    def __init__(self, table: JobTable) -> None:
        self._table = table

    def end(
        self, job_id: str, parent_id: str | None, change: Update, status: JobStatus, puts: Sequence[Put] = ()
    ) -> Ended:
        """Write a terminal `status` (StaleAttemptError when `change`'s condition fails)."""
        if parent_id:
            return self._end_child(job_id, parent_id, change, status, puts)
        return Ended(self.write_job(job_id, change, puts))

    def write_job(self, job_id: str, change: Update, puts: Sequence[Put] = ()) -> Job | None:
        """One write of the job, with `puts` in a transaction if there are any; the job as written when
        the write returned it. StaleAttemptError when `change`'s condition fails."""
        if not puts:
            return self._table.update_or_stale(job_id, change)
        self._write_or_stale(job_id, [self._job_op(job_id, change)], puts)
        return None

    def _end_child(
        self, job_id: str, parent_id: str, change: Update, status: JobStatus, puts: Sequence[Put]
    ) -> Ended:
        job = self._job_op(job_id, change)
        counters = codec.counter_changes(status, 1)
        not_last = Update(assign=self._table.counters_ttl(), add=counters, condition=_NOT_LAST)
        for _ in range(MAX_ROUNDS):
            try:
                self._write_or_stale(job_id, [job, self._counters_op(parent_id, not_last)], puts)
                return Ended(None)
            except TransactionCancelledError as cancelled:
                seen = cancelled.seen.get("counters") or self._table.raw_item(codec.counters_key(parent_id))
            if seen is None:  # no counters item: a parent counted on its own item, or one that is gone
                return self._end_on_parent(job_id, parent_id, change, status, puts)
            last = Update(assign=self._table.counters_ttl(), add=counters, condition=_LAST)
            done = self._finishing(parent_id, codec.unmarshal(seen).get(OWNER, ""))
            try:
                operations = [job, self._counters_op(parent_id, last), self._parent_op(parent_id, done)]
                self._write_or_stale(job_id, operations, puts)
            except TransactionCancelledError as cancelled:
                if "counters" in cancelled.failed:
                    continue  # the counters moved after they were seen: decide again
                # The parent is not waiting (cancelled, or running again): this child only counts.
                counted = Update(assign=self._table.counters_ttl(), add=counters, condition=_COUNTERS_EXIST)
                try:
                    self._write_or_stale(job_id, [job, self._counters_op(parent_id, counted)], puts)
                except TransactionCancelledError:
                    continue
                return Ended(None)
            # The counters item names its parent's type and attempt (written when it was armed).
            armed = codec.unmarshal(seen)
            parent = FinishedParent(
                parent_id, str(armed.get(codec.PARENT_TYPE, "")), int(armed.get(codec.PARENT_ATTEMPTS, 0))
            )
            return Ended(None, parent)
        raise StoreError(f"the parent {parent_id} kept changing under its child {job_id}'s write")

    def _end_on_parent(
        self, job_id: str, parent_id: str, change: Update, status: JobStatus, puts: Sequence[Put]
    ) -> Ended:
        """The terminal write of a child whose parent counts on its own item (or is gone)."""
        job = self._job_op(job_id, change)
        counters = codec.counter_changes(status, 1)
        not_last = Update(assign={}, add=counters, condition=_NOT_LAST_ON_PARENT, values=_WAITING)
        for _ in range(MAX_ROUNDS):
            try:
                self._write_or_stale(job_id, [job, self._parent_op(parent_id, not_last)], puts)
                return Ended(None)
            except TransactionCancelledError as cancelled:
                seen = cancelled.seen.get("parent") or self._table.raw_item(codec.key(parent_id))
            if seen is None:  # the parent is gone (expired): the child's own write still happens
                self._write_or_stale(job_id, [job], puts)
                return Ended(None)
            parent = codec.unmarshal(seen)
            done = self._finishing(parent_id, parent.get(OWNER, ""))
            finishing = dataclasses.replace(done, add=counters, condition=_LAST_ON_PARENT, values=_WAITING)
            try:
                self._write_or_stale(job_id, [job, self._parent_op(parent_id, finishing)], puts)
            except TransactionCancelledError:
                continue  # the parent moved after it was seen: decide again
            finished = codec.job_from_values(finishing.applied_to(parent))
            return Ended(None, FinishedParent(finished.job_id, finished.job_type, finished.attempts))
        raise StoreError(f"the parent {parent_id} kept changing under its child {job_id}'s write")

    def _finishing(self, parent_id: str, owner: str) -> Update:
        """The last child's change to its waiting parent: `done`."""
        now = self._table.now()
        state = self._table.items.state(parent_id, owner, JobStatus.DONE, now, now)
        return Update(
            assign=state.assign, remove=state.remove, condition=f"#{STATUS} = :waiting", values=_WAITING
        )

    def _write_or_stale(
        self, job_id: str, operations: list[transactions.Operation], puts: Sequence[Put]
    ) -> None:
        """The transaction. StaleAttemptError when the job's own condition failed (its attempt lost the
        job), TransactionCancelledError when only the parent's did, StoreError when it could not commit
        for another reason (conflicts that did not clear)."""
        try:
            transactions.write(self._table.ddb, operations, puts)
        except TransactionCancelledError as cancelled:
            if "job" in cancelled.failed:
                raise StaleAttemptError(job_id) from None
            if not cancelled.failed & {"parent", "counters"}:
                raise StoreError(f"the write of job {job_id} could not commit: {cancelled}") from None
            raise

    def _job_op(self, job_id: str, change: Update) -> transactions.Operation:
        return transactions.update("job", self._table.name, codec.key(job_id), change)

    def _parent_op(self, parent_id: str, change: Update) -> transactions.Operation:
        return transactions.update("parent", self._table.name, codec.key(parent_id), change, seen=True)

    def _counters_op(self, parent_id: str, change: Update) -> transactions.Operation:
        return transactions.update(
            "counters", self._table.name, codec.counters_key(parent_id), change, seen=True
        )
