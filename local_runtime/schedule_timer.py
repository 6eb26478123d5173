"""EventBridge Scheduler for `make run`: fires the stored recurring schedules, which moto never does.

Rules emulated (tests/integration/test_schedules.py drives tick() under moto; tests/e2e/test_schedules.py
the whole runtime):
- Each tick reads every schedule from the schedules table (the API's source of truth) and, for each
  enabled one, every fire time since the last tick up to now, by the one next-fire-time implementation
  (`lambdas.models.schedule_expressions`): the same expressions, time zones and daylight-saving rules.
- A firing invokes the `schedules` function with the input a deployed schedule's target gets:
  `{"owner", "scheduleId", "scheduledTime"}`, the time as EventBridge writes `<aws.scheduler.scheduled-time>`
  (UTC, whole seconds, `Z`).
- A paused schedule's firings are not made up for when it is resumed, as EventBridge does not; a
  firing that failed is not retried here (AWS retries it, then dead-letters it).
- A rate() fires at its start (the schedule's creation) and every period after. A schedule's first tick
  looks back to its start (not before the timer's own): the API stamps the start before its write lands,
  and a tick that read the table in between must not lose the firing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from lambdas.handlers.schedules import firing_input
from lambdas.lifecycle.schedules import next_fire_times
from lambdas.models.schedule import ScheduleState
from lambdas.store.schedules import ScheduleStore

MAX_FIRINGS_PER_TICK = 60  # a clock jump (a suspended laptop) does not fire an hour of minutes at once


def scheduled_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ScheduleTimer:
    def __init__(
        self,
        schedules: ScheduleStore,
        invoke: Callable[[dict[str, Any]], Any],
        tick_seconds: float = 1.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._schedules = schedules
        self._invoke = invoke
        self._tick = tick_seconds
        self._clock = clock
        self._started = self._since = clock()
        self._seen: set[str] = set()  # schedules read by an earlier tick
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="schedule-timer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(5)

    def tick(self) -> list[dict[str, Any]]:
        """Fire what came due since the last tick; the events it invoked the function with."""
        now = self._clock()
        fired: list[dict[str, Any]] = []
        for schedule in self._schedules.all():
            since = self._since
            if schedule.schedule_id not in self._seen:
                self._seen.add(schedule.schedule_id)
                since = max(min(since, schedule.start_at / 1000 - 0.001), self._started)
            if schedule.state is not ScheduleState.ENABLED:
                continue
            due = [t for t in next_fire_times(schedule, since, MAX_FIRINGS_PER_TICK) if t.timestamp() <= now]
            for moment in due:
                event = firing_input(schedule.owner, schedule.schedule_id, scheduled_time(moment))
                self._invoke(event)
                fired.append(event)
        self._since = now
        return fired

    def _run(self) -> None:
        while not self._stopping.wait(self._tick):
            try:
                self.tick()
            except RuntimeError:
                return  # the pool was closed: the runtime is stopping
