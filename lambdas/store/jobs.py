"""The job transitions: every state change of a job record is one conditional write.

Writes made on behalf of a running attempt are conditioned on that attempt's number, so a worker whose
lease expired cannot overwrite what a newer attempt did. A child job's terminal write and its fan-out's
counters item's change commit in one transaction, so the counts on a fan-out are exact even when a worker dies
between the two. The item shape lives in `codec`, the expression syntax in `expressions`.
"""

import contextlib
import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from lambdas import config
from lambdas.models.job import AlertClaim, AttemptOutcome, Job, JobStatus, NewJob
from lambdas.models.timestamps import iso_time
from lambdas.models.waiting import WaitingFor
from lambdas.store import batches, codec, schema, transactions
from lambdas.store.actions import JobActions
from lambdas.store.children import ChildWrites, Ended
from lambdas.store.codec import (
    ALERT_CLAIMED_UNTIL,
    ALERTED_AT,
    ATTEMPT_STARTED_AT,
    ATTEMPT_TOTAL,
    CHILDREN_BEFORE_LAST,
    CHILDREN_FINISHED,
    CHILDREN_TOTAL,
    MAX_ERROR_CHARS,
    RUN_AT,
    WAITED_SECONDS,
    WAITING_FOR,
    history_entry,
    millis,
)
from lambdas.store.errors import (
    ConditionFailedError,
    JobExistsError,
    NotClaimableError,
    StaleAttemptError,
    StoreError,
    TransactionCancelledError,
    domain_errors,
)
from lambdas.store.expressions import Update, marshal
from lambdas.store.listing import JobListing
from lambdas.store.timing import JobTiming
from lambdas.store.transactions import Put

__all__ = ["Claim", "Ended", "JobStore", "Put", "iso_time"]

_ATTEMPT_CONDITION = "#status = :processing AND attempts = :attempt"
_WAITING_CONDITION = "#status = :waiting"
# A parent whose payload is at most this size starts waiting in one transaction with its counters'
# arming (2 calls become 1, for 2 x its ~1-2 KB in write units instead of 1 x); a larger one in two writes.
TRANSACTIONAL_WAIT_MAX_BYTES = 1024


@dataclass(frozen=True)
class Claim:
    """A claimed job and the state it was claimed from (`processing` when a lease had expired)."""

    job: Job
    previous: JobStatus


class JobStore(JobListing, JobActions, ChildWrites, JobTiming):
    def by_status(self, status: JobStatus, due_before: float | None = None) -> Iterator[Job]:
        """Jobs in a live `status`, across every shard, optionally only those whose `dueAt` has passed.

        The index holds keys only (an update that moves no key costs it nothing); each page of keys is
        read back in one BatchGetItem."""
        for shard in range(self._shards):
            condition = f"{schema.STATUS_INDEX_PK} = :k"
            values: dict[str, Any] = {":k": {"S": codec.status_key(status, shard)}}
            if due_before is not None:
                condition += f" AND {schema.STATUS_INDEX_SK} < :due"
                values[":due"] = {"N": str(millis(due_before))}
            pages = self._ddb.get_paginator("query").paginate(
                TableName=self._table,
                IndexName=schema.STATUS_INDEX.name,
                KeyConditionExpression=condition,
                ExpressionAttributeValues=values,
                PaginationConfig={"PageSize": 100},
            )
            for page in pages:
                yield from self.get_many([item[schema.JOBS_PK]["S"] for item in page["Items"]])

    def put_new(self, new: NewJob) -> Job:
        """Create a pending job. JobExistsError carries the existing job when the id is taken;
        ItemTooLargeError says by how much the job exceeds what DynamoDB stores."""
        item = self._items.new_item(new, self.now())
        try:
            with domain_errors():
                self._ddb.put_item(
                    TableName=self._table,
                    Item=item,
                    ConditionExpression=f"attribute_not_exists({schema.JOBS_PK})",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
        except ConditionFailedError as failed:
            existing = self._seen(new.job_id, failed)
            if existing is None:
                raise
            raise JobExistsError(existing) from None
        return codec.to_job(item)

    def claim_attempt(self, job_id: str, lease_seconds: int) -> Claim:
        """Take the job for one attempt: pending, or processing with an expired lease (a crashed worker);
        the job as claimed and the state it was taken from."""
        now = self.now()
        state = self._items.state(job_id, "", JobStatus.PROCESSING, now + lease_seconds, now)
        update = Update(
            assign={**state.assign, ATTEMPT_STARTED_AT: iso_time(now)},
            add={"attempts": 1, ATTEMPT_TOTAL: 1},
            remove=(*state.remove, RUN_AT),
            condition=(
                f"attribute_exists({schema.JOBS_PK}) AND ((#status = :pending AND "
                f"(attribute_not_exists(#{RUN_AT}) OR #{RUN_AT} <= :soon)) OR "
                f"(#status = :processing AND {schema.STATUS_INDEX_SK} < :now))"
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
            before = codec.unmarshal(self._update(job_id, update, returns="ALL_OLD"))
        except ConditionFailedError as failed:
            raise NotClaimableError(job_id, self._seen(job_id, failed)) from None
        after = update.applied_to(before)
        previous = JobStatus(before["status"])
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
            self._update(expired.job_id, update, returns="NONE")
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
        state = self._items.state(job.job_id, job.owner, status, due_at, now)
        entry = history_entry(job.attempt_total, job.attempt_started_at, now, outcome, error)
        return Update(
            assign={**state.assign, **entry, **extra},
            remove=(*state.remove, WAITING_FOR),  # it ran: whatever it waited for is over
            condition=_ATTEMPT_CONDITION,
            values={":processing": "processing", ":attempt": job.attempts},
        )

    def succeed(self, job: Job, result: Any, puts: Sequence[Put] = ()) -> Ended:
        """The running attempt ends the job `done` (with `puts` in the same transaction)."""
        extra = {"result": codec.compact_json(result)}
        update = self._attempt_update(job, JobStatus.DONE, self.now(), AttemptOutcome.DONE, extra)
        return self._end(job.job_id, job.parent_id, update, JobStatus.DONE, puts)

    def die(self, job: Job, error: str, puts: Sequence[Put] = ()) -> Ended:
        """The running attempt ends the job `dead`: a permanent error, or its last attempt failed."""
        extra = {"lastError": error[:MAX_ERROR_CHARS]}
        update = self._attempt_update(job, JobStatus.DEAD, self.now(), AttemptOutcome.DEAD, extra, error)
        return self._end(job.job_id, job.parent_id, update, JobStatus.DEAD, puts)

    def as_written(self, job: Job, ended: Ended) -> Job:
        """The job a terminal write left: as the write returned it, else read back."""
        return ended.job or self._require(job.job_id)

    def retry(self, job: Job, error: str, delay_seconds: int, puts: Sequence[Put] = ()) -> Job | None:
        """Back to pending; its message becomes visible again after `delay_seconds`. The job as written
        (None when `puts` made it a transaction, which returns nothing)."""
        due = self.now() + delay_seconds
        extra = {"lastError": error[:MAX_ERROR_CHARS]}
        update = self._attempt_update(job, JobStatus.PENDING, due, AttemptOutcome.RETRY, extra, error)
        return self._write_job(job.job_id, update, puts)

    def continue_later(self, job: Job, progress: Any) -> Job:
        """The attempt used its time budget and saved `progress`: back to `pending`, due now, and the
        attempt does not count against `maxAttempts` (a long job is not a failing one)."""
        error = "continues in a new attempt: the time budget of one invocation was used"
        extra = {"result": codec.compact_json(progress)}
        update = self._attempt_update(job, JobStatus.PENDING, self.now(), AttemptOutcome.RETRY, extra, error)
        return self._update_or_stale(job.job_id, dataclasses.replace(update, add={"attempts": -1}))

    def defer(self, job: Job, waiting: WaitingFor, seconds: int) -> Job:
        """The attempt may not run yet (a limit, or the job's RetryLater): back to `pending`, due when
        `waiting` ends, saying why; no attempt spent and no history entry (it did not run), and the wait
        added to the job's total."""
        state = self._items.state(job.job_id, job.owner, JobStatus.PENDING, waiting.until, self.now())
        update = Update(
            assign={**state.assign, WAITING_FOR: codec.waiting_value(waiting)},
            add={"attempts": -1, WAITED_SECONDS: seconds},
            remove=state.remove,
            condition=_ATTEMPT_CONDITION,
            values={":processing": "processing", ":attempt": job.attempts},
        )
        return self._update_or_stale(job.job_id, update)

    def save_progress(self, job_id: str, attempt: int, progress: Any) -> None:
        """A running attempt records how far it got in its `result` (StaleAttemptError if it lost the job)."""
        update = Update(
            assign={"result": codec.compact_json(progress)},
            condition=_ATTEMPT_CONDITION,
            values={":processing": "processing", ":attempt": attempt},
        )
        try:
            self._update(job_id, update, returns="NONE")
        except ConditionFailedError:
            raise StaleAttemptError(job_id) from None

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
        extra = {CHILDREN_TOTAL: total, "result": codec.compact_json(result)}
        update = self._attempt_update(job, JobStatus.WAITING, due, AttemptOutcome.DONE, extra)
        arm = self._arming(job, total)
        if len(codec.compact_json(job.payload)) <= TRANSACTIONAL_WAIT_MAX_BYTES:
            running = dataclasses.replace(
                arm, condition=f"{arm.condition} AND #{CHILDREN_FINISHED} < :total", values={":total": total}
            )
            try:
                transactions.write(
                    self._ddb, [self._job_op(job.job_id, update), self._counters_op(job.job_id, running)]
                )
                return None
            except TransactionCancelledError as cancelled:
                if "job" in cancelled.failed:
                    raise StaleAttemptError(job.job_id) from None
                if "counters" not in cancelled.failed:
                    raise StoreError(
                        f"the parent {job.job_id} could not start waiting: {cancelled}"
                    ) from None
        try:
            written = self._update(job.job_id, update)
        except ConditionFailedError:
            raise StaleAttemptError(job.job_id) from None
        try:
            counters = self._update(codec.counters_id(job.job_id), arm)
        except ConditionFailedError:
            # Its children were written before counters items existed: they count on the parent.
            legacy = Update(
                assign={CHILDREN_BEFORE_LAST: total - 1},
                add={CHILDREN_FINISHED: 0},
                condition=_WAITING_CONDITION,
                values={":waiting": "waiting"},
            )
            return self._update_or_stale(job.job_id, legacy)
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
                **self._counters_ttl(),
            },
            add={CHILDREN_FINISHED: 0},  # ADD 0: created at 0 when no child has finished yet
            condition=f"attribute_exists({schema.JOBS_PK})",
        )

    def finish_parent(self, parent: Job) -> Job | None:
        """A waiting parent becomes `done`; None when it was no longer waiting (another caller won)."""
        now = self.now()
        state = self._items.state(parent.job_id, parent.owner, JobStatus.DONE, now, now)
        update = Update(
            assign=state.assign,
            remove=state.remove,
            condition=_WAITING_CONDITION,
            values={":waiting": "waiting"},
        )
        try:
            written = self._update(parent.job_id, update)
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
            self._update(parent_id, update, returns="NONE")

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
            state = self._items.state(job_id, job.owner, JobStatus.DEAD, now, now)
            assign = {**state.assign, "lastError": error[:MAX_ERROR_CHARS]}
            if job.status is JobStatus.PROCESSING:
                started = job.attempt_started_at
                assign.update(history_entry(job.attempt_total, started, now, AttemptOutcome.DEAD, error))
            update = Update(
                assign=assign,
                remove=state.remove,
                condition="#status = :seen AND attempts = :attempts",
                values={":seen": job.status.value, ":attempts": job.attempts},
            )
            try:
                return self.as_written(job, self._end(job_id, job.parent_id, update, JobStatus.DEAD))
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
                f"#status = :seen AND {ATTEMPT_TOTAL} = :total AND attribute_not_exists(#{ALERTED_AT}) "
                f"AND (attribute_not_exists(#{ALERT_CLAIMED_UNTIL}) OR #{ALERT_CLAIMED_UNTIL} < :now)"
            ),
            values={":now": millis(now), ":seen": job.status.value, ":total": job.attempt_total},
        )
        try:
            self._update(job.job_id, update, returns="NONE")
        except ConditionFailedError as failed:
            return _refused_claim(job, failed.item)
        return AlertClaim.CLAIMED

    def release_alert(self, job_id: str) -> None:
        """Give up a claim whose alert could not be published, so the next letter need not wait."""
        update = Update(
            assign={}, remove=[ALERT_CLAIMED_UNTIL], condition=f"attribute_not_exists(#{ALERTED_AT})"
        )
        with contextlib.suppress(ConditionFailedError):
            self._update(job_id, update, returns="NONE")

    def mark_alerted(self, job_id: str) -> None:
        update = Update(
            assign={ALERTED_AT: iso_time(self.now())},
            remove=[ALERT_CLAIMED_UNTIL],
            condition=f"attribute_exists({schema.JOBS_PK})",  # never create a stub for a vanished job
        )
        with contextlib.suppress(ConditionFailedError):
            self._update(job_id, update, returns="NONE")

    def requeue(self, job: Job, next_check_seconds: int, reason: str | None = None) -> bool:
        """Recovery: claim the right to re-send one overdue job's message. False if another sweep did.

        A pending job keeps its state; an expired `processing` job goes back to `pending` with `reason`.
        The due time moves out so the next sweep does not pick the job up again at once.
        """
        now = self.now()
        remove: tuple[str, ...] = ()
        if job.status is JobStatus.PROCESSING:
            error = (reason or "lease expired")[:MAX_ERROR_CHARS]
            state = self._items.state(job.job_id, job.owner, JobStatus.PENDING, now + next_check_seconds, now)
            started = job.attempt_started_at
            entry = history_entry(job.attempt_total, started, now, AttemptOutcome.EXPIRED, error)
            assign = {**state.assign, **entry, "lastError": error}
            remove = state.remove
        else:
            assign = {schema.STATUS_INDEX_SK: millis(now + next_check_seconds), "updatedAt": iso_time(now)}
        update = Update(
            assign=assign,
            remove=remove,
            condition=f"#status = :seen AND {schema.STATUS_INDEX_SK} = :due AND attempts = :attempts",
            values={":seen": job.status.value, ":due": job.due_at, ":attempts": job.attempts},
        )
        try:
            self._update(job.job_id, update, returns="NONE")
        except ConditionFailedError:
            return False
        return True

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
            found = batches.get_all(self._ddb, self._table, keys, projection=schema.JOBS_PK)
            existing = {item[schema.JOBS_PK]["S"] for item in found}
        fresh = [c for c in children if c.job_id not in existing]
        items = [self._items.new_item(c, now) for c in fresh]
        if fresh and not existing and fresh[0].parent_id:
            # No child exists, so none has ended: the counters item is written at zero with them (a
            # parent whose children counted on its own item always has some, and gets none).
            items.insert(0, self._counters_item(fresh[0].parent_id, fresh[0].owner))
        batches.put_all(self._ddb, self._table, items)
        return [c.job_id for c in fresh]

    def _counters_item(self, parent_id: str, owner: str) -> dict[str, Any]:
        values = {schema.JOBS_PK: codec.counters_id(parent_id), "owner": owner, CHILDREN_FINISHED: 0}
        return marshal({**values, **self._counters_ttl()})


def _refused_claim(job: Job, seen: dict[str, Any] | None) -> AlertClaim:
    if seen is None:
        return AlertClaim.SENT  # no job any more: nothing to say
    now = codec.job_from_values(codec.unmarshal(seen))
    if now.status is not job.status or now.attempt_total != job.attempt_total:
        return AlertClaim.MOVED
    return AlertClaim.SENT if now.alerted else AlertClaim.HELD
