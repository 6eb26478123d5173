"""The schedules table: one item per recurring schedule, keyed by its owner and id, so a client's reads
never reach another's schedule; and one counter item per owner (sort key COUNT_KEY) that caps how many
it keeps: a create and its count commit in one transaction, a delete and its uncount too.

Changes are conditioned on the `version` read (optimistic), and a firing is recorded only when it is
newer than the last one recorded, so a duplicated firing never records its job twice.
"""

import dataclasses
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

from lambdas.models.schedule import Firing, Overlap, Schedule, ScheduleState
from lambdas.store import clients, schema, transactions
from lambdas.store.codec import compact_json, unmarshal
from lambdas.store.errors import ConditionFailedError, StoreError, TransactionCancelledError, domain_errors
from lambdas.store.expressions import Query, Update, marshal

COUNT_KEY = "#count"  # no schedule id starts with '#'
COUNT = "schedules"
RECENT_KEPT = 10


class ScheduleLimitReachedError(StoreError):
    pass


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
        if schedule_id.startswith("#"):
            return None
        item = self._ddb.get_item(
            TableName=self._table, Key=_key(owner, schedule_id), ConsistentRead=True
        ).get("Item")
        return _schedule(item) if item else None

    def of_owner(self, owner: str) -> Iterator[Schedule]:
        query = Query(self._table, (schema.SCHEDULES_PK, owner), sort=(schema.SCHEDULES_SK, ">", COUNT_KEY))
        pages = self._ddb.get_paginator("query").paginate(**query.params())
        for page in pages:
            yield from (_schedule(item) for item in page["Items"])

    def all(self) -> Iterator[Schedule]:
        """Every schedule of every owner (the local runtime's timer reads them)."""
        for page in self._ddb.get_paginator("scan").paginate(TableName=self._table):
            yield from (
                _schedule(i) for i in page["Items"] if not i[schema.SCHEDULES_SK]["S"].startswith("#")
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
        uncount = Update(assign={}, add={COUNT: -1}, condition=f"attribute_exists(#{COUNT})")
        try:
            transactions.write(
                self._ddb,
                [
                    ("delete", delete),
                    transactions.update("count", self._table, _key(schedule.owner, COUNT_KEY), uncount),
                ],
            )
        except TransactionCancelledError:
            raise ScheduleChangedError(schedule.schedule_id) from None

    def record_firing(self, schedule: Schedule, firing: Firing) -> None:
        """Put `firing` first in the schedule's recent jobs, unless a firing as new or newer is recorded
        (a duplicate, or a retry that came late): then nothing changes."""
        recent = [firing, *(f for f in schedule.recent if f.job_id != firing.job_id)][:RECENT_KEPT]
        update = Update(
            assign={"recentJobs": _recent(recent), "lastFiredFor": firing.scheduled_for},
            condition="version = :v AND (attribute_not_exists(lastFiredFor) OR lastFiredFor < :t)",
            values={":v": schedule.version, ":t": firing.scheduled_for},
        )
        try:
            with domain_errors():
                self._ddb.update_item(
                    TableName=self._table, Key=_key(schedule.owner, schedule.schedule_id), **update.params()
                )
        except ConditionFailedError:
            return


def _key(owner: str, schedule_id: str) -> dict[str, Any]:
    return {schema.SCHEDULES_PK: {"S": owner}, schema.SCHEDULES_SK: {"S": schedule_id}}


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
            "recentJobs": _recent(list(schedule.recent)),
        }
    )


def _schedule(item: dict[str, Any]) -> Schedule:
    raw = unmarshal(item)
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
        recent=tuple(Firing(f["jobId"], int(f["scheduledFor"])) for f in raw["recentJobs"]),
    )
