"""EventBridge for `make run`: the template's scheduled rules and EventBridge Scheduler schedules invoke
their target functions, which moto never does.

Rules emulated (tests/local_runtime/unit/test_scheduler.py, rule by rule):
- The fire times are the expression's (`cron(...)` or `rate(...)`, read in the schedule's
  `ScheduleExpressionTimezone`), by the one implementation of EventBridge's rules that the API checks
  stored schedules with (`lambdas.models.schedule_expressions`).
- A Scheduler `rate()` schedule without a StartDate starts at its creation (the runtime's start): it
  fires then, and every period after. A scheduled rule's first run comes one period after its creation.
- A Scheduler schedule sends its target's `Input` with each context attribute replaced:
  `<aws.scheduler.scheduled-time>` (the fire time, UTC, whole seconds, `Z`), `<aws.scheduler.schedule-arn>`,
  `<aws.scheduler.execution-id>` (a new id per invocation) and `<aws.scheduler.attempt-number>` (1). A
  rule sends its target's constant `Input`, or a Scheduled Event.
- A fire time that passed while the previous invocation ran is invoked at once, not dropped (AWS
  invokes each fire time); a failed invocation is reported, not retried (AWS retries per RetryPolicy,
  then dead-letters, which the deployed stack alarms).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from lambdas.models import schedule_expressions as expressions
from local_runtime.lambda_pool import Invocation
from local_runtime.template import Schedule
from local_runtime.template.model import ScheduleKind

# EventBridge Scheduler's context attributes (docs: "Adding context attributes").
SCHEDULED_TIME = "<aws.scheduler.scheduled-time>"
SCHEDULE_ARN = "<aws.scheduler.schedule-arn>"
EXECUTION_ID = "<aws.scheduler.execution-id>"
ATTEMPT_NUMBER = "<aws.scheduler.attempt-number>"


def scheduled_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def scheduled_event(schedule: Schedule, moment: datetime, account: str, region: str) -> Any:
    """What the target function receives for the fire time `moment`."""
    if schedule.kind is ScheduleKind.SCHEDULER:
        text = schedule.input or "{}"
        for attribute, value in (
            (SCHEDULED_TIME, scheduled_time(moment)),
            (SCHEDULE_ARN, schedule.arn),
            (EXECUTION_ID, uuid.uuid4().hex[:16]),
            (ATTEMPT_NUMBER, "1"),
        ):
            text = text.replace(attribute, value)
        return json.loads(text)
    if schedule.input is not None:
        return json.loads(schedule.input)
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": account,
        "time": scheduled_time(moment),
        "region": region,
        "resources": [schedule.arn],
        "detail": {},
    }


def fire_times(schedule: Schedule, start: datetime, every_seconds: float | None = None) -> Iterator[datetime]:
    """The schedule's fire times from its creation at `start`; `every_seconds` replaces a rule's period
    (development: the recovery sweep every second)."""
    if every_seconds is not None and schedule.kind is ScheduleKind.RULE:
        period = timedelta(seconds=every_seconds)
        moment = start
        while True:
            moment += period
            yield moment
    parsed = expressions.parse(schedule.expression)
    first = start
    if isinstance(parsed, expressions.Rate) and schedule.kind is ScheduleKind.RULE:
        first = start + timedelta(seconds=parsed.seconds)  # a new rule runs one period after its creation
    after = first - timedelta(microseconds=1)
    while True:
        found = expressions.next_fire_times(parsed, schedule.time_zone, after, first, 1)
        if not found:
            return
        yield found[0]
        after = found[0]


class Scheduler:
    def __init__(
        self,
        schedule: Schedule,
        invoke: Callable[[Any], Invocation],
        account: str,
        region: str,
        every_seconds: float | None = None,
        on_result: Callable[[Invocation], None] = lambda _: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.schedule = schedule
        self._invoke = invoke
        self._account = account
        self._region = region
        self._every_seconds = every_seconds
        self._on_result = on_result
        self._clock = clock
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"schedule-{schedule.logical_id}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(5)

    def _run(self) -> None:
        start = datetime.fromtimestamp(self._clock(), UTC)
        for moment in fire_times(self.schedule, start, self._every_seconds):
            if self._stopping.wait(max(0.0, moment.timestamp() - self._clock())):
                return
            event = scheduled_event(self.schedule, moment, self._account, self._region)
            try:
                self._on_result(self._invoke(event))
            except RuntimeError:
                return  # the pool was closed: the runtime is stopping
