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
on the parent's own item, as they did then (`_end_on_parent`; when it can go: `ChildCounts.apart`).

Extra puts (a webhook delivery's log line) commit in the same transaction.

Children of one parent that end in the same worker batch can end together (`end_together`): one read of
the counters item, then one transaction with every child's write, the counters moved once by their sum
(conditioned on the count and the arming read), and the parent's `done` when the group holds its last
children. Any cancellation but the counters having moved leaves each child to its own write above, so a
stale child never holds back its siblings and the counts stay exact.
"""

import dataclasses
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from lambdas.models.job import Job, JobStatus
from lambdas.store import codec, schema, transactions
from lambdas.store.codec import CHILDREN_BEFORE_LAST, CHILDREN_FINISHED, OWNER, STATUS
from lambdas.store.errors import StaleAttemptError, StoreError, TransactionCancelledError
from lambdas.store.expressions import Update, unmarshal
from lambdas.store.job_table import JobTable
from lambdas.store.transactions import Put

# AWS's bounds on one TransactWriteItems (moto enforces neither): items, and their size in all. A group
# keeps two items for the counters and the parent, and room for the parent's item (up to 400 KB).
TRANSACTION_MAX_ITEMS = 100
TRANSACTION_MAX_BYTES = 4 * 1024 * 1024
_GROUP_MAX_ITEMS = TRANSACTION_MAX_ITEMS - 2
_GROUP_MAX_BYTES = TRANSACTION_MAX_BYTES - 512 * 1024

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
    """What a terminal write did. `job`: the job as written, when the write was asked for it (a lone
    UpdateItem can return it, a transaction cannot). `parent_finished`: the parent, when this write
    finished it."""

    job: Job | None
    parent_finished: FinishedParent | None = None


@dataclass(frozen=True)
class ChildEnding:
    """A child's terminal write, as `ChildEndings.end` takes it, for a write together with its siblings'.
    `size`: what its item is estimated to weigh once written (bytes, an upper bound)."""

    job_id: str
    parent_id: str
    owner: str
    change: Update
    status: JobStatus
    puts: tuple[Put, ...] = ()
    size: int = 0

    @property
    def items(self) -> int:
        return 1 + len(self.puts)

    @property
    def weight(self) -> int:
        return self.size + sum(codec.item_size(put.item) for put in self.puts)


class Together(Protocol):
    """Where a child's terminal write may wait to be made with its siblings' (a worker batch's)."""

    def end(self, ending: ChildEnding) -> Ended: ...


class ChildEndings:
    """A job's terminal write: alone, with extra puts, or a child's with its fan-out's counters."""

    def __init__(self, table: JobTable) -> None:
        self._table = table

    def end(
        self,
        job_id: str,
        parent_id: str | None,
        change: Update,
        status: JobStatus,
        puts: Sequence[Put] = (),
        returning: bool = False,
    ) -> Ended:
        """Write a terminal `status` (StaleAttemptError when `change`'s condition fails); `returning`:
        a lone job's UpdateItem asks for the job as written."""
        if parent_id:
            return self._end_child(job_id, parent_id, change, status, puts)
        return Ended(self.write_job(job_id, change, puts, returning))

    def write_job(
        self, job_id: str, change: Update, puts: Sequence[Put] = (), returning: bool = False
    ) -> Job | None:
        """One write of the job, with `puts` in a transaction if there are any; the job as written when
        `returning` and the write is one UpdateItem. StaleAttemptError when `change`'s condition fails."""
        if puts:
            self._write_or_stale(job_id, [self._job_op(job_id, change)], puts)
        elif returning:
            return self._table.update_or_stale(job_id, change)
        else:
            self._table.write_or_stale(job_id, change)
        return None

    def end_together(self, endings: Sequence[ChildEnding]) -> list[Ended | None]:
        """The terminal writes of children of one parent and owner, in as few transactions as AWS's
        bounds allow (one per chunk, after one read of the counters); for each ending, what its write
        did, or None when it was not made and the child must write alone (`end`). A chunk that finishes
        the parent says so in its first ending's `Ended`."""
        first = endings[0] if endings else None
        if first is None or any((e.parent_id, e.owner) != (first.parent_id, first.owner) for e in endings):
            return [None] * len(endings)  # one group is one parent's, and one client's
        ended: list[Ended | None] = []
        for chunk in _chunks(endings):
            ended.extend(self._end_chunk(chunk) if len(chunk) > 1 else [None])
        return ended

    def _end_chunk(self, endings: Sequence[ChildEnding]) -> list[Ended | None]:
        parent_id, owner = endings[0].parent_id, endings[0].owner
        jobs = [self._job_op(e.job_id, e.change, f"job{i}") for i, e in enumerate(endings)]
        puts = [put for e in endings for put in e.puts]
        counts: Counter[str] = Counter()
        for e in endings:
            counts.update(codec.counter_changes(e.status, 1))
        seen = self._table.raw_item(codec.counters_key(parent_id))
        for _ in range(MAX_ROUNDS):
            if seen is None:  # a parent counted on its own item, or one that is gone
                return [None] * len(endings)
            armed = unmarshal(seen)
            if armed.get(OWNER) != owner or CHILDREN_FINISHED not in armed:
                return [None] * len(endings)  # another client's, or counted before `childrenFinished`
            finished = int(armed[CHILDREN_FINISHED])
            values = {":finished": finished}
            condition = f"#{CHILDREN_FINISHED} = :finished AND attribute_not_exists(#{CHILDREN_BEFORE_LAST})"
            completes = False
            if CHILDREN_BEFORE_LAST in armed:
                before_last = int(armed[CHILDREN_BEFORE_LAST])
                if finished + len(endings) > before_last + 1:
                    return [None] * len(endings)  # more endings than children left: each decides alone
                completes = finished + len(endings) == before_last + 1
                values[":beforeLast"] = before_last
                condition = f"#{CHILDREN_FINISHED} = :finished AND #{CHILDREN_BEFORE_LAST} = :beforeLast"
            moved = Update(
                assign=self._table.counters_ttl(), add=dict(counts), condition=condition, values=values
            )
            operations = [*jobs, self._counters_op(parent_id, moved)]
            if completes:
                operations.append(self._parent_op(parent_id, self._finishing(parent_id, owner)))
            try:
                transactions.write(self._table.ddb, operations, puts)
            except TransactionCancelledError as cancelled:
                if cancelled.failed != {"counters"}:
                    return [None] * len(endings)  # a stale child, or the parent not waiting
                seen = cancelled.seen.get("counters") or self._table.raw_item(codec.counters_key(parent_id))
                continue  # the counters moved after they were read: decide again
            finished_parent = None
            if completes:
                finished_parent = FinishedParent(
                    parent_id, str(armed.get(codec.PARENT_TYPE, "")), int(armed.get(codec.PARENT_ATTEMPTS, 0))
                )
            return [Ended(None, finished_parent), *(Ended(None) for _ in endings[1:])]
        return [None] * len(endings)

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
            done = self._finishing(parent_id, unmarshal(seen).get(OWNER, ""))
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
            armed = unmarshal(seen)
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
            parent = unmarshal(seen)
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

    def _job_op(self, job_id: str, change: Update, name: str = "job") -> transactions.Operation:
        return transactions.update(name, self._table.name, codec.key(job_id), change)

    def _parent_op(self, parent_id: str, change: Update) -> transactions.Operation:
        return transactions.update("parent", self._table.name, codec.key(parent_id), change, seen=True)

    def _counters_op(self, parent_id: str, change: Update) -> transactions.Operation:
        return transactions.update(
            "counters", self._table.name, codec.counters_key(parent_id), change, seen=True
        )


def _chunks(endings: Sequence[ChildEnding]) -> Iterator[list[ChildEnding]]:
    """`endings` in order, in runs that fit one transaction with the counters and the parent."""
    chunk: list[ChildEnding] = []
    items = weight = 0
    for ending in endings:
        if chunk and (items + ending.items > _GROUP_MAX_ITEMS or weight + ending.weight > _GROUP_MAX_BYTES):
            yield chunk
            chunk, items, weight = [], 0, 0
        chunk.append(ending)
        items += ending.items
        weight += ending.weight
    if chunk:
        yield chunk
