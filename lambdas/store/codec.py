"""The jobs table's item shape: a Job to and from its DynamoDB item, the one place that knows its
attribute names and the formats of its index keys (`status_key`, `owner_key`, ...).

Payloads and results are stored as compact JSON in UTF-8 (no `\\u` escapes, which would triple the
size of non-ASCII text). Times are ISO 8601 UTC (`...Z`); `dueAt` and `statusAt` are epoch
milliseconds so the indexes can sort and compare them. The index key attributes (`schema`) are written
here only, from the job's id, owner and status.

The attempt history is HISTORY_SLOTS top-level map attributes (`history0`..), an attempt's entry in
slot `attemptTotal % HISTORY_SLOTS`: set in the same update that ends the attempt, it needs no read
and no list to trim, and stays bounded.
"""

import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from lambdas.models.job import (
    Attempt,
    AttemptOutcome,
    ChildCounts,
    Job,
    JobStatus,
    NewJob,
    Priority,
    WorkflowStep,
)
from lambdas.models.timestamps import iso_time
from lambdas.models.waiting import LimitKind, WaitingFor
from lambdas.store import schema
from lambdas.store.errors import ITEM_SIZE_LIMIT, ItemTooLargeError
from lambdas.store.expressions import marshal, unmarshal

MAX_ERROR_CHARS = 2000
# Attributes the store's writes name (the rest of the item is written by `JobItems` alone). A list may
# filter on the type and the owner: both are copied into the list indexes (`schema.Index.include`).
JOB_TYPE = "jobType"
OWNER = "owner"
STATUS = "status"
ATTEMPTS = "attempts"
RESULT = "result"
LAST_ERROR = "lastError"
UPDATED_AT = "updatedAt"
ALERTED_AT = "alertedAt"
ALERT_CLAIMED_UNTIL = "alertClaimedUntil"
# When a caller last retried the job (epoch ms): a redriven message sent before it is about a past life.
REOPENED_AT = "reopenedAt"
# Which parent counter a child's terminal state moves.
TERMINAL_COUNTER = {
    JobStatus.DONE: "childrenDone",
    JobStatus.DEAD: "childrenDead",
    JobStatus.CANCELLED: "childrenCancelled",
}
# All of a parent's finished children (the sum of the three above), and what that sum is while one child
# is left (childrenTotal - 1, written when the parent starts waiting): a child's transaction compares the
# two to learn, without a read, whether it is the parent's last (DynamoDB conditions have no arithmetic).
CHILDREN_FINISHED = "childrenFinished"
CHILDREN_BEFORE_LAST = "childrenBeforeLast"
CHILDREN_TOTAL = "childrenTotal"
# A fan-out's counters (the four above and its total) live in an item of their own, keyed by the parent's
# id and this suffix (no job id has a `#`): a child's terminal write then rewrites ~200 bytes, not the
# parent's payload (up to 256 KB; DynamoDB bills a write by the size of the item written).
COUNTERS_SUFFIX = "#children"
# The counters item also names its parent's type and attempt, for the log line of the child that
# finishes it (so that child reads nothing).
PARENT_TYPE = "parentType"
PARENT_ATTEMPTS = "parentAttempts"
HISTORY_SLOTS = 10
HISTORY_ERROR_CHARS = 200  # each slot stays small: every write of the item pays for its whole size
# When a job given a start time may first run (epoch ms): a message that comes before cannot claim it.
# Removed by the first claim (a retry's delay is its message's, not this).
RUN_AT = "runAt"
# A job's priority; absent for `normal` (and on jobs stored before priorities).
PRIORITY = "priority"
ATTEMPT_TOTAL = "attemptTotal"
ATTEMPT_STARTED_AT = "attemptStartedAt"
# A job waiting on a limit (or its own RetryLater): {kind, key, until (epoch ms), reason}; and the seconds
# it has waited in all.
WAITING_FOR = "waitingFor"
# A workflow's: the durable execution it runs in (its writes are fenced on it), each step's record (an
# attribute a step, so one step's write does not rewrite the others), and the callback an event completes.
EXECUTION = "execution"
EXECUTION_ARN = "executionArn"
STEP_PREFIX = "step:"
EVENT_CALLBACK = "eventCallback"
WAITED_SECONDS = "waitedSeconds"
# Epoch ms of the failure that started the job's retries: its retry policy's window counts from it.
RETRYING_SINCE = "retryingSince"
# Items written before owners existed; no API key id looks like this.
NO_OWNER = "-"


def counter_changes(status: JobStatus, change: int) -> dict[str, int]:
    """What a child entering (`change` 1) or leaving (-1) the finished `status` adds to its parent."""
    return {TERMINAL_COUNTER[status]: change, CHILDREN_FINISHED: change}


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


def key(job_id: str) -> dict[str, Any]:
    return {schema.JOBS_PK: {"S": job_id}}


def counters_id(parent_id: str) -> str:
    return f"{parent_id}{COUNTERS_SUFFIX}"


def counters_key(parent_id: str) -> dict[str, Any]:
    return key(counters_id(parent_id))


def parent_of_counters(item_id: str) -> str:
    """The fan-out a counters item's id (`counters_id`) belongs to."""
    return item_id.removesuffix(COUNTERS_SUFFIX)


def is_job_item(item: dict[str, Any]) -> bool:
    """A job's item, not a fan-out's counters item (which has no type)."""
    return "jobType" in item


def is_parent_item(item: dict[str, Any]) -> bool:
    """A (marshalled) job item of a fan-out that has started waiting for its children."""
    return CHILDREN_TOTAL in item


def to_job(item: dict[str, Any], counters: dict[str, Any] | None = None) -> Job:
    """The Job a raw (marshalled) DynamoDB item holds; a parent's counts from its `counters` item."""
    return job_from_values(unmarshal(item), unmarshal(counters) if counters else None)


def job_from_values(raw: dict[str, Any], counters: dict[str, Any] | None = None) -> Job:
    children = None
    if CHILDREN_TOTAL in raw:
        counts = counters if counters is not None else raw  # a pre-counters parent (ChildCounts.apart)
        children = ChildCounts(
            total=int(raw[CHILDREN_TOTAL]),
            done=int(counts.get("childrenDone", 0)),
            dead=int(counts.get("childrenDead", 0)),
            cancelled=int(counts.get("childrenCancelled", 0)),
            apart=counters is not None,
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
        due_at=int(raw.get(schema.DUE_AT, 0)),
        last_error=raw.get("lastError"),
        result=json.loads(raw["result"]) if "result" in raw else None,
        parent_id=raw.get("parentId"),
        children=children,
        request_hash=raw.get("requestHash"),
        alerted=ALERTED_AT in raw,
        owner=raw.get("owner", ""),
        status_at=int(raw.get(schema.STATUS_AT, 0)),
        attempt_total=int(raw.get(ATTEMPT_TOTAL, raw["attempts"])),
        attempt_started_at=raw.get(ATTEMPT_STARTED_AT),
        history=_history(raw),
        reopened_at=int(raw.get(REOPENED_AT, 0)),
        waiting_for=_waiting_for(raw.get(WAITING_FOR)),
        waited_seconds=int(raw.get(WAITED_SECONDS, 0)),
        retrying_since=int(raw.get(RETRYING_SINCE, 0)),
        run_at=int(raw.get(RUN_AT, 0)),
        steps=_steps(raw),
        execution=raw.get(EXECUTION),
        priority=Priority(raw.get(PRIORITY, Priority.NORMAL)),
    )


def _steps(raw: dict[str, Any]) -> tuple[WorkflowStep, ...]:
    steps = [
        WorkflowStep(
            name=attr[len(STEP_PREFIX) :],
            status=value["status"],
            started_at=value["startedAt"],
            ended_at=value.get("endedAt"),
            attempts=int(value["attempts"]),
            error=value.get("error"),
        )
        for attr, value in raw.items()
        if attr.startswith(STEP_PREFIX)
    ]
    return tuple(sorted(steps, key=lambda step: (int(raw[f"{STEP_PREFIX}{step.name}"]["seq"]), step.name)))


def waiting_value(waiting: WaitingFor) -> dict[str, Any]:
    value: dict[str, Any] = {"kind": waiting.kind.value, "until": millis(waiting.until)}
    if waiting.key is not None:
        value["key"] = waiting.key
    if waiting.reason:
        value["reason"] = waiting.reason[:HISTORY_ERROR_CHARS]
    return value


def _waiting_for(value: dict[str, Any] | None) -> WaitingFor | None:
    if not value:
        return None
    return WaitingFor(
        kind=LimitKind(value["kind"]),
        key=value.get("key"),
        until=int(value["until"]) / 1000,
        reason=value.get("reason", ""),
    )


def _history(raw: dict[str, Any]) -> tuple[Attempt, ...]:
    entries = [raw[f"history{slot}"] for slot in range(HISTORY_SLOTS) if f"history{slot}" in raw]
    return tuple(
        Attempt(
            attempt=int(entry["attempt"]),
            started_at=entry["startedAt"],
            ended_at=entry.get("endedAt"),
            outcome=AttemptOutcome(entry["outcome"]) if entry.get("outcome") else None,
            error=entry.get("error"),
        )
        for entry in sorted(entries, key=lambda e: int(e["attempt"]))
    )


def history_entry(
    attempt: int, started_at: str | None, ended: float, outcome: AttemptOutcome, error: str | None = None
) -> dict[str, Any]:
    """The attribute (name -> value) that records one ended attempt in its history slot."""
    entry: dict[str, Any] = {
        "attempt": attempt,
        "startedAt": started_at or iso_time(ended),
        "endedAt": iso_time(ended),
        "outcome": outcome.value,
    }
    if error:
        entry["error"] = error[:HISTORY_ERROR_CHARS]
    return {f"history{attempt % HISTORY_SLOTS}": entry}


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
class State:
    """The attributes a move to a status sets and removes (its index keys, its clock fields)."""

    assign: dict[str, Any]
    remove: tuple[str, ...]


def status_key(status: JobStatus, shard: int) -> str:
    """The `byStatus` and `byStatusTime` indexes' key: a status on one shard."""
    return f"{status.value}#{shard}"


def owner_status_key(owner: str, status: JobStatus, shard: int) -> str:
    """The `byOwnerStatus` index's key: one owner's jobs in a status, on one shard."""
    return f"{owner or NO_OWNER}#{status_key(status, shard)}"


def owner_key(owner: str, shard: int) -> str:
    """The `byOwner` index's key: one owner's jobs, on one shard."""
    return f"{owner or NO_OWNER}#{shard}"


def created_key(shard: int) -> str:
    """The `byCreated` index's key: everyone's jobs, on one shard."""
    return str(shard)


@dataclass(frozen=True)
class JobItems:
    """Builds the attributes a job's writes carry: its state, index keys and clock fields."""

    shards: int
    ttl_seconds: int

    def shard_of(self, job_id: str) -> int:
        return zlib.crc32(job_id.encode()) % self.shards

    def shard(self, job_id: str, status: JobStatus) -> str:
        return status_key(status, self.shard_of(job_id))

    def state(self, job_id: str, owner: str, status: JobStatus, due_at: float, now: float) -> State:
        """Entering `status`. A live state keeps `dueAt` (the sweeper's index) and no TTL; a finished
        one drops `dueAt`, so the sparse `byStatus` index forgets it, and expires after the TTL.
        `processing` drops the owner's status key: a claim knows only the job id (see docs/internals/capacity.md)."""
        assign: dict[str, Any] = {
            "status": status.value,
            schema.STATUS_SHARD: self.shard(job_id, status),
            schema.STATUS_AT: millis(now),
            "updatedAt": iso_time(now),
        }
        remove: list[str] = []
        if status is JobStatus.PROCESSING:
            remove.append(schema.OWNER_STATUS_SHARD)
        else:
            assign[schema.OWNER_STATUS_SHARD] = owner_status_key(owner, status, self.shard_of(job_id))
        if status.finished:
            assign[schema.TTL_ATTRIBUTE] = int(now) + self.ttl_seconds
            remove.append(schema.DUE_AT)
        else:
            assign[schema.DUE_AT] = millis(due_at)
            remove.append(schema.TTL_ATTRIBUTE)
        return State(assign, tuple(remove))

    def new_item(self, new: NewJob, now: float) -> dict[str, Any]:
        """A new pending job's marshalled item; ItemTooLargeError when DynamoDB would refuse it."""
        shard = self.shard_of(new.job_id)
        due = now + new.delay_seconds
        status = JobStatus.PENDING
        if new.horizon_seconds and new.delay_seconds > new.horizon_seconds:
            status = JobStatus.SCHEDULED
        values: dict[str, Any] = {
            schema.JOBS_PK: new.job_id,
            "jobType": new.job_type,
            "payload": compact_json(new.payload),
            "attempts": 0,
            ATTEMPT_TOTAL: 0,
            "maxAttempts": new.max_attempts,
            schema.CREATED_AT: iso_time(now),
            "owner": new.owner,
            schema.OWNER_SHARD: owner_key(new.owner, shard),
            schema.CREATED_SHARD: created_key(shard),
            **self.state(new.job_id, new.owner, status, due, now).assign,
        }
        if new.horizon_seconds:
            values[RUN_AT] = millis(due)
        if new.priority is not Priority.NORMAL:
            values[PRIORITY] = new.priority.value
        if new.parent_id:
            values["parentId"] = new.parent_id
        if new.request_hash:
            values["requestHash"] = new.request_hash
        item = marshal(values)
        size = item_size(item)
        if size > ITEM_SIZE_LIMIT:
            raise ItemTooLargeError(size, ITEM_SIZE_LIMIT)
        return item


# The delivery log's sort key (schema.DELIVERIES_SK): "<deliveryId>#<attempt, zero padded>".
def attempt_key(delivery_id: str, attempt: int) -> str:
    return f"{attempts_prefix(delivery_id)}{attempt:04d}"


def attempts_prefix(delivery_id: str) -> str:
    """What every attempt key of one delivery begins with."""
    return f"{delivery_id}#"


def sort_value(index: schema.Index, value: int | str) -> Decimal | str:
    """A value of `index`'s sort key as the index holds it: a number (epoch ms) or text (ISO time)."""
    return Decimal(str(value)) if index.numeric_sort_key else str(value)


def position(item: Mapping[str, Any], index: schema.Index) -> tuple[int | str, str]:
    """Where an index entry (or a LastEvaluatedKey) stands: its sort key and its job's id."""
    sort = item[index.sort_key]
    value: int | str = int(sort["N"]) if "N" in sort else str(sort["S"])
    return value, str(item[schema.JOBS_PK]["S"])
