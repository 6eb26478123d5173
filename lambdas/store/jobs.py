"""The job transitions: every state change of a job record is one conditional write.

Writes made on behalf of a running attempt are conditioned on that attempt's number, so a worker whose
lease expired cannot overwrite what a newer attempt did. A child job's terminal write and its parent's
counter change commit in one transaction, so the counts on a fan-out are exact even when a worker dies
between the two. The item shape lives in `codec`, the expression syntax in `expressions`.
"""

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from lambdas.models.job import AlertClaim, Job, JobStatus, NewJob
from lambdas.models.timestamps import iso_time
from lambdas.store import batches, clients, codec, schema
from lambdas.store.codec import ALERT_CLAIMED_UNTIL, ALERTED_AT, MAX_ERROR_CHARS, TERMINAL_COUNTER, millis
from lambdas.store.errors import (
    ConditionFailedError,
    JobExistsError,
    NotClaimableError,
    StaleAttemptError,
    TransactionCancelledError,
    domain_errors,
)
from lambdas.store.expressions import Update

__all__ = ["Claim", "JobStore", "iso_time"]

_ATTEMPT_CONDITION = "#status = :processing AND attempts = :attempt"
_WAITING_CONDITION = "#status = :waiting"


@dataclass(frozen=True)
class Claim:
    """A claimed job and the state it was claimed from (`processing` when a lease had expired)."""

    job: Job
    previous: JobStatus


class JobStore:
    def __init__(
        self,
        table_name: str,
        shards: int,
        finished_ttl_days: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._table = table_name
        self._shards = shards
        self._items = codec.JobItems(shards, finished_ttl_days * 86_400)
        self._clock = clock

    @property
    def _ddb(self) -> Any:
        return clients.client("dynamodb")

    def now(self) -> float:
        return self._clock()

    # --- reads -----------------------------------------------------------------------------------

    def get(self, job_id: str) -> Job | None:
        response = self._ddb.get_item(TableName=self._table, Key=codec.key(job_id), ConsistentRead=True)
        item = response.get("Item")
        return codec.to_job(item) if item else None

    def _seen(self, job_id: str, failed: ConditionFailedError) -> Job | None:
        """The item a failed condition saw, from the error when DynamoDB returned it."""
        return codec.to_job(failed.item) if failed.item else self.get(job_id)

    def by_status(self, status: JobStatus, due_before: float | None = None) -> Iterator[Job]:
        """Jobs in `status`, across every shard, optionally only those whose `dueAt` has passed."""
        for shard in range(self._shards):
            condition = f"{schema.STATUS_INDEX_PK} = :k"
            values: dict[str, Any] = {":k": {"S": f"{status.value}#{shard}"}}
            if due_before is not None:
                condition += f" AND {schema.STATUS_INDEX_SK} < :due"
                values[":due"] = {"N": str(millis(due_before))}
            pages = self._ddb.get_paginator("query").paginate(
                TableName=self._table,
                IndexName=schema.STATUS_INDEX,
                KeyConditionExpression=condition,
                ExpressionAttributeValues=values,
                PaginationConfig={"PageSize": 100},
            )
            for page in pages:
                for item in page["Items"]:
                    yield codec.to_job(item)

    # --- writes ----------------------------------------------------------------------------------

    def _update(self, job_id: str, update: Update, returns: str = "ALL_NEW") -> dict[str, Any]:
        """Apply `update`; ConditionFailedError (with the item it saw) when its condition fails."""
        with domain_errors():
            response = self._ddb.update_item(
                TableName=self._table,
                Key=codec.key(job_id),
                **update.params(),
                ReturnValues=returns,
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        return response.get("Attributes", {})

    def _update_or_stale(self, job_id: str, update: Update) -> Job:
        try:
            return codec.to_job(self._update(job_id, update))
        except ConditionFailedError:
            raise StaleAttemptError(job_id) from None

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

    def claim(self, job_id: str, lease_seconds: int) -> Job:
        """Take the job for one attempt: pending, or processing with an expired lease (a crashed worker)."""
        return self.claim_attempt(job_id, lease_seconds).job

    def claim_attempt(self, job_id: str, lease_seconds: int) -> Claim:
        """`claim`, also saying which state the job was taken from."""
        now = self.now()
        update = Update(
            assign=self._items.state(job_id, JobStatus.PROCESSING, now + lease_seconds, now),
            add={"attempts": 1},
            condition=(
                f"attribute_exists({schema.JOBS_PK}) AND (#status = :pending OR "
                f"(#status = :processing AND {schema.STATUS_INDEX_SK} < :now))"
            ),
            values={":pending": "pending", ":processing": "processing", ":now": millis(now)},
        )
        try:
            # The item before the write says where the job came from; the update says where it is now.
            before = codec.unmarshal(self._update(job_id, update, returns="ALL_OLD"))
        except ConditionFailedError as failed:
            raise NotClaimableError(job_id, self._seen(job_id, failed)) from None
        return Claim(codec.job_from_values(update.applied_to(before)), JobStatus(before["status"]))

    def _attempt_update(self, job: Job, assign: dict[str, Any]) -> Update:
        return Update(
            assign=assign,
            condition=_ATTEMPT_CONDITION,
            values={":processing": "processing", ":attempt": job.attempts},
        )

    def _finish(self, job_id: str, parent_id: str | None, update: Update, status: JobStatus) -> Job:
        """Write a terminal state, moving the parent's counter in the same transaction if there is one."""
        if not parent_id:
            return self._update_or_stale(job_id, update)
        parent_update = Update(
            assign={},
            add={TERMINAL_COUNTER[status]: 1},
            condition=f"attribute_exists({schema.JOBS_PK})",
        )
        operations = {"job": (job_id, update), "parent": (parent_id, parent_update)}
        try:
            with domain_errors(item_names=list(operations)):
                self._ddb.transact_write_items(
                    TransactItems=[
                        {"Update": {"TableName": self._table, "Key": codec.key(key), **op.params()}}
                        for key, op in operations.values()
                    ]
                )
        except TransactionCancelledError as cancelled:
            if cancelled.failed != {"parent"}:
                raise StaleAttemptError(job_id) from None
            # The parent is gone (expired): the child's own transition still happens.
            return self._update_or_stale(job_id, update)
        return self._require(job_id)

    def _require(self, job_id: str) -> Job:
        job = self.get(job_id)
        if job is None:
            raise LookupError(job_id)
        return job

    def _finish_attempt(self, job: Job, status: JobStatus, extra: dict[str, Any]) -> Job:
        now = self.now()
        update = self._attempt_update(job, {**self._items.state(job.job_id, status, now, now), **extra})
        return self._finish(job.job_id, job.parent_id, update, status)

    def complete(self, job: Job, result: Any) -> Job:
        return self._finish_attempt(job, JobStatus.DONE, {"result": codec.compact_json(result)})

    def fail(self, job: Job, error: str) -> Job:
        """The running attempt ends the job: a permanent error, or its last attempt failed."""
        return self._finish_attempt(job, JobStatus.DEAD, {"lastError": error[:MAX_ERROR_CHARS]})

    def retry(self, job: Job, error: str, delay_seconds: int) -> Job:
        """Back to pending; its message becomes visible again after `delay_seconds`."""
        now = self.now()
        state = self._items.state(job.job_id, JobStatus.PENDING, now + delay_seconds, now)
        update = self._attempt_update(job, {**state, "lastError": error[:MAX_ERROR_CHARS]})
        return self._update_or_stale(job.job_id, update)

    def await_children(self, job: Job, total: int, result: Any, check_after_seconds: int) -> Job:
        """The parent hands its work to `total` children and waits; checked again after the delay."""
        now = self.now()
        state = self._items.state(job.job_id, JobStatus.WAITING, now + check_after_seconds, now)
        update = self._attempt_update(
            job, {**state, "childrenTotal": total, "result": codec.compact_json(result)}
        )
        return self._update_or_stale(job.job_id, update)

    def finish_parent(self, parent_id: str) -> Job | None:
        """A waiting parent becomes `done`; None when it was no longer waiting (another caller won)."""
        now = self.now()
        update = Update(
            assign=self._items.state(parent_id, JobStatus.DONE, now, now),
            condition=_WAITING_CONDITION,
            values={":waiting": "waiting"},
        )
        try:
            return codec.to_job(self._update(parent_id, update))
        except ConditionFailedError:
            return None

    def postpone_check(self, parent_id: str, check_after_seconds: int) -> None:
        """Move a waiting parent's next check out, so recovery does not look at it again at once."""
        update = Update(
            assign={schema.STATUS_INDEX_SK: millis(self.now() + check_after_seconds)},
            condition=_WAITING_CONDITION,
            values={":waiting": "waiting"},
        )
        with contextlib.suppress(ConditionFailedError):
            self._update(parent_id, update, returns="NONE")

    def mark_dead(self, job_id: str, error: str) -> Job | None:
        """Dead-letter path: end a job that is not finished yet (never over `done`).

        Returns the dead job (whether this call or an earlier one killed it), or None when the job
        does not exist or finished successfully.
        """
        while True:
            job = self.get(job_id)
            if job is None or job.status is JobStatus.DONE:
                return None
            if job.status is JobStatus.DEAD:
                return job
            now = self.now()
            update = Update(
                assign={
                    **self._items.state(job_id, JobStatus.DEAD, now, now),
                    "lastError": error[:MAX_ERROR_CHARS],
                },
                condition="#status = :seen AND attempts = :attempts",
                values={":seen": job.status.value, ":attempts": job.attempts},
            )
            try:
                return self._finish(job_id, job.parent_id, update, JobStatus.DEAD)
            except StaleAttemptError:
                continue  # it moved under us (claimed again, finished): decide again from its new state

    def claim_alert(self, job_id: str, lease_seconds: int) -> AlertClaim:
        """Take the right to raise a dead job's alert, for `lease_seconds`. A claim whose holder
        crashed before publishing expires, and the next consumer takes it over."""
        now = self.now()
        update = Update(
            assign={ALERT_CLAIMED_UNTIL: millis(now + lease_seconds)},
            condition=(
                f"attribute_exists({schema.JOBS_PK}) AND attribute_not_exists(#{ALERTED_AT}) AND "
                f"(attribute_not_exists(#{ALERT_CLAIMED_UNTIL}) OR #{ALERT_CLAIMED_UNTIL} < :now)"
            ),
            values={":now": millis(now)},
        )
        try:
            self._update(job_id, update, returns="NONE")
        except ConditionFailedError as failed:
            seen = failed.item
            return AlertClaim.SENT if seen is None or ALERTED_AT in seen else AlertClaim.HELD
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
        if job.status is JobStatus.PROCESSING:
            assign = {
                **self._items.state(job.job_id, JobStatus.PENDING, now + next_check_seconds, now),
                "lastError": (reason or "lease expired")[:MAX_ERROR_CHARS],
            }
        else:
            assign = {schema.STATUS_INDEX_SK: millis(now + next_check_seconds), "updatedAt": iso_time(now)}
        update = Update(
            assign=assign,
            condition=f"#status = :seen AND {schema.STATUS_INDEX_SK} = :due AND attempts = :attempts",
            values={":seen": job.status.value, ":due": job.due_at, ":attempts": job.attempts},
        )
        try:
            self._update(job.job_id, update, returns="NONE")
        except ConditionFailedError:
            return False
        return True

    def create_children(self, children: Sequence[NewJob]) -> list[str]:
        """Write the children that do not exist yet; return the ids written by this call.

        BatchWriteItem cannot be conditional, so existing ids are read first: a re-run of the parent
        (a retry, a duplicate message) never resets a child that has already made progress. Two runs
        of one parent cannot overlap, because each run holds the parent's claim.
        """
        now = self.now()
        keys = [codec.key(c.job_id) for c in children]
        found = batches.get_all(self._ddb, self._table, keys, projection=schema.JOBS_PK)
        existing = {item[schema.JOBS_PK]["S"] for item in found}
        fresh = [c for c in children if c.job_id not in existing]
        batches.put_all(self._ddb, self._table, [self._items.new_item(c, now) for c in fresh])
        return [c.job_id for c in fresh]
