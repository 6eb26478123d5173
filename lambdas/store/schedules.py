"""The schedules table, under each owner (the API key id), so a client's reads never reach another's
schedule. Per owner:

- `<scheduleId>`: the schedule as its owner wrote it (its job's payload included). Only the API writes it;
  changes are conditioned on the `version` read (optimistic).
- `<scheduleId>#fired`: what its firings left, small whatever the payload: the last jobs, the time of the
  last firing recorded, the last error. A firing writes only this item (a write unit, where rewriting the
  schedule would cost one per KB of payload); it sorts right after its schedule, so one Query reads both.
  A firing is recorded only when newer than the last one recorded, so a duplicate never records twice.
- `#count`: how many schedules the owner keeps; a create and its count commit in one transaction, a
  delete and its uncount too.
- `#day#<YYYY-MM-DD>`: how many jobs the owner's firings created that UTC day, capped (a write unit per
  firing); it expires two days later.

Schedule ids are uuid4s: none starts with '#', which sorts before every hex digit, so the owner's own
items (`#...`) sort first and never read as schedules.
"""

import dataclasses
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

from lambdas.models.job import Priority
from lambdas.models.schedule import Firing, Overlap, Schedule, ScheduleState, ScheduleTiming
from lambdas.store import clients, schema, transactions
from lambdas.store.codec import PRIORITY, compact_json
from lambdas.store.errors import ConditionFailedError, StoreError, TransactionCancelledError, domain_errors
from lambdas.store.expressions import Query, Update, marshal, unmarshal

COUNT_KEY = "#count"
COUNT = "schedules"
FIRED_SUFFIX = "#fired"
DAY_PREFIX = "#day#"
FIRINGS = "firings"
DAY_KEPT_SECONDS = 2 * 86_400
RECENT_KEPT = 10
ERROR_KEPT_CHARS = 500  # a firing's error as recorded: the fired item stays one write unit
_AFTER_OWN_ITEMS = "$"  # the first character after '#': every schedule id sorts after it
# What the tick reads of each schedule: enough to know when it fires, never the payload.
_TIMING = (schema.SCHEDULES_PK, schema.SCHEDULES_SK, "expression", "timeZone", "state", "startAt")


class ScheduleLimitReachedError(StoreError):
    pass


class FiringCapReachedError(StoreError):
    """The owner's firings created as many jobs today as it may."""


class ScheduleChangedError(StoreError):
    """The schedule was changed or deleted since it was read."""


class ScheduleStore:
    def __init__(self, table_name: str, clock: Callable[[], float] = time.time, ddb: Any = None) -> None:
        self._table = table_name
        self._clock = clock
        self._own_ddb = ddb  # the local runtime's client of its moto server; functions use the shared one

    @property
    def _ddb(self) -> Any:
        return self._own_ddb or clients.client("dynamodb")

    def now(self) -> float:
        return self._clock()

    def create(self, schedule: Schedule, cap: int) -> None:
        """Write a new schedule; ScheduleLimitReachedError when its owner keeps `cap` already."""
        count = Update(
            assign={},
            add={COUNT: 1},
            condition=f"attribute_not_exists(#{COUNT}) OR #{COUNT} < :cap",
            values={":cap": cap},
        )
        put = {
            "Put": {
                "TableName": self._table,
                "Item": _item(schedule),
                "ConditionExpression": f"attribute_not_exists({schema.SCHEDULES_SK})",
            }
        }
        try:
            transactions.write(
                self._ddb,
                [
                    transactions.update("count", self._table, _key(schedule.owner, COUNT_KEY), count),
                    ("put", put),
                ],
            )
        except TransactionCancelledError as cancelled:
            if "count" in cancelled.failed:
                raise ScheduleLimitReachedError(schedule.owner) from None
            raise

    def get(self, owner: str, schedule_id: str) -> Schedule | None:
        """The schedule with what its firings left, in one consistent Query of its two items."""
        if schedule_id.startswith("#"):
            return None
        query = Query(
            self._table,
            (schema.SCHEDULES_PK, owner),
            sort=(schema.SCHEDULES_SK, "begins_with", schedule_id),
            limit=2,  # the schedule, then its fired item: '#' sorts before every other character of an id
            consistent=True,
        )
        items = self._ddb.query(**query.params())["Items"]
        return next((s for s in _schedules(items) if s.schedule_id == schedule_id), None)

    def page(
        self, owner: str | None, limit: int, start: tuple[str, str] | None
    ) -> tuple[list[Schedule], tuple[str, str] | None]:
        """Up to `limit` schedules of `owner` (of every owner with None, in no order across owners), from
        after the key `start`; and the key the next page starts after (None at the end). DynamoDB reads
        2 x `limit` items at most, so a page holds `limit` payloads at most, whatever is stored."""
        params: dict[str, Any] = {"TableName": self._table, "Limit": 2 * limit}
        if owner is not None:
            query = Query(
                self._table, (schema.SCHEDULES_PK, owner), sort=(schema.SCHEDULES_SK, ">", _AFTER_OWN_ITEMS)
            )
            params = {**query.params(), "Limit": 2 * limit}
        if start is not None:
            params["ExclusiveStartKey"] = _key(*start)
        read = (self._ddb.query if owner is not None else self._ddb.scan)(**params)
        items, more = read["Items"], "LastEvaluatedKey" in read
        if more and len(items) > 1 and "#" not in items[-1][schema.SCHEDULES_SK]["S"]:
            items = items[:-1]  # its fired item is on the next page: it goes there too
        last = items[-1] if more else None
        after = None if last is None else (last[schema.SCHEDULES_PK]["S"], last[schema.SCHEDULES_SK]["S"])
        return list(_schedules(items)), after

    def timings(self) -> Iterator[ScheduleTiming]:
        """Every schedule's timing, page by page (a page is 1 MB read at most): the tick holds one page of
        small projections at a time, whatever the payloads stored."""
        pages = self._ddb.get_paginator("scan").paginate(
            TableName=self._table,
            ProjectionExpression=", ".join(f"#p{i}" for i in range(len(_TIMING))),
            FilterExpression="attribute_exists(#p2)",  # schedules only: the other items have no expression
            ExpressionAttributeNames={f"#p{i}": name for i, name in enumerate(_TIMING)},
        )
        for page in pages:
            for item in page["Items"]:
                raw = unmarshal(item)
                yield ScheduleTiming(
                    owner=raw[schema.SCHEDULES_PK],
                    schedule_id=raw[schema.SCHEDULES_SK],
                    expression=raw["expression"],
                    time_zone=raw["timeZone"],
                    state=ScheduleState(raw["state"]),
                    start_at=int(raw["startAt"]),
                )

    def replace(self, seen: Schedule, changed: Schedule) -> Schedule:
        """Write `changed` over the schedule as `seen`; ScheduleChangedError when it moved since."""
        written = dataclasses.replace(changed, version=seen.version + 1)
        try:
            with domain_errors():
                self._ddb.put_item(
                    TableName=self._table,
                    Item=_item(written),
                    ConditionExpression="version = :v",
                    ExpressionAttributeValues={":v": {"N": str(seen.version)}},
                )
        except ConditionFailedError:
            raise ScheduleChangedError(seen.schedule_id) from None
        return written

    def delete(self, schedule: Schedule) -> None:
        """Delete the schedule and uncount it; ScheduleChangedError when it is gone already."""
        delete = {
            "Delete": {
                "TableName": self._table,
                "Key": _key(schedule.owner, schedule.schedule_id),
                "ConditionExpression": f"attribute_exists({schema.SCHEDULES_SK})",
            }
        }
        fired = {
            "Delete": {"TableName": self._table, "Key": _fired_key(schedule.owner, schedule.schedule_id)}
        }
        uncount = Update(assign={}, add={COUNT: -1}, condition=f"attribute_exists(#{COUNT})")
        try:
            transactions.write(
                self._ddb,
                [
                    ("delete", delete),
                    ("fired", fired),
                    transactions.update("count", self._table, _key(schedule.owner, COUNT_KEY), uncount),
                ],
            )
        except TransactionCancelledError:
            raise ScheduleChangedError(schedule.schedule_id) from None

    def record_firing(self, schedule: Schedule, firing: Firing) -> None:
        """Put `firing` first in the schedule's recent jobs and clear its last error, unless a firing as
        new or newer is recorded (a duplicate, or a retry that came late): then nothing changes. Writes the
        small fired item only."""
        recent = [firing, *(f for f in schedule.recent if f.job_id != firing.job_id)][:RECENT_KEPT]
        update = Update(
            assign={"recentJobs": _recent(recent), "lastFiredFor": firing.scheduled_for},
            remove=("lastError", "lastErrorAt"),
            condition="attribute_not_exists(lastFiredFor) OR lastFiredFor < :t",
            values={":t": firing.scheduled_for},
        )
        try:
            with domain_errors():
                self._ddb.update_item(
                    TableName=self._table,
                    Key=_fired_key(schedule.owner, schedule.schedule_id),
                    **update.params(),
                )
        except ConditionFailedError:
            return

    def record_error(self, owner: str, schedule_id: str, message: str, at: str) -> None:
        """Keep why the schedule's last firing failed or was skipped, on its fired item (one write unit)."""
        update = Update(assign={"lastError": message[:ERROR_KEPT_CHARS], "lastErrorAt": at}, condition="")
        self._ddb.update_item(TableName=self._table, Key=_fired_key(owner, schedule_id), **update.params())

    def count_firing(self, owner: str, day: str, cap: int, expires_at: int) -> None:
        """Count one job created by the owner's firings on `day`; FiringCapReachedError at `cap`."""
        update = Update(
            assign={schema.TTL_ATTRIBUTE: expires_at},
            add={FIRINGS: 1},
            condition=f"attribute_not_exists(#{FIRINGS}) OR #{FIRINGS} < :cap",
            values={":cap": cap},
        )
        try:
            with domain_errors():
                self._ddb.update_item(
                    TableName=self._table, Key=_key(owner, DAY_PREFIX + day), **update.params()
                )
        except ConditionFailedError:
            raise FiringCapReachedError(owner) from None


def _key(owner: str, schedule_id: str) -> dict[str, Any]:
    return {schema.SCHEDULES_PK: {"S": owner}, schema.SCHEDULES_SK: {"S": schedule_id}}


def _fired_key(owner: str, schedule_id: str) -> dict[str, Any]:
    return _key(owner, schedule_id + FIRED_SUFFIX)


def _recent(firings: list[Firing]) -> list[dict[str, Any]]:
    return [{"jobId": f.job_id, "scheduledFor": f.scheduled_for} for f in firings]


def _item(schedule: Schedule) -> dict[str, Any]:
    return marshal(
        {
            schema.SCHEDULES_PK: schedule.owner,
            schema.SCHEDULES_SK: schedule.schedule_id,
            "name": schedule.name,
            "expression": schedule.expression,
            "timeZone": schedule.time_zone,
            "jobType": schedule.job_type,
            "payload": compact_json(schedule.payload),
            "maxAttempts": schedule.max_attempts,
            "overlap": schedule.overlap.value,
            "state": schedule.state.value,
            "createdAt": schedule.created_at,
            "startAt": schedule.start_at,
            "version": schedule.version,
            **({PRIORITY: schedule.priority.value} if schedule.priority is not Priority.NORMAL else {}),
        }
    )


def _schedules(items: "Iterator[dict[str, Any]] | list[dict[str, Any]]") -> Iterator[Schedule]:
    """Schedules from items in key order, each with its fired item (which sorts right after it); the
    owner's other items, and a fired item left by a schedule deleted meanwhile, are skipped."""
    held: dict[str, Any] | None = None
    for item in items:
        sort_key = item[schema.SCHEDULES_SK]["S"]
        if held is not None:
            fired = sort_key == held[schema.SCHEDULES_SK]["S"] + FIRED_SUFFIX
            yield _schedule(held, item if fired else None)
            held = None
            if fired:
                continue
        if "#" not in sort_key:
            held = item
    if held is not None:
        yield _schedule(held, None)


def _schedule(item: dict[str, Any], fired_item: dict[str, Any] | None) -> Schedule:
    raw = unmarshal(item)
    fired = unmarshal(fired_item) if fired_item else {}
    return Schedule(
        schedule_id=raw[schema.SCHEDULES_SK],
        owner=raw[schema.SCHEDULES_PK],
        name=raw["name"],
        expression=raw["expression"],
        time_zone=raw["timeZone"],
        job_type=raw["jobType"],
        payload=json.loads(raw["payload"]),
        max_attempts=int(raw["maxAttempts"]),
        overlap=Overlap(raw["overlap"]),
        state=ScheduleState(raw["state"]),
        created_at=raw["createdAt"],
        start_at=int(raw["startAt"]),
        version=int(raw["version"]),
        recent=tuple(Firing(f["jobId"], int(f["scheduledFor"])) for f in fired.get("recentJobs", [])),
        last_error=fired.get("lastError"),
        last_error_at=fired.get("lastErrorAt"),
        priority=Priority(raw.get(PRIORITY, Priority.NORMAL)),
    )
