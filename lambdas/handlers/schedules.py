"""The `schedules` function: creates the jobs of the recurring schedules' firings.

Two events: the stack's minute tick, `{"tick": "<scheduled time>"}` from its one EventBridge Scheduler
schedule, fires every enabled schedule due in the minute before; a firing, `{"owner", "scheduleId",
"scheduledTime"}`, fires one (the local runtime's timer sends these). Each firing creates its one job; a
repeated or retried delivery finds the job made and makes no second one. An error (the
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
from lambdas.observability import logger, metrics, tracer
from lambdas.store.factory import job_store
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue
from lambdas.store.schedules import ScheduleStore


@cache
def _parts() -> tuple[ScheduleStore, JobStore, JobQueue]:
    # The settings load with the first tick rather than the module, as in the recovery function
    # (docs/performance.md, "Cold start and first call").
    from lambdas.models import settings

    settings.forget_on_reset(_parts)
    firing = settings.firing()
    return (
        ScheduleStore(firing.schedules_table),
        job_store(firing),
        JobQueue(firing.queue_url, firing.job_queue_urls),
    )


# The stack's one EventBridge Scheduler schedule sends `{"tick": "<aws.scheduler.scheduled-time>"}` every
# TICK_SECONDS; each tick fires what came due in the TICK_SECONDS before its scheduled time.
TICK = "tick"
TICK_SECONDS = 60


def firing_input(owner: str, schedule_id: str, scheduled_time: str) -> dict[str, str]:
    """The event this function takes: what a schedule's target input holds once EventBridge fills it in."""
    return {"owner": owner, "scheduleId": schedule_id, "scheduledTime": scheduled_time}


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    store_of_schedules, store, queue = _parts()
    if TICK in event:
        tick = datetime.fromisoformat(event[TICK]).timestamp()
        due = schedules.fire_due(store_of_schedules, store, queue, tick - TICK_SECONDS, tick)
        created = sum(f.outcome is schedules.FireOutcome.CREATED for f in due)
        logger.info("schedules tick", extra={"firings": len(due), "jobsCreated": created})
        return {"firings": len(due), "created": created}
    scheduled_for = int(datetime.fromisoformat(event["scheduledTime"]).timestamp() * 1000)
    schedule = store_of_schedules.get(event["owner"], event["scheduleId"])
    fired = schedules.fire(store_of_schedules, store, queue, schedule, scheduled_for)
    summary = {"outcome": fired.outcome.value, "jobId": fired.job.job_id if fired.job else None}
    logger.info("schedule fired", extra={**summary, "scheduleId": event["scheduleId"]})
    return summary


startup.loaded()
