"""EventBridge's rate() schedules: invoke the target function every period with a Scheduled Event."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from local_runtime.lambda_pool import Invocation
from local_runtime.template import Schedule


def scheduled_event(schedule: Schedule, account: str, region: str) -> Any:
    if schedule.input is not None:
        return json.loads(schedule.input)
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": account,
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "region": region,
        "resources": [schedule.rule_arn],
        "detail": {},
    }


class Scheduler:
    def __init__(
        self,
        schedule: Schedule,
        invoke: Callable[[Any], Invocation],
        every_seconds: float,
        account: str,
        region: str,
        on_result: Callable[[Invocation], None] = lambda _: None,
    ) -> None:
        self.schedule = schedule
        self.every_seconds = every_seconds
        self._invoke = invoke
        self._account = account
        self._region = region
        self._on_result = on_result
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"schedule-{schedule.logical_id}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(5)

    def _run(self) -> None:
        # Like a new rule, the first run comes one period after the start.
        while not self._stopping.wait(self.every_seconds):
            try:
                self._on_result(self._invoke(scheduled_event(self.schedule, self._account, self._region)))
            except RuntimeError:
                return  # the pool was closed: the runtime is stopping
