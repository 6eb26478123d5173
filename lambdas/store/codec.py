"""The jobs table's item shape: a Job to and from its DynamoDB item, one place that knows attribute names.

Payloads and results are stored as compact JSON in UTF-8 (no `\\u` escapes, which would triple the
size of non-ASCII text). Times are ISO 8601 UTC (`...Z`); `dueAt` is epoch milliseconds so the
status index can sort and compare it.
"""

import json
import zlib
from dataclasses import dataclass
from typing import Any

from boto3.dynamodb.types import TypeDeserializer

from lambdas.models.job import ChildCounts, Job, JobStatus, NewJob
from lambdas.models.timestamps import iso_time
from lambdas.store import schema
from lambdas.store.errors import ITEM_SIZE_LIMIT, ItemTooLargeError
from lambdas.store.expressions import marshal

_deserializer = TypeDeserializer()
MAX_ERROR_CHARS = 2000
ALERTED_AT = "alertedAt"
ALERT_CLAIMED_UNTIL = "alertClaimedUntil"
# Which parent counter a child's terminal state moves.
TERMINAL_COUNTER = {JobStatus.DONE: "childrenDone", JobStatus.DEAD: "childrenDead"}


def millis(epoch_seconds: float) -> int:
    return int(epoch_seconds * 1000)


def compact_json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (valid in a JSON escape, not in UTF-8): keep it escaped, as JSON allows.
        text = json.dumps(value, separators=(",", ":"))
    return text


def unmarshal(item: dict[str, Any]) -> dict[str, Any]:
    return {k: _deserializer.deserialize(v) for k, v in item.items()}


def key(job_id: str) -> dict[str, Any]:
    return {schema.JOBS_PK: {"S": job_id}}


def to_job(item: dict[str, Any]) -> Job:
    """The Job a raw (marshalled) DynamoDB item holds."""
    return job_from_values(unmarshal(item))


def job_from_values(raw: dict[str, Any]) -> Job:
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
        alerted=ALERTED_AT in raw,
    )


def item_size(item: dict[str, Any]) -> int:
    """An upper bound of a marshalled item's size as DynamoDB counts it (names plus values, UTF-8)."""
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def _value_size(value: dict[str, Any]) -> int:
    (kind, data), *_ = value.items()
    if kind == "S":
        return len(data.encode("utf-8"))
    if kind == "B":
        return len(data)
    if kind in ("N", "BOOL", "NULL"):
        return len(str(data)) + 1
    return 3 + sum(len(str(part).encode()) for part in data)  # sets and documents: not in job items


@dataclass(frozen=True)
class JobItems:
    """Builds the attributes a job's writes carry: its state, status index key and clock fields."""

    shards: int
    ttl_seconds: int

    def shard(self, job_id: str, status: JobStatus) -> str:
        return f"{status.value}#{zlib.crc32(job_id.encode()) % self.shards}"

    def state(self, job_id: str, status: JobStatus, due_at: float, now: float) -> dict[str, Any]:
        state: dict[str, Any] = {
            "status": status.value,
            schema.STATUS_INDEX_PK: self.shard(job_id, status),
            schema.STATUS_INDEX_SK: millis(due_at),
            "updatedAt": iso_time(now),
        }
        if status.finished:
            state[schema.TTL_ATTRIBUTE] = int(now) + self.ttl_seconds
        return state

    def new_item(self, new: NewJob, now: float) -> dict[str, Any]:
        """A new pending job's marshalled item; ItemTooLargeError when DynamoDB would refuse it."""
        values: dict[str, Any] = {
            schema.JOBS_PK: new.job_id,
            "jobType": new.job_type,
            "payload": compact_json(new.payload),
            "attempts": 0,
            "maxAttempts": new.max_attempts,
            "createdAt": iso_time(now),
            **self.state(new.job_id, JobStatus.PENDING, now + new.delay_seconds, now),
        }
        if new.parent_id:
            values["parentId"] = new.parent_id
        if new.request_hash:
            values["requestHash"] = new.request_hash
        item = marshal(values)
        size = item_size(item)
        if size > ITEM_SIZE_LIMIT:
            raise ItemTooLargeError(size, ITEM_SIZE_LIMIT)
        return item
