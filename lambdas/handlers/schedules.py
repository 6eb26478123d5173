"""The `schedules` function: EventBridge Scheduler's target for every recurring schedule of the stack.

Its event is the schedule's input, `{"owner", "scheduleId", "scheduledTime"}` (the last one filled in by
EventBridge Scheduler from `<aws.scheduler.scheduled-time>`). It creates that firing's one job; a
repeated or retried delivery of the firing finds the job made and makes no second one. An error (the
table unavailable) raises, so EventBridge Scheduler retries and, at the end, puts the firing on the
schedules' dead-letter queue, which is alarmed.
"""

# First: the modules below load with the cycle collector off (see `startup`).
from lambdas.handlers import startup  # isort: split

from datetime import datetime
from functools import cache
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from lambdas.lifecycle import schedules
from lambdas.models import settings
from lambdas.observability import logger, metrics, tracer
from lambdas.store.factory import job_store
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue
from lambdas.store.schedules import ScheduleStore


@cache
def _parts() -> tuple[ScheduleStore, JobStore, JobQueue]:
    firing = settings.firing()
    return ScheduleStore(firing.schedules_table), job_store(firing), JobQueue(firing.queue_url)


settings.forget_on_reset(_parts)


def firing_input(owner: str, schedule_id: str, scheduled_time: str) -> dict[str, str]:
    """The event this function takes: what a schedule's target input holds once EventBridge fills it in."""
    return {"owner": owner, "scheduleId": schedule_id, "scheduledTime": scheduled_time}


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    from lambdas.jobs.types import register_builtin_types

    register_builtin_types()
    store_of_schedules, store, queue = _parts()
    scheduled_for = int(datetime.fromisoformat(event["scheduledTime"]).timestamp() * 1000)
    schedule = store_of_schedules.get(event["owner"], event["scheduleId"])
    fired = schedules.fire(store_of_schedules, store, queue, schedule, scheduled_for)
    summary = {"outcome": fired.outcome.value, "jobId": fired.job.job_id if fired.job else None}
    logger.info("schedule fired", extra={**summary, "scheduleId": event["scheduleId"]})
    return summary


startup.loaded()
