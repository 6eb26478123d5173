"""The job transitions: every state change of a job record is one conditional write.

Writes made on behalf of a running attempt are conditioned on that attempt's number, so a worker whose
lease expired cannot overwrite what a newer attempt did. A child job's terminal write and its fan-out's
counters item's change commit in one transaction (`children`), so the counts on a fan-out are exact even
when a worker dies between the two. A caller's retry and cancel, and a move of a job's start time, are
conditioned on the state the caller saw, so two that race never both take effect. The item shape lives
in `codec`, the expression syntax in `expressions`, the raw reads and writes in `job_table`.
"""

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lambdas import config
from lambdas.models.job import AlertClaim, AttemptOutcome, Job, JobStatus, NewJob
from lambdas.models.timestamps import iso_time
from lambdas.models.waiting import WaitingFor
from lambdas.store import batches, codec, schema, transactions
from lambdas.store.children import ChildEnding, ChildEndings, Ended, Together
from lambdas.store.codec import (
    ALERT_CLAIMED_UNTIL,
    ALERTED_AT,
    ATTEMPT_STARTED_AT,
    ATTEMPT_TOTAL,
    ATTEMPTS,
    CHILDREN_BEFORE_LAST,
    CHILDREN_FINISHED,
    CHILDREN_TOTAL,
    LAST_ERROR,
    MAX_ERROR_CHARS,
    OWNER,
    REOPENED_AT,
    RESULT,
    RETRYING_SINCE,
    RUN_AT,
    STATUS,
    UPDATED_AT,
    WAITED_SECONDS,
    WAITING_FOR,
    history_entry,
    millis,
)
from lambdas.store.errors import (
    ConditionFailedError,
    JobExistsError,
    JobMovedError,
    NotClaimableError,
    ParentMovedError,
    StaleAttemptError,
    StoreError,
    TransactionCancelledError,
    WaitedTooLongError,
    domain_errors,
)
from lambdas.store.expressions import Query, Update, marshal, unmarshal
from lambdas.store.job_table import JobTable
from lambdas.store.listing import JobListing, ListQuery, Position
from lambdas.store.transactions import Put
from lambdas.store.workflows import WorkflowStore

__all__ = ["ChildEnding", "Claim", "Ended", "JobStore", "Put", "Together", "iso_time"]

_ATTEMPT_CONDITION = f"#{STATUS} = :processing AND {ATTEMPTS} = :attempt"
_WAITING_CONDITION = f"#{STATUS} = :waiting"
# A parent whose payload is at most this size starts waiting in one transaction with its counters'
# arming (2 calls become 1, for 2 x its ~1-2 KB in write units instead of 1 x); a larger one in two writes.
TRANSACTIONAL_WAIT_MAX_BYTES = 1024
# A waiting fan-out's child may be reopened on its counters alone while the parent has not finished,
# which it cannot have while some child is still counted as not finished.
_PARENT_UNFINISHED = (
    f"attribute_exists({schema.JOBS_PK}) AND "
    f"(attribute_not_exists(#{CHILDREN_TOTAL}) OR #{CHILDREN_FINISHED} < #{CHILDREN_TOTAL})"
)
_COUNTERS_EXIST = f"attribute_exists({schema.JOBS_PK})"
# A job item's attributes besides its payload and result (keys, state, timestamps, HISTORY_SLOTS history
# entries, the last error cut to MAX_ERROR_CHARS, a waiting reason): an upper bound for a transaction's size.
_ITEM_MARGIN_BYTES = 64 * 1024


@dataclass(frozen=True)
class Claim:
    """A claimed job and the state it was claimed from (`processing` when a lease had expired)."""

    job: Job
    previous: JobStatus


class JobStore:
    """Every write of a job record, each one conditional write (or one transaction), grouped by what
    the lifecycle does: create, run one attempt, wait for children, act for a caller, start at a time,
    end on a dead letter, recover. Raw reads and writes go through `JobTable`, a child's terminal write
    with its fan-out's counters through `ChildEndings`, the listing queries through `JobListing`."""

    def __init__(
        self,
        table_name: str,
        shards: int,
        finished_ttl_days: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._table = JobTable(table_name, shards, finished_ttl_days, clock)
        self._children = ChildEndings(self._table)
        self._listing = JobListing(self._table)

    def workflows(self) -> WorkflowStore:
        """A workflow job's writes (its hand-over, steps, waits and end) on the same table and clock."""
        return WorkflowStore(self._table, self.now)

    # ---- Reading ---------------------------------------------------------------------------------

    @property
    def shards(self) -> int:
        return self._table.shards

    def now(self) -> float:
        return self._table.now()

    def get(self, job_id: str, counts: bool = True) -> Job | None:
        """The job (consistent read); a waiting or finished fan-out with its counts (see `JobTable.get`)."""
        return self._table.get(job_id, counts)

    def get_many(self, job_ids: Sequence[str]) -> list[Job]:
        """The jobs that exist among `job_ids`, in their order (see `JobTable.get_many`)."""
        return self._table.get_many(job_ids)

    def list_ids(
        self, query: ListQuery, limit: int, positions: Mapping[int, Position | str]
    ) -> tuple[list[str], dict[int, Position | str] | None]:
        """Up to `limit` job ids, newest first, and the positions to continue from (`JobListing`)."""
        return self._listing.list_ids(query, limit, positions)

    def by_status(self, status: JobStatus, due_before: float | None = None) -> Iterator[Job]:
        """Jobs in a live `status`, across every shard, optionally only those whose `dueAt` has passed.

        The index holds keys only (an update that moves no key costs it nothing); each page of keys is
        read back in one BatchGetItem."""
        for shard in range(self._table.shards):
            query = Query(
                self._table.name,
                (schema.STATUS_INDEX_PK, codec.status_key(status, shard)),
                sort=None if due_before is None else (schema.STATUS_INDEX_SK, "<", millis(due_before)),
                index=schema.STATUS_INDEX.name,
            )
            pages = self._table.ddb.get_paginator("query").paginate(
                **query.params(), PaginationConfig={"PageSize": 100}
            )
            for page in pages:
                yield from self.get_many([item[schema.JOBS_PK]["S"] for item in page["Items"]])

    # ---- Creating --------------------------------------------------------------------------------

    def put_new(self, new: NewJob) -> Job:
        """Create a pending job. JobExistsError carries the existing job when the id is taken;
        ItemTooLargeError says by how much the job exceeds what DynamoDB stores."""
        item = self._table.items.new_item(new, self.now())
        try:
            with domain_errors():
                self._table.ddb.put_item(
                    TableName=self._table.name,
                    Item=item,
                    ConditionExpression=f"attribute_not_exists({schema.JOBS_PK})",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
        except ConditionFailedError as failed:
            existing = self._table.seen(new.job_id, failed)
            if existing is None:
                raise
            raise JobExistsError(existing) from None
        return codec.to_job(item)

    def create_children(self, children: Sequence[NewJob], first_run: bool = False) -> list[str]:
        """Write the children that do not exist yet; return the ids written by this call.

        BatchWriteItem cannot be conditional, so existing ids are read first: a re-run of the parent
        (a retry, a duplicate message) never resets a child that has already made progress. Two runs
        of one parent cannot overlap, because each run holds the parent's claim. `first_run`: the
        parent's first attempt ever (`attemptTotal` 1), before which no run can have written a child,
        so there is nothing to read. The parent's counters item is created before any child exists
        (and so before any can end), and never over one that exists.
        """
        now = self.now()
        existing: set[str] = set()
        if not first_run:
            keys = [codec.key(c.job_id) for c in children]
            found = batches.get_all(self._table.ddb, self._table.name, keys, projection=schema.JOBS_PK)
            existing = {item[schema.JOBS_PK]["S"] for item in found}
        fresh = [c for c in children if c.job_id not in existing]
        items = [self._table.items.new_item(c, now) for c in fresh]
        if fresh and not existing and fresh[0].parent_id:
            # No child exists, so none has ended: the counters item is written at zero with them (a
            # parent whose children counted on its own item always has some, and gets none).
            items.insert(0, self._counters_item(fresh[0].parent_id, fresh[0].owner))
        batches.put_all(self._table.ddb, self._table.name, items)
        return [c.job_id for c in fresh]

    def _counters_item(self, parent_id: str, owner: str) -> dict[str, Any]:
        values = {schema.JOBS_PK: codec.counters_id(parent_id), OWNER: owner, CHILDREN_FINISHED: 0}
        return marshal({**values, **self._table.counters_ttl()})

    # ---- One attempt -----------------------------------------------------------------------------
    # Writes made on behalf of a running attempt are conditioned on that attempt's number.

    def claim_attempt(self, job_id: str, lease_seconds: int) -> Claim:
        """Take the job for one attempt: pending, or processing with an expired lease (a crashed worker);
        the job as claimed and the state it was taken from."""
        now = self.now()
        state = self._table.items.state(job_id, "", JobStatus.PROCESSING, now + lease_seconds, now)
        update = Update(
            assign={**state.assign, ATTEMPT_STARTED_AT: iso_time(now)},
            add={ATTEMPTS: 1, ATTEMPT_TOTAL: 1},
            remove=(*state.remove, RUN_AT),
            condition=(
                f"attribute_exists({schema.JOBS_PK}) AND ((#{STATUS} = :pending AND "
                f"(attribute_not_exists(#{RUN_AT}) OR #{RUN_AT} <= :soon)) OR "
                f"(#{STATUS} = :processing AND {schema.STATUS_INDEX_SK} < :now))"
            ),
            values={
                ":pending": "pending",
                ":processing": "processing",
                ":now": millis(now),
                ":soon": millis(now + config.RUN_AT_TOLERANCE_SECONDS),
            },
        )
        try:
            # The item before the write says where the job came from; the update says where it is now.
            before = unmarshal(self._table.update(job_id, update, returns="ALL_OLD"))
        except ConditionFailedError as failed:
            raise NotClaimableError(job_id, self._table.seen(job_id, failed)) from None
        after = update.applied_to(before)
        previous = JobStatus(before[STATUS])
        if previous is JobStatus.PROCESSING:
            after.update(self._record_expired(codec.job_from_values(before), int(after[ATTEMPT_TOTAL])))
        return Claim(codec.job_from_values(after), previous)

    def _record_expired(self, expired: Job, now_total: int) -> dict[str, Any]:
        """A claim took over an attempt whose lease ran out: its history entry says so. Conditioned on
        the new attempt still being current; a lost entry is only a gap in the history."""
        entry = history_entry(
            expired.attempt_total, expired.attempt_started_at, self.now(), AttemptOutcome.EXPIRED
        )
        update = Update(assign=entry, condition=f"{ATTEMPT_TOTAL} = :total", values={":total": now_total})
        try:
            self._table.update(expired.job_id, update, returns="NONE")
        except ConditionFailedError:
            return {}
        return entry

    def _attempt_update(
        self,
        job: Job,
        status: JobStatus,
        due_at: float,
        outcome: AttemptOutcome,
        extra: dict[str, Any],
        error: str | None = None,
    ) -> Update:
        """The write that ends the running attempt: its new state and its history entry, as one update."""
        now = self.now()
        state = self._table.items.state(job.job_id, job.owner, status, due_at, now)
        entry = history_entry(job.attempt_total, job.attempt_started_at, now, outcome, error)
        return Update(
            assign={**state.assign, **entry, **extra},
            remove=(*state.remove, WAITING_FOR),  # it ran: whatever it waited for is over
            condition=_ATTEMPT_CONDITION,
            values={":processing": "processing", ":attempt": job.attempts},
        )

    def succeed(
        self, job: Job, result: Any, puts: Sequence[Put] = (), together: Together | None = None
    ) -> Ended:
        """The running attempt ends the job `done` (with `puts` in the same transaction); a child's
        write may wait in `together` to be made with its siblings' (a worker batch's)."""
        extra = {RESULT: codec.compact_json(result)}
        update = self._attempt_update(job, JobStatus.DONE, self.now(), AttemptOutcome.DONE, extra)
        if together is not None and job.parent_id:
            # Its item once written: what was claimed, its result and history entry, the rest bounded.
            size = len(codec.compact_json(job.payload)) + len(extra[RESULT]) + _ITEM_MARGIN_BYTES
            ending = ChildEnding(
                job.job_id, job.parent_id, job.owner, update, JobStatus.DONE, tuple(puts), size
            )
            return together.end(ending)
        return self._children.end(job.job_id, job.parent_id, update, JobStatus.DONE, puts)

    def end_child(self, ending: ChildEnding) -> Ended:
        """A child's terminal write on its own (StaleAttemptError when its attempt lost the job)."""
        return self._children.end(ending.job_id, ending.parent_id, ending.change, ending.status, ending.puts)

    def end_children(self, endings: Sequence[ChildEnding]) -> list[Ended | None]:
        """Siblings' terminal writes together (`ChildEndings.end_together`): None for each not written."""
        return self._children.end_together(endings)

    def die(self, job: Job, error: str, puts: Sequence[Put] = ()) -> Ended:
        """The running attempt ends the job `dead`: a permanent error, or its last attempt failed."""
        extra = {LAST_ERROR: error[:MAX_ERROR_CHARS]}
        update = self._attempt_update(job, JobStatus.DEAD, self.now(), AttemptOutcome.DEAD, extra, error)
        return self._children.end(job.job_id, job.parent_id, update, JobStatus.DEAD, puts)

    def as_written(self, job: Job, ended: Ended) -> Job:
        """The job a terminal write left: as the write returned it, else read back."""
        return ended.job or self._table.require(job.job_id)

    def retry(
        self,
        job: Job,
        error: str,
        delay_seconds: int,
        puts: Sequence[Put] = (),
        since: float | None = None,
        scheduled: bool = False,
    ) -> None:
        """Back to pending, due after `delay_seconds` (its message comes back then); `scheduled`, with
        that start time, when the wait is longer than a message can be delayed (the sweep hands it to
        SQS when it is due). `since`: when its retries began (its policy's window counts from it)."""
        due = self.now() + delay_seconds
        extra: dict[str, Any] = {LAST_ERROR: error[:MAX_ERROR_CHARS]}
        if since is not None:
            extra[RETRYING_SINCE] = millis(since)
        status = JobStatus.PENDING
        if scheduled:
            status, extra[RUN_AT] = JobStatus.SCHEDULED, millis(due)
        update = self._attempt_update(job, status, due, AttemptOutcome.RETRY, extra, error)
        self._children.write_job(job.job_id, update, puts)

    def continue_later(self, job: Job, progress: Any) -> None:
        """The attempt used its time budget and saved `progress`: back to `pending`, due now, and the
        attempt does not count against `maxAttempts` (a long job is not a failing one)."""
        error = "continues in a new attempt: the time budget of one invocation was used"
        extra = {RESULT: codec.compact_json(progress)}
        update = self._attempt_update(job, JobStatus.PENDING, self.now(), AttemptOutcome.RETRY, extra, error)
        self._table.write_or_stale(job.job_id, dataclasses.replace(update, add={ATTEMPTS: -1}))

    def defer(self, job: Job, waiting: WaitingFor, seconds: int) -> None:
        """The attempt may not run yet (a limit, or the job's RetryLater): back to `pending`, due when
        `waiting` ends, saying why; no attempt spent and no history entry (it did not run), and the wait
        added to the job's total."""
        state = self._table.items.state(job.job_id, job.owner, JobStatus.PENDING, waiting.until, self.now())
        update = Update(
            assign={**state.assign, WAITING_FOR: codec.waiting_value(waiting)},
            add={ATTEMPTS: -1, WAITED_SECONDS: seconds},
            remove=state.remove,
            condition=_ATTEMPT_CONDITION,
            values={":processing": "processing", ":attempt": job.attempts},
        )
        self._table.write_or_stale(job.job_id, update)

    def wait(
        self, job_id: str, owner: str, waiting: WaitingFor | None, seconds: int, most_seconds: int
    ) -> None:
        """A pending job a limit refused before any attempt was claimed: due when `waiting` ends, saying
        why, and the wait added to its total. Its attempts are never touched, so no crash or failed write
        around a refused start can spend one. `waiting` None: a link of a long wait's chain, which only
        checks that the job still waits. NotClaimableError (with the job seen) when it is not pending or
        not yet due to start; WaitedTooLongError when its waits would pass `most_seconds` in all."""
        now = self.now()
        condition = (
            f"#{STATUS} = :pending AND (attribute_not_exists(#{RUN_AT}) OR #{RUN_AT} <= :soon)"
            f" AND (attribute_not_exists(#{WAITED_SECONDS}) OR #{WAITED_SECONDS} <= :most)"
        )
        values = {
            ":pending": JobStatus.PENDING.value,
            ":soon": millis(now + config.RUN_AT_TOLERANCE_SECONDS),
            ":most": most_seconds - seconds,
        }
        if waiting is None:
            update = Update(assign={UPDATED_AT: iso_time(now)}, condition=condition, values=values)
        else:
            state = self._table.items.state(job_id, owner, JobStatus.PENDING, waiting.until, now)
            update = Update(
                assign={**state.assign, WAITING_FOR: codec.waiting_value(waiting)},
                add={WAITED_SECONDS: seconds},
                remove=state.remove,
                condition=condition,
                values=values,
            )
        try:
            self._table.update(job_id, update, returns="NONE")
        except ConditionFailedError as failed:
            seen = self._table.seen(job_id, failed)
            if (
                seen is not None
                and seen.status is JobStatus.PENDING
                and seen.waited_seconds + seconds > most_seconds
            ):
                raise WaitedTooLongError(job_id, seen) from None
            raise NotClaimableError(job_id, seen) from None

    def save_progress(self, job_id: str, attempt: int, progress: Any) -> None:
        """A running attempt records how far it got in its `result` (StaleAttemptError if it lost the job)."""
        update = Update(
            assign={RESULT: codec.compact_json(progress)},
            condition=_ATTEMPT_CONDITION,
            values={":processing": "processing", ":attempt": attempt},
        )
        try:
            self._table.update(job_id, update, returns="NONE")
        except ConditionFailedError:
            raise StaleAttemptError(job_id) from None

    # ---- A fan-out waiting for its children ------------------------------------------------------

    def await_children(self, job: Job, total: int, result: Any, check_after_seconds: int) -> Job | None:
        """The parent hands its work to `total` children and waits; checked again after the delay.

        A small parent (payload up to TRANSACTIONAL_WAIT_MAX_BYTES) moves to `waiting` and arms its
        counters item in one transaction, conditioned on a child still running: then the last child
        finishes the parent, and None is returned (nothing to check). Otherwise (a large parent, whose
        transactional write would cost twice its size in write units; or that condition failed: its
        children all finished first, or they count on the parent's own item) the two are written apart
        and the parent is returned as written, with its counts as they stood when its counters were
        armed: the caller finishes it if they are complete."""
        due = self.now() + check_after_seconds
        extra = {CHILDREN_TOTAL: total, RESULT: codec.compact_json(result)}
        update = self._attempt_update(job, JobStatus.WAITING, due, AttemptOutcome.DONE, extra)
        arm = self._arming(job, total)
        if len(codec.compact_json(job.payload)) <= TRANSACTIONAL_WAIT_MAX_BYTES:
            running = dataclasses.replace(
                arm, condition=f"{arm.condition} AND #{CHILDREN_FINISHED} < :total", values={":total": total}
            )
            try:
                own = transactions.update("job", self._table.name, codec.key(job.job_id), update)
                transactions.write(self._table.ddb, [own, self._on_counters(job.job_id, running)])
                return None
            except TransactionCancelledError as cancelled:
                if "job" in cancelled.failed:
                    raise StaleAttemptError(job.job_id) from None
                if "counters" not in cancelled.failed:
                    raise StoreError(
                        f"the parent {job.job_id} could not start waiting: {cancelled}"
                    ) from None
        try:
            written = self._table.update(job.job_id, update)
        except ConditionFailedError:
            raise StaleAttemptError(job.job_id) from None
        try:
            counters = self._table.update(codec.counters_id(job.job_id), arm)
        except ConditionFailedError:
            # A pre-counters parent (ChildCounts.apart): its children count on the parent.
            legacy = Update(
                assign={CHILDREN_BEFORE_LAST: total - 1},
                add={CHILDREN_FINISHED: 0},
                condition=_WAITING_CONDITION,
                values={":waiting": "waiting"},
            )
            return self._table.update_or_stale(job.job_id, legacy)
        return codec.to_job(written, counters)

    def _arming(self, parent: Job, total: int) -> Update:
        """The counters item's arming, only once the parent waits: a child that ends before is never
        the one to finish it."""
        return Update(
            assign={
                CHILDREN_TOTAL: total,
                CHILDREN_BEFORE_LAST: total - 1,
                # What the log line of the child that finishes the parent names.
                codec.PARENT_TYPE: parent.job_type,
                codec.PARENT_ATTEMPTS: parent.attempts,
                **self._table.counters_ttl(),
            },
            add={CHILDREN_FINISHED: 0},  # ADD 0: created at 0 when no child has finished yet
            condition=f"attribute_exists({schema.JOBS_PK})",
        )

    def finish_parent(self, parent: Job) -> Job | None:
        """A waiting parent becomes `done`; None when it was no longer waiting (another caller won)."""
        now = self.now()
        state = self._table.items.state(parent.job_id, parent.owner, JobStatus.DONE, now, now)
        update = Update(
            assign=state.assign,
            remove=state.remove,
            condition=_WAITING_CONDITION,
            values={":waiting": "waiting"},
        )
        try:
            written = self._table.update(parent.job_id, update)
        except ConditionFailedError:
            return None
        return dataclasses.replace(codec.to_job(written), children=parent.children)

    def postpone_check(self, parent_id: str, check_after_seconds: int) -> None:
        """Move a waiting parent's next check out, so recovery does not look at it again at once."""
        update = Update(
            assign={schema.STATUS_INDEX_SK: millis(self.now() + check_after_seconds)},
            condition=_WAITING_CONDITION,
            values={":waiting": "waiting"},
        )
        with contextlib.suppress(ConditionFailedError):
            self._table.update(parent_id, update, returns="NONE")

    # ---- A caller's retry and cancel -------------------------------------------------------------
    # Each is one conditional write on the job (a transaction with its fan-out's counters item when it
    # is a child), conditioned on the state the caller saw, so two concurrent calls never both take
    # effect: the second raises JobMovedError.

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
        state = self._table.items.state(job.job_id, job.owner, JobStatus.PENDING, now, now)
        update = Update(
            assign={**state.assign, ATTEMPTS: 0, REOPENED_AT: millis(now)},
            remove=(*state.remove, ALERTED_AT, ALERT_CLAIMED_UNTIL),
            condition=f"#{STATUS} = :dead AND {codec.ATTEMPT_TOTAL} = :total",
            values={":dead": JobStatus.DEAD.value, ":total": job.attempt_total},
        )
        if parent is None:
            return self._act(job, update, [])
        counts = codec.counter_changes(JobStatus.DEAD, -1)
        if parent.children is not None and not parent.children.apart:
            parent_update = self._parent_update(parent, counts, recheck_seconds)
            return self._act(job, update, [self._on_parent(parent.job_id, parent_update)])
        if parent.status not in (JobStatus.DONE, JobStatus.DEAD):
            unfinished = Update(assign=self._table.counters_ttl(), add=counts, condition=_PARENT_UNFINISHED)
            return self._act(job, update, [self._on_counters(parent.job_id, unfinished)])
        counters = Update(assign=self._table.counters_ttl(), add=counts, condition=_COUNTERS_EXIST)
        back = self._parent_update(parent, {}, recheck_seconds)
        return self._act(
            job, update, [self._on_counters(parent.job_id, counters), self._on_parent(parent.job_id, back)]
        )

    def cancel(self, job: Job, parent: Job | None) -> Job:
        """A pending job (or a waiting fan-out) to `cancelled`; its later messages are dropped. A
        fan-out's child moves its parent's counters in the same transaction."""
        now = self.now()
        state = self._table.items.state(job.job_id, job.owner, JobStatus.CANCELLED, now, now)
        update = Update(
            assign=state.assign,
            remove=state.remove,
            condition=f"#{STATUS} = :seen",
            values={":seen": job.status.value},
        )
        if parent is None:
            return self._act(job, update, [])
        counts = codec.counter_changes(JobStatus.CANCELLED, 1)
        if parent.children is not None and not parent.children.apart:
            on_parent = Update(assign={}, add=counts, condition=_COUNTERS_EXIST)
            return self._act(job, update, [self._on_parent(parent.job_id, on_parent)])
        counters = Update(assign=self._table.counters_ttl(), add=counts, condition=_COUNTERS_EXIST)
        return self._act(job, update, [self._on_counters(parent.job_id, counters)])

    def _parent_update(self, parent: Job, add: dict[str, int], recheck_seconds: int) -> Update:
        """A finished parent back to `waiting` (with `add`): conditioned on the state seen."""
        assign: dict[str, Any] = {}
        remove: tuple[str, ...] = ()
        if parent.status in (JobStatus.DONE, JobStatus.DEAD):
            now = self.now()
            state = self._table.items.state(
                parent.job_id, parent.owner, JobStatus.WAITING, now + recheck_seconds, now
            )
            # Its fan-out alert was for the deaths before this retry: new deaths raise a new one.
            assign, remove = state.assign, (*state.remove, ALERTED_AT, ALERT_CLAIMED_UNTIL)
        return Update(
            assign=assign,
            add=add,
            remove=remove,
            condition=f"#{STATUS} = :seen",
            values={":seen": parent.status.value},
        )

    def _on_parent(self, parent_id: str, change: Update) -> transactions.Operation:
        return transactions.update("parent", self._table.name, codec.key(parent_id), change)

    def _on_counters(self, parent_id: str, change: Update) -> transactions.Operation:
        return transactions.update("counters", self._table.name, codec.counters_key(parent_id), change)

    def _act(self, job: Job, update: Update, others: list[transactions.Operation]) -> Job:
        """`update` on the job, with `others` in one transaction when there are any."""
        try:
            if not others:
                return self._table.as_job(self._table.update(job.job_id, update))
            own = transactions.update("job", self._table.name, codec.key(job.job_id), update)
            transactions.write(self._table.ddb, [own, *others])
        except ConditionFailedError:
            raise JobMovedError(job.job_id) from None
        except TransactionCancelledError as cancelled:
            if "job" in cancelled.failed or not cancelled.failed:
                raise JobMovedError(job.job_id) from None
            raise ParentMovedError(job.job_id) from None
        return self._table.require(job.job_id)

    # ---- Start times -----------------------------------------------------------------------------
    # A `scheduled` job handed to SQS once it is due within the horizon, and a caller moving a job's
    # start time: both one conditional write on the status and start time seen, so a hand-over and a
    # reschedule that race never both take effect.

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
        state = self._table.items.state(job.job_id, job.owner, status, run_at, self.now())
        update = Update(
            assign={**state.assign, RUN_AT: millis(run_at)},
            remove=state.remove,
            condition=f"#{STATUS} = :seen AND #{RUN_AT} = :run_at",
            values={":seen": job.status.value, ":run_at": job.run_at},
        )
        try:
            return self._table.as_job(self._table.update(job.job_id, update))
        except ConditionFailedError:
            raise JobMovedError(job.job_id) from None

    # ---- Dead letters and alerts -----------------------------------------------------------------

    def mark_dead(self, job_id: str, error: str, sent_at: int | None = None) -> Job | None:
        """Dead-letter path: end a job that is not finished yet (never over `done`).

        Returns the dead job (whether this call or an earlier one killed it), or None when the job
        does not exist, finished successfully or was cancelled. `sent_at` (epoch ms) is when the
        message that died was sent: a job a caller retried at or after it is returned as it is, not
        killed (the letter is about the life before the retry). A retry cannot slip in between the
        read and the write: it needs `dead`, and the write is conditioned on the state read.
        """
        while True:
            job = self.get(job_id)
            if job is None or job.status in (JobStatus.DONE, JobStatus.CANCELLED):
                return None  # a cancelled job stays cancelled: it never ran, so it did not die
            if sent_at is not None and job.reopened_at >= sent_at:
                return job
            if job.status is JobStatus.DEAD:
                return job
            now = self.now()
            state = self._table.items.state(job_id, job.owner, JobStatus.DEAD, now, now)
            assign = {**state.assign, LAST_ERROR: error[:MAX_ERROR_CHARS]}
            if job.status is JobStatus.PROCESSING:
                started = job.attempt_started_at
                assign.update(history_entry(job.attempt_total, started, now, AttemptOutcome.DEAD, error))
            update = Update(
                assign=assign,
                remove=state.remove,
                condition=f"#{STATUS} = :seen AND {ATTEMPTS} = :attempts",
                values={":seen": job.status.value, ":attempts": job.attempts},
            )
            try:
                ended = self._children.end(job_id, job.parent_id, update, JobStatus.DEAD, returning=True)
                return self.as_written(job, ended)
            except StaleAttemptError:
                continue  # it moved under us (claimed again, finished): decide again from its new state

    def claim_alert(self, job: Job, lease_seconds: int) -> AlertClaim:
        """Take the right to raise the alert of `job` as it was read (a dead job, or a finished
        fan-out), for `lease_seconds`. A claim whose holder crashed before publishing expires, and the
        next consumer takes it over. MOVED when the job left that state (a caller retried it, or it
        ran again) since it was read: the alert would be about a job that is no longer so."""
        now = self.now()
        update = Update(
            assign={ALERT_CLAIMED_UNTIL: millis(now + lease_seconds)},
            condition=(
                f"#{STATUS} = :seen AND {ATTEMPT_TOTAL} = :total AND attribute_not_exists(#{ALERTED_AT}) "
                f"AND (attribute_not_exists(#{ALERT_CLAIMED_UNTIL}) OR #{ALERT_CLAIMED_UNTIL} < :now)"
            ),
            values={":now": millis(now), ":seen": job.status.value, ":total": job.attempt_total},
        )
        try:
            self._table.update(job.job_id, update, returns="NONE")
        except ConditionFailedError as failed:
            return _refused_claim(job, failed.item)
        return AlertClaim.CLAIMED

    def release_alert(self, job_id: str) -> None:
        """Give up a claim whose alert could not be published, so the next letter need not wait."""
        update = Update(
            assign={}, remove=[ALERT_CLAIMED_UNTIL], condition=f"attribute_not_exists(#{ALERTED_AT})"
        )
        with contextlib.suppress(ConditionFailedError):
            self._table.update(job_id, update, returns="NONE")

    def mark_alerted(self, job_id: str) -> None:
        update = Update(
            assign={ALERTED_AT: iso_time(self.now())},
            remove=[ALERT_CLAIMED_UNTIL],
            condition=f"attribute_exists({schema.JOBS_PK})",  # never create a stub for a vanished job
        )
        with contextlib.suppress(ConditionFailedError):
            self._table.update(job_id, update, returns="NONE")

    # ---- Recovery --------------------------------------------------------------------------------

    def requeue(self, job: Job, next_check_seconds: int, reason: str | None = None) -> bool:
        """Recovery: claim the right to re-send one overdue job's message. False if another sweep did.

        A pending job keeps its state; an expired `processing` job goes back to `pending` with `reason`.
        The due time moves out so the next sweep does not pick the job up again at once.
        """
        now = self.now()
        remove: tuple[str, ...] = ()
        if job.status is JobStatus.PROCESSING:
            error = (reason or "lease expired")[:MAX_ERROR_CHARS]
            state = self._table.items.state(
                job.job_id, job.owner, JobStatus.PENDING, now + next_check_seconds, now
            )
            started = job.attempt_started_at
            entry = history_entry(job.attempt_total, started, now, AttemptOutcome.EXPIRED, error)
            assign = {**state.assign, **entry, LAST_ERROR: error}
            remove = state.remove
        else:
            assign = {schema.STATUS_INDEX_SK: millis(now + next_check_seconds), UPDATED_AT: iso_time(now)}
        update = Update(
            assign=assign,
            remove=remove,
            condition=f"#{STATUS} = :seen AND {schema.STATUS_INDEX_SK} = :due AND {ATTEMPTS} = :attempts",
            values={":seen": job.status.value, ":due": job.due_at, ":attempts": job.attempts},
        )
        try:
            self._table.update(job.job_id, update, returns="NONE")
        except ConditionFailedError:
            return False
        return True


def _refused_claim(job: Job, seen: dict[str, Any] | None) -> AlertClaim:
    if seen is None:
        return AlertClaim.SENT  # no job any more: nothing to say
    now = codec.job_from_values(unmarshal(seen))
    if now.status is not job.status or now.attempt_total != job.attempt_total:
        return AlertClaim.MOVED
    return AlertClaim.SENT if now.alerted else AlertClaim.HELD
