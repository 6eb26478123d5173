"""DynamoDB access for job records: item shapes, condition expressions and their failures.

Every state change is one conditional write. Writes made on behalf of a running attempt are conditioned
on that attempt's number, so a worker whose lease expired cannot overwrite what a newer attempt did.
A child job's terminal write and its parent's counter change commit in one transaction, so the counts
on a fan-out are exact even when a worker dies between the two.
"""

import json
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

from lambdas.models.job import ChildCounts, Job, JobStatus, NewJob
from lambdas.store import clients, schema
from lambdas.store.errors import JobExistsError, NotClaimableError, StaleAttemptError

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()
_BATCH_GET_LIMIT = 100
_BATCH_WRITE_LIMIT = 25
_MAX_ERROR_CHARS = 2000
_TERMINAL_COUNTER = {JobStatus.DONE: "childrenDone", JobStatus.DEAD: "childrenDead"}


def iso_time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _millis(epoch_seconds: float) -> int:
    return int(epoch_seconds * 1000)


def _marshal(values: dict[str, Any]) -> dict[str, Any]:
    return {k: _serializer.serialize(v) for k, v in values.items()}


def _unmarshal(item: dict[str, Any]) -> dict[str, Any]:
    return {k: _deserializer.deserialize(v) for k, v in item.items()}


def _to_job(item: dict[str, Any]) -> Job:
    raw = _unmarshal(item)
    children = None
    if "childrenTotal" in raw:
        children = ChildCounts(
            total=int(raw["childrenTotal"]),
            done=int(raw.get("childrenDone", 0)),
            dead=int(raw.get("childrenDead", 0)),
        )
    return Job(
        job_id=raw[schema.JOBS_PK],
        job_type=raw["jobType"],
        status=JobStatus(raw["status"]),
        payload=json.loads(raw["payload"]),
        attempts=int(raw["attempts"]),
        max_attempts=int(raw["maxAttempts"]),
        created_at=raw["createdAt"],
        updated_at=raw["updatedAt"],
        due_at=int(raw[schema.STATUS_INDEX_SK]),
        last_error=raw.get("lastError"),
        result=json.loads(raw["result"]) if "result" in raw else None,
        parent_id=raw.get("parentId"),
        children=children,
        request_hash=raw.get("requestHash"),
        alerted="alertedAt" in raw,
    )


def _condition_failed(error: ClientError) -> bool:
    return error.response["Error"]["Code"] == "ConditionalCheckFailedException"


def _failed_conditions(error: ClientError) -> list[bool] | None:
    """For a cancelled transaction, which of its items failed their condition; None for other errors."""
    if error.response["Error"]["Code"] != "TransactionCanceledException":
        return None
    reasons = error.response.get("CancellationReasons") or []
    return [r.get("Code") == "ConditionalCheckFailed" for r in reasons]


@dataclass(frozen=True)
class _Update:
    """One UpdateItem: SET/ADD/REMOVE clauses and a condition, with placeholders generated."""

    set: dict[str, Any]
    condition: str
    values: dict[str, Any]
    add: dict[str, int] | None = None
    remove: Sequence[str] = ()

    def expression(self) -> tuple[str, dict[str, str], dict[str, Any]]:
        names: dict[str, str] = {}
        values = dict(self.values)
        clauses = []
        sets = []
        for i, (attr, value) in enumerate(self.set.items()):
            names[f"#s{i}"] = attr
            values[f":s{i}"] = value
            sets.append(f"#s{i} = :s{i}")
        if sets:
            clauses.append("SET " + ", ".join(sets))
        if self.add:
            adds = []
            for i, (attr, amount) in enumerate(self.add.items()):
                names[f"#a{i}"] = attr
                values[f":a{i}"] = amount
                adds.append(f"#a{i} :a{i}")
            clauses.append("ADD " + ", ".join(adds))
        if self.remove:
            removes = []
            for i, attr in enumerate(self.remove):
                names[f"#r{i}"] = attr
                removes.append(f"#r{i}")
            clauses.append("REMOVE " + ", ".join(removes))
        names["#status"] = "status"
        return " ".join(clauses), names, values


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
        self._ttl_seconds = finished_ttl_days * 86_400
        self._clock = clock

    @property
    def _ddb(self) -> Any:
        return clients.client("dynamodb")

    def now(self) -> float:
        return self._clock()

    def _shard(self, job_id: str, status: JobStatus) -> str:
        return f"{status.value}#{zlib.crc32(job_id.encode()) % self._shards}"

    def _key(self, job_id: str) -> dict[str, Any]:
        return {schema.JOBS_PK: {"S": job_id}}

    def _state(self, job_id: str, status: JobStatus, due_at: float, now: float) -> dict[str, Any]:
        """The attributes every transition writes: status, its index key and the clock fields."""
        state: dict[str, Any] = {
            "status": status.value,
            schema.STATUS_INDEX_PK: self._shard(job_id, status),
            schema.STATUS_INDEX_SK: _millis(due_at),
            "updatedAt": iso_time(now),
        }
        if status.finished:
            state[schema.TTL_ATTRIBUTE] = int(now) + self._ttl_seconds
        return state

    def _item(self, new: NewJob, now: float) -> dict[str, Any]:
        item: dict[str, Any] = {
            schema.JOBS_PK: new.job_id,
            "jobType": new.job_type,
            "payload": json.dumps(new.payload, separators=(",", ":")),
            "attempts": 0,
            "maxAttempts": new.max_attempts,
            "createdAt": iso_time(now),
            **self._state(new.job_id, JobStatus.PENDING, now + new.delay_seconds, now),
        }
        if new.parent_id:
            item["parentId"] = new.parent_id
        if new.request_hash:
            item["requestHash"] = new.request_hash
        return _marshal(item)

    # --- reads -----------------------------------------------------------------------------------

    def get(self, job_id: str) -> Job | None:
        response = self._ddb.get_item(TableName=self._table, Key=self._key(job_id), ConsistentRead=True)
        item = response.get("Item")
        return _to_job(item) if item else None

    def _current(self, job_id: str, error: ClientError) -> Job | None:
        """The item a failed condition saw, from the error when DynamoDB returned it."""
        item = error.response.get("Item")
        return _to_job(item) if item else self.get(job_id)

    def by_status(self, status: JobStatus, due_before: float | None = None) -> Iterator[Job]:
        """Jobs in `status`, across every shard, optionally only those whose `dueAt` has passed."""
        for shard in range(self._shards):
            condition = f"{schema.STATUS_INDEX_PK} = :k"
            values: dict[str, Any] = {":k": {"S": f"{status.value}#{shard}"}}
            if due_before is not None:
                condition += f" AND {schema.STATUS_INDEX_SK} < :due"
                values[":due"] = {"N": str(_millis(due_before))}
            paginator = self._ddb.get_paginator("query")
            pages = paginator.paginate(
                TableName=self._table,
                IndexName=schema.STATUS_INDEX,
                KeyConditionExpression=condition,
                ExpressionAttributeValues=values,
                PaginationConfig={"PageSize": 100},
            )
            for page in pages:
                for item in page["Items"]:
                    yield _to_job(item)

    # --- writes ----------------------------------------------------------------------------------

    def _update(self, job_id: str, update: _Update) -> Job:
        expression, names, values = update.expression()
        response = self._ddb.update_item(
            TableName=self._table,
            Key=self._key(job_id),
            UpdateExpression=expression,
            ConditionExpression=update.condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=_marshal(values),
            ReturnValues="ALL_NEW",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
        return _to_job(response["Attributes"])

    def put_new(self, new: NewJob) -> Job:
        """Create a pending job; JobExistsError carries the existing job when the id is taken."""
        item = self._item(new, self.now())
        try:
            self._ddb.put_item(
                TableName=self._table,
                Item=item,
                ConditionExpression=f"attribute_not_exists({schema.JOBS_PK})",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if _condition_failed(error):
                existing = self._current(new.job_id, error)
                if existing is not None:
                    raise JobExistsError(existing) from None
            raise
        return _to_job(item)

    def claim(self, job_id: str, lease_seconds: int) -> Job:
        """Take the job for one attempt: pending, or processing with an expired lease (a crashed worker)."""
        now = self.now()
        update = _Update(
            set=self._state(job_id, JobStatus.PROCESSING, now + lease_seconds, now),
            add={"attempts": 1},
            condition=(
                f"attribute_exists({schema.JOBS_PK}) AND (#status = :pending OR "
                f"(#status = :processing AND {schema.STATUS_INDEX_SK} < :now))"
            ),
            values={":pending": "pending", ":processing": "processing", ":now": _millis(now)},
        )
        try:
            return self._update(job_id, update)
        except ClientError as error:
            if _condition_failed(error):
                raise NotClaimableError(job_id, self._current(job_id, error)) from None
            raise

    def _attempt_condition(self, job: Job) -> tuple[str, dict[str, Any]]:
        return "#status = :processing AND attempts = :attempt", {
            ":processing": "processing",
            ":attempt": job.attempts,
        }

    def _finish_attempt(self, job: Job, status: JobStatus, extra: dict[str, Any]) -> Job:
        """Write a running attempt's terminal state, moving its parent's counters in the same transaction."""
        now = self.now()
        condition, values = self._attempt_condition(job)
        update = _Update(
            set={**self._state(job.job_id, status, now, now), **extra}, condition=condition, values=values
        )
        if not job.parent_id:
            return self._update_or_stale(job.job_id, update)
        self._transact_with_parent(job.job_id, job.parent_id, update, _TERMINAL_COUNTER[status])
        return self._require(job.job_id)

    def _transact_with_parent(self, job_id: str, parent_id: str, update: _Update, counter: str) -> None:
        expression, names, values = update.expression()
        try:
            self._ddb.transact_write_items(
                TransactItems=[
                    {
                        "Update": {
                            "TableName": self._table,
                            "Key": self._key(job_id),
                            "UpdateExpression": expression,
                            "ConditionExpression": update.condition,
                            "ExpressionAttributeNames": names,
                            "ExpressionAttributeValues": _marshal(values),
                        }
                    },
                    {
                        "Update": {
                            "TableName": self._table,
                            "Key": self._key(parent_id),
                            "UpdateExpression": "ADD #c :one",
                            "ConditionExpression": f"attribute_exists({schema.JOBS_PK})",
                            "ExpressionAttributeNames": {"#c": counter},
                            "ExpressionAttributeValues": {":one": {"N": "1"}},
                        }
                    },
                ]
            )
        except ClientError as error:
            failed = _failed_conditions(error)
            if failed is None:
                raise
            if failed[1:2] == [True] and failed[:1] != [True]:
                # The parent is gone (expired): the child's own transition still happens.
                self._update_or_stale(job_id, update)
                return
            raise StaleAttemptError(job_id) from None

    def _update_or_stale(self, job_id: str, update: _Update) -> Job:
        try:
            return self._update(job_id, update)
        except ClientError as error:
            if _condition_failed(error):
                raise StaleAttemptError(job_id) from None
            raise

    def _require(self, job_id: str) -> Job:
        job = self.get(job_id)
        if job is None:
            raise LookupError(job_id)
        return job

    def complete(self, job: Job, result: Any) -> Job:
        return self._finish_attempt(
            job, JobStatus.DONE, {"result": json.dumps(result, separators=(",", ":"))}
        )

    def fail(self, job: Job, error: str) -> Job:
        """The running attempt ends the job: a permanent error, or its last attempt failed."""
        return self._finish_attempt(job, JobStatus.DEAD, {"lastError": error[:_MAX_ERROR_CHARS]})

    def retry(self, job: Job, error: str, delay_seconds: int) -> Job:
        """Back to pending; its message becomes visible again after `delay_seconds`."""
        now = self.now()
        condition, values = self._attempt_condition(job)
        update = _Update(
            set={
                **self._state(job.job_id, JobStatus.PENDING, now + delay_seconds, now),
                "lastError": error[:_MAX_ERROR_CHARS],
            },
            condition=condition,
            values=values,
        )
        return self._update_or_stale(job.job_id, update)

    def await_children(self, job: Job, total: int, result: Any, check_after_seconds: int) -> Job:
        """The parent hands its work to `total` children; done at once if they already all finished."""
        now = self.now()
        condition, values = self._attempt_condition(job)
        update = _Update(
            set={
                **self._state(job.job_id, JobStatus.WAITING, now + check_after_seconds, now),
                "childrenTotal": total,
                "result": json.dumps(result, separators=(",", ":")),
            },
            condition=condition,
            values=values,
        )
        waiting = self._update_or_stale(job.job_id, update)
        return self.settle_parent(waiting.job_id, check_after_seconds) or waiting

    def settle_parent(self, parent_id: str, check_after_seconds: int) -> Job | None:
        """Finish a waiting parent whose children have all finished; else push its next check out.

        Returns the parent when it was finished by this call, None otherwise.
        """
        parent = self.get(parent_id)
        if parent is None or parent.status is not JobStatus.WAITING or parent.children is None:
            return None
        now = self.now()
        if parent.children.complete:
            update = _Update(
                set=self._state(parent_id, JobStatus.DONE, now, now),
                condition="#status = :waiting",
                values={":waiting": "waiting"},
            )
        else:
            update = _Update(
                set={schema.STATUS_INDEX_SK: _millis(now + check_after_seconds)},
                condition="#status = :waiting",
                values={":waiting": "waiting"},
            )
        try:
            settled = self._update(parent_id, update)
        except ClientError as error:
            if _condition_failed(error):
                return None
            raise
        return settled if settled.status is JobStatus.DONE else None

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
            update = _Update(
                set={**self._state(job_id, JobStatus.DEAD, now, now), "lastError": error[:_MAX_ERROR_CHARS]},
                condition="#status = :seen AND attempts = :attempts",
                values={":seen": job.status.value, ":attempts": job.attempts},
            )
            try:
                if not job.parent_id:
                    return self._update_or_stale(job_id, update)
                self._transact_with_parent(job_id, job.parent_id, update, _TERMINAL_COUNTER[JobStatus.DEAD])
                return self._require(job_id)
            except StaleAttemptError:
                continue  # it moved under us (claimed again, finished): decide again from its new state

    def mark_alerted(self, job_id: str) -> None:
        self._ddb.update_item(
            TableName=self._table,
            Key=self._key(job_id),
            UpdateExpression="SET alertedAt = :now",
            ExpressionAttributeValues={":now": {"S": iso_time(self.now())}},
        )

    def requeue(self, job: Job, next_check_seconds: int, reason: str | None = None) -> bool:
        """Recovery: claim the right to re-send one overdue job's message. False if another sweep did.

        A pending job keeps its state; an expired `processing` job goes back to `pending` with `reason`.
        The due time moves out so the next sweep does not pick the job up again at once.
        """
        now = self.now()
        if job.status is JobStatus.PROCESSING:
            new_state = {
                **self._state(job.job_id, JobStatus.PENDING, now + next_check_seconds, now),
                "lastError": (reason or "lease expired")[:_MAX_ERROR_CHARS],
            }
        else:
            new_state = {
                schema.STATUS_INDEX_SK: _millis(now + next_check_seconds),
                "updatedAt": iso_time(now),
            }
        update = _Update(
            set=new_state,
            condition=f"#status = :seen AND {schema.STATUS_INDEX_SK} = :due AND attempts = :attempts",
            values={":seen": job.status.value, ":due": job.due_at, ":attempts": job.attempts},
        )
        try:
            self._update(job.job_id, update)
        except ClientError as error:
            if _condition_failed(error):
                return False
            raise
        return True

    def create_children(self, children: Sequence[NewJob]) -> list[str]:
        """Write the children that do not exist yet; return the ids written by this call.

        BatchWriteItem cannot be conditional, so existing ids are read first: a re-run of the parent
        (a retry, a duplicate message) never resets a child that has already made progress. Two runs
        of one parent cannot overlap, because each run holds the parent's claim.
        """
        now = self.now()
        ids = [c.job_id for c in children]
        existing: set[str] = set()
        for start in range(0, len(ids), _BATCH_GET_LIMIT):
            keys = [self._key(i) for i in ids[start : start + _BATCH_GET_LIMIT]]
            request: dict[str, Any] = {
                self._table: {"Keys": keys, "ProjectionExpression": schema.JOBS_PK, "ConsistentRead": True}
            }
            while request:
                response = self._ddb.batch_get_item(RequestItems=request)
                for item in response["Responses"].get(self._table, []):
                    existing.add(item[schema.JOBS_PK]["S"])
                request = response.get("UnprocessedKeys") or {}
        fresh = [c for c in children if c.job_id not in existing]
        for start in range(0, len(fresh), _BATCH_WRITE_LIMIT):
            writes = [
                {"PutRequest": {"Item": self._item(c, now)}}
                for c in fresh[start : start + _BATCH_WRITE_LIMIT]
            ]
            pending: dict[str, Any] = {self._table: writes}
            backoff = 0.05
            while pending:
                response = self._ddb.batch_write_item(RequestItems=pending)
                pending = response.get("UnprocessedItems") or {}
                if pending:
                    time.sleep(backoff)
                    backoff = min(backoff * 2, 1.0)
        return [c.job_id for c in fresh]
