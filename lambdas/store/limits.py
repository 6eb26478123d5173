"""The limits table: one item per job type's limit and key (`limit`, `key`), made on first use.

An item holds what the limit needs to say yes or no in one conditional write:
- `holders`: the jobs that hold a concurrency slot, job id -> {`a`: the admission's tag, `x`: lease
  expiry (ms)}; a slot whose holder crashed stops counting when its lease expires, only the admission
  that took it can give it back (the release is conditioned on its tag), and a second message of a job
  that holds a live slot is refused (the worker admits before it claims, so a duplicate may ask);
- `tat`: the token bucket as GCRA's theoretical arrival time (ms): a start is allowed while
  `tat - now <= (bucket - 1) x interval`, and moves `tat` one interval on (at most `perSecond` starts
  a second, plus the bucket at once after a quiet spell);
- `lanes`: owner -> the end (ms) of the starts reserved for that owner's waiting jobs, and `line`: the
  latest end any reservation wrote. A refused job is handed a start of its own (a reservation) in its
  owner's lane, one interval (`1 / perSecond`, or the last run's length over the slots) times the
  owners waiting apart, so the waiters of one key come back one at a time, round-robin across owners,
  never all at once. While `line` is ahead, a job that holds no reservation is refused even if the
  bucket has a token: the tokens are the reserved jobs'. Within a lane, priority orders: the lane
  marks where its `high` starts end (`h`) and where its `high` and `normal` ones end (`n`); a job
  refused while lower-priority jobs of its owner wait after its mark is handed the start at its mark
  instead of one after the lane's end, and the lane owes a start to its rank (`b` to a `high` job,
  owed by any lower one; `d` to a `normal` job, owed by a `low` one): the next lower job of the lane
  that comes back at its reserved start yields it (refused, and reserved again), so the owner's share
  of the limit stays what it was, and a lane serves `high`, then `normal`, then `low`, each in the
  order refused;
- `p_<pause>` (ms): a receiver's Retry-After stops the starts of the jobs it answers for (one client's
  deliveries to one URL: `pause_of` in `lambdas/lifecycle/attempt/limits.py`) until then; `pausedUntil`, a
  pause of the whole key written before pauses were scoped, is still honoured until it ends;
- `ran`: the last run's length (ms), which sizes a concurrency limit's interval; `ver`: bumped by every
  acquire; `expiresAt`: seven days after the key's last use (the table's TTL removes unused keys).

Acquire is one UpdateItem when the guess is right: its condition is the limit itself (`size(holders) <
concurrency`, the bucket's inequality for the guessed side of `tat`), so a busy or idle item need not be
read first. When it fails, the item DynamoDB returns (ReturnValuesOnConditionCheckFailure) decides:
refuse and reserve a start (one more UpdateItem, an atomic add to the owner's lane), or write the new
state conditioned on `ver`. Each acquire costs one write unit, failed conditions included; one key takes
up to about 1,000 a second (one item's partition): docs/internals/flow-control.md.
"""

import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from lambdas.models.job import Priority
from lambdas.models.limits import Limit, LimitKind
from lambdas.store import clients, schema
from lambdas.store.errors import ConditionFailedError, domain_errors
from lambdas.store.expressions import Query, marshal, unmarshal

# An acquire that lost the race for its item this many times waits a moment (many starts at once).
_WRITE_TRIES = 8
# A lane that ended this long ago is dropped from its item by the next reservation that sees it.
_STALE_LANE_MS = 60_000
# A key unused this long is removed by the table's TTL (its state is then that of a key never used).
KEY_TTL_SECONDS = 7 * 24 * 3600
_SHORTEST_WAIT_SECONDS = 1.0
# A receiver's pause is the item's attribute of this prefix and the pause's digest.
_PAUSE_PREFIX = "p_"
# The lane of jobs without an owner (an attribute name cannot be empty).
_NO_LANE = "-"
# A concurrency limit's interval before any run's length is known.
_FIRST_RUN_MS = 1000.0


@dataclass(frozen=True)
class Admitted:
    pass


@dataclass(frozen=True)
class Refused:
    kind: LimitKind
    until: float  # epoch seconds: the start reserved for this job, or the earliest worth trying again
    reserved: bool = False  # `until` is a start reserved for this job in its owner's lane


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


def _tolerance_ms(limit: Limit, reserved: bool = False) -> float:
    """GCRA's tolerance: the bucket less one start; a job holding a reservation may take one interval
    more, so a start that came late (its message, its worker) is caught up by the next instead of
    delaying every later one. Any 1 s window still holds at most perSecond + burst starts."""
    return (limit.bucket - (0 if reserved else 1)) * _interval_ms(limit)


def _spacing_ms(limit: Limit, item: dict[str, Any]) -> float:
    """How far apart one owner's reserved starts lie when that owner waits alone: a start's share of
    the rate, or of the slots (the last run's length over the slots), whichever is longer."""
    spacing = 0.0
    if limit.per_second is not None:
        spacing = _interval_ms(limit)
    if limit.concurrency is not None:
        spacing = max(spacing, float(item.get("ran", _FIRST_RUN_MS)) / limit.concurrency)
    return max(spacing, 1.0)


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

    def sleep(self, seconds: float) -> None:
        """Wait for a start reserved this soon (tests move their clock instead)."""
        if seconds > 0:
            time.sleep(seconds)

    @property
    def _ddb(self) -> Any:
        return clients.client("dynamodb")

    def _key(self, limit: str, key: str) -> dict[str, Any]:
        return {schema.LIMITS_PK: {"S": limit}, schema.LIMITS_SK: {"S": key}}

    def _expires(self, now_ms: float) -> int:
        return int(now_ms / 1000) + KEY_TTL_SECONDS

    def acquire(
        self,
        name: str,
        key: str,
        limit: Limit,
        job_id: str,
        tag: int,
        lease_seconds: int,
        *,
        lane: str = "",
        reserved: bool = False,
        reserve: bool = True,
        pause: str | None = None,
        priority: Priority = Priority.NORMAL,
    ) -> Admitted | Refused:
        """Take a start (and a slot, if the limit has a concurrency) for `job_id`, the slot marked with
        `tag` (what a release must name). `reserved`: the job comes back at a start reserved for it, so
        the reservations ahead (`line`) do not hold it back. Refused with `reserve`, the job is handed
        a start of its own in `lane` (its owner's); without, it is told when the limit next allows one.
        A reserved job yields its start while its lane owes one to a job of higher priority."""
        lane = lane or _NO_LANE
        debts = _DEBTS_PAID[priority] if reserved else ()
        for tries in range(_WRITE_TRIES):
            now_ms = self.now() * 1000
            try:
                self._fast_acquire(
                    name,
                    key,
                    limit,
                    job_id,
                    tag,
                    now_ms,
                    lease_seconds,
                    reserved,
                    pause,
                    lane,
                    debts,
                )
                return Admitted()
            except ConditionFailedError as failed:
                seen = failed.item
            if seen is None:  # the key's first use
                with self._creating:  # this process's other threads wait for one PutItem, not race it
                    if (name, key) in self._created and tries < _WRITE_TRIES // 2:
                        continue  # another thread made it meanwhile (if it is gone again, a later try makes it)
                    self._created.add((name, key))
                    if self._create(name, key, limit, job_id, tag, now_ms, lease_seconds):
                        return Admitted()
                continue  # it exists now: try the one write again
            item = unmarshal(seen)
            self._remember(name, key, item)
            owed = next((debt for debt in debts if _lane_number(item, lane, debt) >= 1), None)
            refused = _refusal(item, limit, job_id, now_ms, reserved, pause)
            if refused is None and owed is not None:
                refused = Refused(_kind(limit), now_ms / 1000)  # its start is a higher job's now
            if refused is not None:
                if not reserve or refused.kind is LimitKind.PAUSED:
                    return refused
                reservation = self._reserve(
                    name, key, limit, item, lane, refused, now_ms, priority, owed, reserved
                )
                if reservation is not None:
                    return reservation
                continue  # another reservation moved the lane meanwhile: read it again
            # It may start, but the one write's guess was wrong: the bucket's side of now (learnt now),
            # or the item needs tidying first (slots of expired leases, an item a pause made).
            if _needs_rewrite(item, limit, now_ms) and self._write_over(
                name, key, limit, item, job_id, tag, now_ms, lease_seconds
            ):
                return Admitted()
        # Lost every race for the item: others are taking starts right now, so try again shortly.
        return Refused(_kind(limit), self.now() + _SHORTEST_WAIT_SECONDS)

    def _fast_acquire(
        self,
        name: str,
        key: str,
        limit: Limit,
        job_id: str,
        tag: int,
        now_ms: float,
        lease: int,
        reserved: bool,
        pause: str | None,
        lane: str,
        debts: tuple[str, ...],
    ) -> None:
        names: dict[str, str] = {}
        values: dict[str, Any] = {":one": 1, ":now": int(now_ms), ":exp": self._expires(now_ms)}
        sets: list[str] = ["expiresAt = :exp"]
        conditions = ["attribute_exists(ver)", "(attribute_not_exists(pausedUntil) OR pausedUntil <= :now)"]
        if not reserved:
            conditions.append("(attribute_not_exists(line) OR line <= :now)")
        for debt in debts:  # a reserved start is not taken while its lane owes one to a higher job
            names["#o"] = lane
            conditions.append(f"(attribute_not_exists(lanes.#o.{debt}) OR lanes.#o.{debt} < :one)")
        if pause is not None:
            names["#p"] = _PAUSE_PREFIX + pause
            conditions.append("(attribute_not_exists(#p) OR #p <= :now)")
        if limit.concurrency is not None:
            names["#j"] = job_id
            sets.append("holders.#j = :lease")
            values[":lease"] = {"a": tag, "x": int(now_ms + lease * 1000)}
            values[":n"] = limit.concurrency
            conditions.append(
                "((size(holders) < :n AND attribute_not_exists(holders.#j)) OR holders.#j.x <= :now)"
            )
        if limit.per_second is not None:
            interval = _interval_ms(limit)
            if self._seen_tat.get((name, key), 0) > now_ms:  # busy: the bucket is being drawn down
                values[":t"] = math.ceil(interval)
                values[":allow"] = int(now_ms + _tolerance_ms(limit, reserved))
                conditions.append("tat > :now AND tat <= :allow")
                sets.append("tat = tat + :t")
            else:  # idle: the bucket is full
                values[":next"] = int(now_ms + interval)
                conditions.append("tat <= :now")
                sets.append("tat = :next")
        with domain_errors():
            response = self._ddb.update_item(
                TableName=self._table,
                Key=self._key(name, key),
                UpdateExpression="SET " + ", ".join(sets) + " ADD ver :one",
                ConditionExpression=" AND ".join(conditions),
                **({"ExpressionAttributeNames": names} if names else {}),
                ExpressionAttributeValues=_marshal(values),
                ReturnValues="UPDATED_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        tat = response.get("Attributes", {}).get("tat")
        if tat is not None:
            self._seen_tat[(name, key)] = float(tat["N"])

    def _reserve(
        self,
        name: str,
        key: str,
        limit: Limit,
        item: dict[str, Any],
        lane: str,
        refused: Refused,
        now_ms: float,
        priority: Priority = Priority.NORMAL,
        owed: str | None = None,
        reserved: bool = False,
    ) -> Refused | None:
        """Hand the refused job a start of its own: the next in its owner's lane, no earlier than the
        limit allows one. One UpdateItem: the lane moves by an atomic add when it is ahead (concurrent
        reservations of one owner never conflict), else it starts anew; None when the lane moved
        between the read and this write (the caller reads again). A job with lower-priority jobs of its
        owner waiting after its rank's mark takes the start at the mark, and the lane owes one to its
        rank; a job whose start was `owed` (a debt's name) pays it with this reservation."""
        lanes = _lanes(item)
        waiting_owners = {o for o, (end, _) in lanes.items() if end > now_ms} | {lane}
        step = math.ceil(_spacing_ms(limit, item) * len(waiting_owners))
        floor = max(now_ms, refused.until * 1000)
        seen = lanes.get(lane, (0.0, 0.0))[0]
        line = float(item.get("line", 0))
        names = {"#o": lane}
        values: dict[str, Any] = {":floor": int(floor), ":step": step}
        stale = [o for o, (end, _) in lanes.items() if end <= now_ms - _STALE_LANE_MS and o != lane][:20]
        removes = [f"lanes.#s{i}" for i in range(len(stale))]
        names.update({f"#s{i}": o for i, o in enumerate(stale)})
        mark_name = _MARK.get(priority)
        mark = _lane_number(item, lane, mark_name) if mark_name else 0.0
        jumps = mark_name is not None and seen > max(mark, floor)  # lower jobs wait after its mark
        if jumps and reserved and owed is None:  # it made its lane owe a start already: it comes back
            return Refused(refused.kind, max(floor, mark) / 1000, reserved=True)
        if jumps:  # the owner's lower jobs wait after its rank's mark: it takes the start there
            assert mark_name is not None
            start = max(floor, mark)
            values = {":floor": int(floor), ":one": 1, ":zero": 0, ":next": int(start + step)}
            debt = _DEBT[priority]
            sets = [f"lanes.#o.{debt} = if_not_exists(lanes.#o.{debt}, :zero) + :one"]
            sets += [
                f"lanes.#o.{m} = :next"
                for m in _MARKS_MOVED[priority]
                if _lane_number(item, lane, m) < start + step
            ]
            condition = "lanes.#o.e > :floor"
        elif seen > floor:  # the owner already waits: its next start is one step after its last
            sets = ["lanes.#o.e = lanes.#o.e + :step", "lanes.#o.s = :step"]
            sets += [f"lanes.#o.{m} = lanes.#o.e + :step" for m in _MARKS_MOVED.get(priority, ())]
            if seen + step > line:
                sets.append("line = lanes.#o.e + :step")
            condition = "lanes.#o.e > :floor"
            start = None
        else:
            end = floor + step
            marks = dict.fromkeys(_MARKS_MOVED.get(priority, ()), int(end))
            values[":lane"] = {"e": int(end), "s": step, **marks}
            sets = ["lanes.#o = :lane"]
            if end > line:
                values[":end"] = int(end)
                sets.append("line = :end")
            condition = "attribute_exists(lanes) AND (attribute_not_exists(lanes.#o) OR lanes.#o.e <= :floor)"
            start = floor
            del values[":step"]
        if owed is not None and seen > floor:  # this job's start went to a higher job: the debt is paid
            sets.append(f"lanes.#o.{owed} = lanes.#o.{owed} - :one")
            condition += f" AND lanes.#o.{owed} >= :one"
            values[":one"] = 1
        expression = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
        try:
            with domain_errors():
                response = self._ddb.update_item(
                    TableName=self._table,
                    Key=self._key(name, key),
                    UpdateExpression=expression,
                    ConditionExpression=condition,
                    ExpressionAttributeNames=names,
                    ExpressionAttributeValues=_marshal(values),
                    ReturnValues="UPDATED_NEW",
                )
        except ConditionFailedError:
            if "lanes" not in item:  # an item from before lanes: give it the map, then reserve again
                self._write(
                    name,
                    key,
                    "SET lanes = if_not_exists(lanes, :empty)",
                    "attribute_exists(ver)",
                    {":empty": {}},
                )
            return None
        if start is None:
            start = float(response["Attributes"]["lanes"]["M"][lane]["M"]["e"]["N"]) - step
        return Refused(refused.kind, start / 1000, reserved=True)

    def _new_state(
        self, limit: Limit, item: dict[str, Any], job_id: str, tag: int, now_ms: float, lease: int
    ) -> dict[str, Any]:
        holders = {j: h for j, h in dict(item.get("holders") or {}).items() if float(h["x"]) > now_ms}
        if limit.concurrency is not None:
            holders[job_id] = {"a": tag, "x": int(now_ms + lease * 1000)}
        lanes = {
            o: e for o, e in dict(item.get("lanes") or {}).items() if _lane_end(e) > now_ms - _STALE_LANE_MS
        }
        state: dict[str, Any] = {"holders": holders, "lanes": lanes, "expiresAt": self._expires(now_ms)}
        if limit.per_second is not None:
            state["tat"] = int(max(float(item.get("tat", 0)), now_ms) + _interval_ms(limit))
        return state

    def _create(
        self, name: str, key: str, limit: Limit, job_id: str, tag: int, now_ms: float, lease: int
    ) -> bool:
        state = self._new_state(limit, {}, job_id, tag, now_ms, lease)
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
        tag: int,
        now_ms: float,
        lease: int,
    ) -> bool:
        """The new state computed from the item as read, written only over that version."""
        state = self._new_state(limit, item, job_id, tag, now_ms, lease)
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

    def release(self, name: str, key: str, job_id: str, tag: int, ran_ms: float) -> bool:
        """Give back the slot this admission holds; False when it holds none (a newer admission took
        over, or its lease expired and another job has the slot)."""
        values = {":tag": tag, ":ran": int(ran_ms)}
        return self._write(
            name, key, "REMOVE holders.#j SET ran = :ran", "holders.#j.a = :tag", values, job_id
        )

    def pause(self, name: str, key: str, pause: str, until: float) -> None:
        """Stop the starts of the jobs `pause` holds until `until` (never shortening a longer pause)."""
        condition = "attribute_not_exists(#j) OR #j < :until"
        self._write(
            name, key, "SET #j = :until", condition, {":until": int(until * 1000)}, _PAUSE_PREFIX + pause
        )

    def states(self, name: str, limit: Limit) -> Iterator[LimitState]:
        """Each key of limit `name` that has an item, as it stands now."""
        after: str | None = None
        while True:
            page, after = self.page(name, limit, after, 100)
            yield from page
            if after is None:
                return

    def page(
        self, name: str, limit: Limit, after: str | None, most: int
    ) -> tuple[list[LimitState], str | None]:
        """Up to `most` keys of limit `name` in key order, after the key `after`; and the last key
        listed when more may follow (None when the limit's keys are all listed)."""
        now_ms = self.now() * 1000
        start = {schema.LIMITS_PK: name, schema.LIMITS_SK: after} if after is not None else None
        query = Query(self._table, (schema.LIMITS_PK, name), consistent=True, limit=most, start=start)
        answer = self._ddb.query(**query.params())
        states = []
        for raw in answer["Items"]:
            item = unmarshal(raw)
            states.append(_state_of(name, item, limit, now_ms))
        more = "LastEvaluatedKey" in answer and states
        return states, states[-1].key if more else None


def _kind(limit: Limit) -> LimitKind:
    return LimitKind.CONCURRENCY if limit.concurrency is not None else LimitKind.PER_SECOND


# Priority in a lane (see the module docstring): the mark a rank's starts end at, the marks a start of
# the rank moves, the debt a lane owes the rank, and the debts a reserved job of the rank pays, in
# order (a low job stands where a normal one jumped before a high one did).
_MARK = {Priority.HIGH: "h", Priority.NORMAL: "n"}
_MARKS_MOVED = {Priority.HIGH: ("h", "n"), Priority.NORMAL: ("n",)}
_DEBT = {Priority.HIGH: "b", Priority.NORMAL: "d"}
_DEBTS_PAID: dict[Priority, tuple[str, ...]] = {
    Priority.HIGH: (),
    Priority.NORMAL: ("b",),
    Priority.LOW: ("d", "b"),
}


def _lane_number(item: dict[str, Any], lane: str, name: str) -> float:
    """A number of `lane`'s entry (a mark or a debt; 0 when absent)."""
    entry = dict(item.get("lanes") or {}).get(lane)
    return float(entry.get(name, 0)) if isinstance(entry, dict) else 0.0


def _lane_end(lane: Any) -> float:
    return float(dict(lane).get("e", 0)) if isinstance(lane, dict) else 0.0


def _lanes(item: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """Each owner's lane: the end of its reserved starts and their step (ms)."""
    return {
        owner: (_lane_end(lane), float(dict(lane).get("s", 0)) if isinstance(lane, dict) else 0.0)
        for owner, lane in dict(item.get("lanes") or {}).items()
    }


def _needs_rewrite(item: dict[str, Any], limit: Limit, now_ms: float) -> bool:
    """The one write cannot succeed on this item whatever it guesses: it must be written over."""
    if "ver" not in item or "holders" not in item or "lanes" not in item:
        return True
    if limit.per_second is not None and "tat" not in item:
        return True
    holders = dict(item["holders"]).values()
    return limit.concurrency is not None and any(float(h["x"]) <= now_ms for h in holders)


def _refusal(
    item: dict[str, Any], limit: Limit, job_id: str, now_ms: float, reserved: bool, pause: str | None
) -> Refused | None:
    """Why this job may not start now, and the earliest the limit allows it; None when it may."""
    refusals: list[Refused] = []
    paused = float(item.get("pausedUntil", 0))
    if pause is not None:
        paused = max(paused, float(item.get(_PAUSE_PREFIX + pause, 0)))
    if paused > now_ms:
        refusals.append(Refused(LimitKind.PAUSED, paused / 1000))
    if limit.concurrency is not None:
        holders = dict(item.get("holders") or {})
        live = [float(h["x"]) for h in holders.values() if float(h["x"]) > now_ms]
        mine = holders.get(job_id)
        if len(live) >= limit.concurrency or (mine is not None and float(mine["x"]) > now_ms):
            # A slot frees when a run ends (about a run's length over the slots), or a lease expires.
            freed = now_ms + max(float(item.get("ran", _FIRST_RUN_MS)) / limit.concurrency, 1.0)
            refusals.append(Refused(LimitKind.CONCURRENCY, min(freed, min(live)) / 1000))
    if limit.per_second is not None:
        tat = float(item.get("tat", 0))
        allowed_at = tat - _tolerance_ms(limit, reserved)
        if allowed_at > now_ms:
            refusals.append(Refused(LimitKind.PER_SECOND, allowed_at / 1000))
    line = float(item.get("line", 0))
    if not reserved and line > now_ms and not refusals:
        # The limit has room, but every start until `line` is another waiting job's.
        kind = LimitKind.PER_SECOND if limit.per_second is not None else LimitKind.CONCURRENCY
        refusals.append(Refused(kind, now_ms / 1000))
    return max(refusals, key=lambda r: r.until) if refusals else None


def _state_of(name: str, item: dict[str, Any], limit: Limit, now_ms: float) -> LimitState:
    running = sum(1 for h in dict(item.get("holders") or {}).values() if float(h["x"]) > now_ms)
    tokens = None
    if limit.per_second is not None:
        tat = max(float(item.get("tat", 0)), now_ms)
        tokens = max(
            0.0, min(float(limit.bucket), (now_ms + _tolerance_ms(limit) - tat) / _interval_ms(limit) + 1)
        )
    pauses = [float(v) for k, v in item.items() if k.startswith(_PAUSE_PREFIX) or k == "pausedUntil"]
    paused = max(pauses, default=0.0)
    # The starts reserved ahead: a lane ends one step after its last reserved start, its starts a step
    # apart, so what lies between now and its end, over its step, is how many of its jobs still wait.
    waiting = sum(
        max(0, math.ceil((end - now_ms) / step) - 1) for end, step in _lanes(item).values() if step > 0
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
