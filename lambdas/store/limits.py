"""The limits table: one item per job type's limit and key (`limit`, `key`), made on first use.

An item holds what the limit needs to say yes or no in one conditional write:
- `holders`: the jobs that hold a concurrency slot, job id -> {`a`: its attempt, `x`: lease expiry (ms)};
  a slot whose holder crashed stops counting when its lease expires, and only the attempt that took
  it can give it back (the release is conditioned on the attempt number);
- `tat`: the token bucket as GCRA's theoretical arrival time (ms): a start is allowed while
  `tat - now <= (bucket - 1) x interval`, and moves `tat` one interval on (at most `perSecond` starts
  a second, plus the bucket at once after a quiet spell);
- `pausedUntil` (ms): a receiver's Retry-After stops every start of the key until then;
- `waiting`: job id -> when it will try again (ms), for GET /limits; `ran`: the last run's length (ms),
  which sizes the next wait; `ver`: bumped by every acquire.

Acquire is one UpdateItem when the guess is right: its condition is the limit itself (`size(holders) <
concurrency`, the bucket's inequality for the guessed side of `tat`), so a busy or idle item need not be
read first. When it fails, the item DynamoDB returns (ReturnValuesOnConditionCheckFailure) decides:
refuse, with the earliest time worth trying again, or write the new state conditioned on `ver`. Each
acquire costs one write unit, failed conditions included; one key takes up to about 1,000 a second
(one item's partition): docs/design.md, flow control.
"""

import math
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from lambdas.models.limits import Limit, LimitKind
from lambdas.store import clients, schema
from lambdas.store.errors import ConditionFailedError, domain_errors
from lambdas.store.expressions import Query, marshal, unmarshal

# An acquire that lost the race for its item this many times waits a moment (many starts at once).
_WRITE_TRIES = 8
# A waiting entry older than this past its retry time is a job that went elsewhere (cancelled, retried).
_STALE_WAITING_MS = 3_600_000
# At most this many waiting jobs are listed in one item (it stays far under DynamoDB's 400 KB).
MAX_WAITING_LISTED = 2_000
_SHORTEST_WAIT_SECONDS = 1.0


@dataclass(frozen=True)
class Admitted:
    pass


@dataclass(frozen=True)
class Refused:
    kind: LimitKind
    until: float  # epoch seconds: the earliest this job is worth trying again


@dataclass(frozen=True)
class LimitState:
    """One key of one limit as GET /limits shows it."""

    limit: str
    key: str
    running: int
    tokens: float | None
    paused_until: float | None
    waiting: int


def _interval_ms(limit: Limit) -> float:
    assert limit.per_second is not None
    return 1000.0 / limit.per_second


def _tolerance_ms(limit: Limit) -> float:
    return (limit.bucket - 1) * _interval_ms(limit)


class LimitStore:
    def __init__(self, table_name: str, clock: Callable[[], float] = time.time) -> None:
        self._table = table_name
        self._clock = clock
        # The bucket's last known `tat` per (limit, key): which side of now the next acquire guesses.
        self._seen_tat: dict[tuple[str, str], float] = {}
        self._creating = threading.Lock()
        self._created: set[tuple[str, str]] = set()

    def now(self) -> float:
        return self._clock()

    @property
    def _ddb(self) -> Any:
        return clients.client("dynamodb")

    def _key(self, limit: str, key: str) -> dict[str, Any]:
        return {schema.LIMITS_PK: {"S": limit}, schema.LIMITS_SK: {"S": key}}

    def acquire(
        self, name: str, key: str, limit: Limit, job_id: str, attempt: int, lease_seconds: int
    ) -> Admitted | Refused:
        """Take a start (and a slot, if the limit has a concurrency) for this attempt of `job_id`."""
        for tries in range(_WRITE_TRIES):
            now_ms = self.now() * 1000
            try:
                self._fast_acquire(name, key, limit, job_id, attempt, now_ms, lease_seconds)
                return Admitted()
            except ConditionFailedError as failed:
                seen = failed.item
            if seen is None:  # the key's first use
                with self._creating:  # this process's other threads wait for one PutItem, not race it
                    if (name, key) in self._created and tries < _WRITE_TRIES // 2:
                        continue  # another thread made it meanwhile (if it is gone again, a later try makes it)
                    self._created.add((name, key))
                    if self._create(name, key, limit, job_id, attempt, now_ms, lease_seconds):
                        return Admitted()
                continue  # it exists now: try the one write again
            item = unmarshal(seen)
            refused = _refusal(item, limit, job_id, now_ms)
            if refused is not None:
                self._note_waiting(name, key, job_id, refused.until)
                return refused
            # It may start, but the one write's guess was wrong: the bucket's side of now (learnt now),
            # or the item needs tidying first (slots of expired leases, an item a pause made).
            self._remember(name, key, item)
            if _needs_rewrite(item, limit, now_ms) and self._write_over(
                name, key, limit, item, job_id, attempt, now_ms, lease_seconds
            ):
                return Admitted()
        # Lost every race for the item: others are taking starts right now, so try again shortly.
        kind = LimitKind.CONCURRENCY if limit.concurrency is not None else LimitKind.PER_SECOND
        return Refused(kind, self.now() + _SHORTEST_WAIT_SECONDS)

    def _fast_acquire(
        self, name: str, key: str, limit: Limit, job_id: str, attempt: int, now_ms: float, lease: int
    ) -> None:
        names = {"#j": job_id}
        values: dict[str, Any] = {":one": 1, ":now": int(now_ms)}
        sets: list[str] = []
        conditions = ["attribute_exists(ver)", "(attribute_not_exists(pausedUntil) OR pausedUntil <= :now)"]
        if limit.concurrency is not None:
            sets.append("holders.#j = :lease")
            values[":lease"] = {"a": attempt, "x": int(now_ms + lease * 1000)}
            values[":n"] = limit.concurrency
            conditions.append("(size(holders) < :n OR attribute_exists(holders.#j))")
        if limit.per_second is not None:
            interval = _interval_ms(limit)
            if self._seen_tat.get((name, key), 0) > now_ms:  # busy: the bucket is being drawn down
                values[":t"] = math.ceil(interval)
                values[":allow"] = int(now_ms + _tolerance_ms(limit))
                conditions.append("tat > :now AND tat <= :allow")
                sets.append("tat = tat + :t")
            else:  # idle: the bucket is full
                values[":next"] = int(now_ms + interval)
                conditions.append("tat <= :now")
                sets.append("tat = :next")
        expression = "SET " + ", ".join(sets) if sets else ""
        expression += " REMOVE waiting.#j ADD ver :one"
        with domain_errors():
            response = self._ddb.update_item(
                TableName=self._table,
                Key=self._key(name, key),
                UpdateExpression=expression.strip(),
                ConditionExpression=" AND ".join(conditions),
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=_marshal(values),
                ReturnValues="UPDATED_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        tat = response.get("Attributes", {}).get("tat")
        if tat is not None:
            self._seen_tat[(name, key)] = float(tat["N"])

    def _new_state(
        self, limit: Limit, item: dict[str, Any], job_id: str, attempt: int, now_ms: float, lease: int
    ) -> dict[str, Any]:
        holders = {j: h for j, h in dict(item.get("holders") or {}).items() if float(h["x"]) > now_ms}
        if limit.concurrency is not None:
            holders[job_id] = {"a": attempt, "x": int(now_ms + lease * 1000)}
        waiting = {
            j: u
            for j, u in dict(item.get("waiting") or {}).items()
            if j != job_id and float(u) > now_ms - _STALE_WAITING_MS
        }
        state: dict[str, Any] = {"holders": holders, "waiting": waiting}
        if limit.per_second is not None:
            state["tat"] = int(max(float(item.get("tat", 0)), now_ms) + _interval_ms(limit))
        return state

    def _create(
        self, name: str, key: str, limit: Limit, job_id: str, attempt: int, now_ms: float, lease: int
    ) -> bool:
        state = self._new_state(limit, {}, job_id, attempt, now_ms, lease)
        item = {schema.LIMITS_PK: name, schema.LIMITS_SK: key, "ver": 1, **state}
        try:
            with domain_errors():
                self._ddb.put_item(
                    TableName=self._table,
                    Item=_marshal(item),
                    ConditionExpression="attribute_not_exists(#pk)",
                    ExpressionAttributeNames={"#pk": schema.LIMITS_PK},
                )
        except ConditionFailedError:
            return False
        self._remember(name, key, state)
        return True

    def _write_over(
        self,
        name: str,
        key: str,
        limit: Limit,
        item: dict[str, Any],
        job_id: str,
        attempt: int,
        now_ms: float,
        lease: int,
    ) -> bool:
        """The new state computed from the item as read, written only over that version."""
        state = self._new_state(limit, item, job_id, attempt, now_ms, lease)
        seen = item.get("ver")
        values: dict[str, Any] = {f":{k}": v for k, v in state.items()}
        values[":ver"] = int(seen or 0) + 1
        condition = "attribute_not_exists(ver)"
        if seen is not None:
            condition = "ver = :seen"
            values[":seen"] = int(seen)
        try:
            with domain_errors():
                self._ddb.update_item(
                    TableName=self._table,
                    Key=self._key(name, key),
                    UpdateExpression="SET " + ", ".join(f"{k} = :{k}" for k in [*state, "ver"]),
                    ConditionExpression=condition,
                    ExpressionAttributeValues=_marshal(values),
                )
        except ConditionFailedError:
            return False
        self._remember(name, key, state)
        return True

    def _remember(self, name: str, key: str, state: dict[str, Any]) -> None:
        if "tat" in state:
            self._seen_tat[(name, key)] = float(state["tat"])

    def _write(
        self, name: str, key: str, expression: str, condition: str, values: dict[str, Any], job_id: str = ""
    ) -> bool:
        """One conditional UpdateItem of a key's item; False when its condition did not hold."""
        try:
            with domain_errors():
                self._ddb.update_item(
                    TableName=self._table,
                    Key=self._key(name, key),
                    UpdateExpression=expression,
                    ConditionExpression=condition,
                    **({"ExpressionAttributeNames": {"#j": job_id}} if job_id else {}),
                    ExpressionAttributeValues=_marshal(values),
                )
        except ConditionFailedError:
            return False
        return True

    def _note_waiting(self, name: str, key: str, job_id: str, until: float) -> None:
        """List the refused job as waiting (for GET /limits); skipped when the list is full."""
        values = {":until": int(until * 1000), ":cap": MAX_WAITING_LISTED}
        condition = "attribute_exists(waiting) AND size(waiting) < :cap"
        self._write(name, key, "SET waiting.#j = :until", condition, values, job_id)

    def release(self, name: str, key: str, job_id: str, attempt: int, ran_ms: float) -> bool:
        """Give back the slot this attempt holds; False when it holds none (a newer attempt took over,
        or its lease expired and another job has the slot)."""
        values = {":attempt": attempt, ":ran": int(ran_ms)}
        return self._write(
            name, key, "REMOVE holders.#j SET ran = :ran", "holders.#j.a = :attempt", values, job_id
        )

    def pause(self, name: str, key: str, until: float) -> None:
        """Stop every start of this key until `until` (never shortening a longer pause)."""
        condition = "attribute_not_exists(pausedUntil) OR pausedUntil < :until"
        self._write(name, key, "SET pausedUntil = :until", condition, {":until": int(until * 1000)})

    def states(self, name: str, limit: Limit) -> Iterator[LimitState]:
        """Each key of limit `name` that has an item, as it stands now."""
        now_ms = self.now() * 1000
        query = Query(self._table, (schema.LIMITS_PK, name), consistent=True)
        pages = self._ddb.get_paginator("query").paginate(**query.params())
        for page in pages:
            for raw in page["Items"]:
                item = unmarshal(raw)
                yield _state_of(name, item, limit, now_ms)


def _needs_rewrite(item: dict[str, Any], limit: Limit, now_ms: float) -> bool:
    """The one write cannot succeed on this item whatever it guesses: it must be written over."""
    if "ver" not in item or "holders" not in item or "waiting" not in item:
        return True
    if limit.per_second is not None and "tat" not in item:
        return True
    holders = dict(item["holders"]).values()
    return limit.concurrency is not None and any(float(h["x"]) <= now_ms for h in holders)


def _refusal(item: dict[str, Any], limit: Limit, job_id: str, now_ms: float) -> Refused | None:
    """Why this job may not start now, and when to try again; None when it may."""
    refusals: list[Refused] = []
    paused = float(item.get("pausedUntil", 0))
    if paused > now_ms:
        refusals.append(Refused(LimitKind.PAUSED, paused / 1000))
    if limit.concurrency is not None:
        live = [
            float(h["x"])
            for j, h in dict(item.get("holders") or {}).items()
            if j != job_id and float(h["x"]) > now_ms
        ]
        if len(live) >= limit.concurrency:
            refusals.append(Refused(LimitKind.CONCURRENCY, _slot_wait(item, limit, live, now_ms) / 1000))
    if limit.per_second is not None:
        tat = float(item.get("tat", 0))
        allowed_at = tat - _tolerance_ms(limit)
        if allowed_at > now_ms:
            refusals.append(Refused(LimitKind.PER_SECOND, allowed_at / 1000))
    return max(refusals, key=lambda r: r.until) if refusals else None


def _slot_wait(item: dict[str, Any], limit: Limit, expiries: list[float], now_ms: float) -> float:
    """When a slot is likely free: the last run's length, scaled by the queue of waiters per slot (a
    jitter spreads them), never past the earliest lease expiry (a crashed holder's slot comes back)."""
    assert limit.concurrency is not None
    ran = float(item.get("ran", 1000))
    waiters = len(dict(item.get("waiting") or {}))
    expected = ran * (1 + waiters / limit.concurrency) * (0.5 + random.random())
    expected = max(expected, _SHORTEST_WAIT_SECONDS * 1000)
    return now_ms + min(expected, min(expiries) - now_ms)


def _state_of(name: str, item: dict[str, Any], limit: Limit, now_ms: float) -> LimitState:
    running = sum(1 for h in dict(item.get("holders") or {}).values() if float(h["x"]) > now_ms)
    tokens = None
    if limit.per_second is not None:
        tat = max(float(item.get("tat", 0)), now_ms)
        tokens = max(
            0.0, min(float(limit.bucket), (now_ms + _tolerance_ms(limit) - tat) / _interval_ms(limit) + 1)
        )
    paused = float(item.get("pausedUntil", 0))
    waiting = sum(
        1 for u in dict(item.get("waiting") or {}).values() if float(u) > now_ms - _STALE_WAITING_MS
    )
    return LimitState(
        limit=name,
        key=str(item[schema.LIMITS_SK]),
        running=running,
        tokens=round(tokens, 2) if tokens is not None else None,
        paused_until=paused / 1000 if paused > now_ms else None,
        waiting=waiting,
    )


def _marshal(values: dict[str, Any]) -> dict[str, Any]:
    return marshal({k: _numbers(v) for k, v in values.items()})


def _numbers(value: Any) -> Any:
    """Floats as ints (boto3's serializer refuses floats; every number here is whole ms or a count)."""
    if isinstance(value, float):
        return int(value)
    if isinstance(value, dict):
        return {k: _numbers(v) for k, v in value.items()}
    return value
