"""The dead jobs of one (type, owner) between two of its alerts: one small item in the jobs table.

The item (`alerts/<type>/<owner>`, no job attributes: no index and no listing sees it) holds
- `held`: dead jobs counted since the group's last alert, and `sample`: the first SAMPLE_SIZE of them
  (job id, attempts, error), appended in the same write as the count;
- `windowEnds`: no alert before it (epoch ms), moved on by each alert's claim;
- `sendingUntil`: the lease of the consumer publishing an alert; one that crashed before its commit
  leaves it to expire, and the next letter publishes the same counts again (repeated, never lost);
- `timer`: the job whose letter waits on the dead-letter queue for the window to end, so that what was
  held is reported even when no other job dies.
Every operation is one conditional UpdateItem (or one GetItem) on that item: a dead job costs the same
whether its group holds one death or thousands.
"""

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lambdas.store import clients, codec, schema
from lambdas.store.errors import ConditionFailedError, domain_errors
from lambdas.store.expressions import marshal, unmarshal

SAMPLE_SIZE = 5
HELD, SAMPLE, WINDOW_ENDS, SENDING_UNTIL, TIMER = "held", "sample", "windowEnds", "sendingUntil", "timer"
_NAMES = {f"#{n}": n for n in (HELD, SAMPLE, WINDOW_ENDS, SENDING_UNTIL, TIMER, schema.TTL_ATTRIBUTE)}
# A group's item outlives its quiet: a week after its last death it goes (and with it only its window).
_TTL_SECONDS = 7 * 86_400


@dataclass(frozen=True)
class GroupState:
    held: int = 0
    sample: tuple[Mapping[str, Any], ...] = ()
    window_ends: int = 0
    sending_until: int | None = None
    timer: str | None = None

    def sendable(self, now_ms: int) -> bool:
        """Deaths to report, nobody publishing them, and the window over (or its publisher crashed)."""
        if self.held <= 0:
            return False
        if self.sending_until is not None:
            return self.sending_until <= now_ms
        return self.window_ends <= now_ms


@dataclass(frozen=True)
class AlertGroup:
    job_type: str
    owner: str

    @property
    def item_id(self) -> str:
        return f"alerts/{self.job_type}/{self.owner}"


class AlertGroups:
    def __init__(self, table_name: str) -> None:
        self._table = table_name

    def count(self, group: AlertGroup, death: Mapping[str, Any], now: float) -> GroupState:
        """Count one dead job in its group (its `death` in the sample while there is room)."""
        ttl = {":ttl": int(now) + _TTL_SECONDS, ":one": 1}
        try:
            return self._update(
                group,
                f"SET #{SAMPLE} = list_append(if_not_exists(#{SAMPLE}, :empty), :death), "
                f"#{schema.TTL_ATTRIBUTE} = :ttl ADD #{HELD} :one",
                {**ttl, ":empty": [], ":death": [dict(death)], ":room": SAMPLE_SIZE},
                condition=f"attribute_not_exists(#{SAMPLE}) OR size(#{SAMPLE}) < :room",
            )
        except ConditionFailedError:  # the sample is full: the count alone
            return self._update(group, f"SET #{schema.TTL_ATTRIBUTE} = :ttl ADD #{HELD} :one", ttl)

    def state(self, group: AlertGroup) -> GroupState:
        item = clients.client("dynamodb").get_item(
            TableName=self._table, Key=codec.key(group.item_id), ConsistentRead=True
        )
        return _state(item.get("Item"))

    def claim(self, group: AlertGroup, now_ms: int, window_ms: int, lease_ms: int) -> GroupState | None:
        """Take the right to report what the group holds, and start its next window; None when it is
        not sendable any more (another consumer claimed it first)."""
        try:
            return self._update(
                group,
                f"SET #{SENDING_UNTIL} = :lease, #{WINDOW_ENDS} = :next",
                {":lease": now_ms + lease_ms, ":next": now_ms + window_ms, ":now": now_ms, ":zero": 0},
                condition=(
                    f"#{HELD} > :zero AND (attribute_not_exists(#{SENDING_UNTIL}) AND "
                    f"(attribute_not_exists(#{WINDOW_ENDS}) OR #{WINDOW_ENDS} <= :now) OR "
                    f"#{SENDING_UNTIL} <= :now)"
                ),
            )
        except ConditionFailedError:
            return None

    def commit(self, group: AlertGroup, reported: GroupState, timer: str) -> GroupState | None:
        """What `reported` counted is sent: take it off the group, deaths counted since stay held, and
        `timer` (the publisher's own letter) watches them. None when the claim had expired and another
        consumer took it over (it reports the same deaths again)."""
        removed = "".join(f", #{SAMPLE}[{i}]" for i in range(len(reported.sample)))
        try:
            return self._update(
                group,
                f"SET #{TIMER} = :timer ADD #{HELD} :minus REMOVE #{SENDING_UNTIL}{removed}",
                {":timer": timer, ":minus": -reported.held, ":lease": reported.sending_until},
                condition=f"#{SENDING_UNTIL} = :lease",
            )
        except ConditionFailedError:
            return None

    def release(self, group: AlertGroup, claimed: GroupState) -> None:
        """A claim whose alert could not be published: the next letter may publish at once."""
        with contextlib.suppress(ConditionFailedError):
            self._update(
                group,
                f"REMOVE #{SENDING_UNTIL}, #{WINDOW_ENDS}",
                {":lease": claimed.sending_until},
                condition=f"#{SENDING_UNTIL} = :lease",
            )

    def hold_timer(self, group: AlertGroup, job_id: str) -> bool:
        """Make `job_id`'s letter the group's timer, unless another letter already is."""
        try:
            self._update(
                group,
                f"SET #{TIMER} = :me",
                {":me": job_id},
                condition=f"attribute_not_exists(#{TIMER}) OR #{TIMER} = :me",
            )
        except ConditionFailedError:
            return False
        return True

    def drop_timer(self, group: AlertGroup, job_id: str) -> bool:
        """`job_id`'s letter stops being the timer, if the group holds nothing; False when it does."""
        try:
            self._update(
                group,
                f"REMOVE #{TIMER}",
                {":me": job_id, ":zero": 0},
                condition=f"#{TIMER} = :me AND #{HELD} = :zero",
            )
        except ConditionFailedError:
            return False
        return True

    def _update(
        self, group: AlertGroup, expression: str, values: Mapping[str, Any], condition: str | None = None
    ) -> GroupState:
        used = {
            name: attr for name, attr in _NAMES.items() if name in expression or name in (condition or "")
        }
        params: dict[str, Any] = {
            "TableName": self._table,
            "Key": codec.key(group.item_id),
            "UpdateExpression": expression,
            "ExpressionAttributeNames": used,
            "ReturnValues": "ALL_NEW",
        }
        wanted = {k: v for k, v in values.items() if k in expression or k in (condition or "")}
        if wanted:
            params["ExpressionAttributeValues"] = marshal(wanted)
        if condition:
            params["ConditionExpression"] = condition
        with domain_errors():
            response = clients.client("dynamodb").update_item(**params)
        return _state(response.get("Attributes"))


def _state(item: Mapping[str, Any] | None) -> GroupState:
    if not item:
        return GroupState()
    raw = unmarshal(dict(item))
    sending = raw.get(SENDING_UNTIL)
    return GroupState(
        held=int(raw.get(HELD, 0)),
        sample=tuple(raw.get(SAMPLE, ())),
        window_ends=int(raw.get(WINDOW_ENDS, 0)),
        sending_until=None if sending is None else int(sending),
        timer=raw.get(TIMER),
    )
