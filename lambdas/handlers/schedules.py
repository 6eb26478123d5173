"""The `schedules` function: creates the jobs of the recurring schedules' firings.

One event, on AWS and under `make run` alike: the stack's minute tick, `{"tick": "<scheduled time>"}` from
its one EventBridge Scheduler schedule (the local runtime emulates that resource from the template), fires
every enabled schedule due in the minute before. Each firing creates its one job; a repeated or retried
tick finds the jobs made and makes no second one. One schedule's failure is recorded on it; an error of
the table or the queue raises, so EventBridge Scheduler retries the tick and, at the end, puts it on the
schedules' dead-letter queue, which is alarmed.
"""

# First: the modules below load with the cycle collector off (see `startup`).
from lambdas.handlers import startup  # isort: split

from datetime import datetime
from functools import cache
from typing import Any, NamedTuple

from aws_lambda_powertools.utilities.typing import LambdaContext

from lambdas.lifecycle import schedules
from lambdas.observability import logger, metrics, tracer
from lambdas.store.factory import job_store
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue
from lambdas.store.schedules import ScheduleStore


class _Parts(NamedTuple):
    schedules: ScheduleStore
    store: JobStore
    queue: JobQueue
    cap: int  # jobs one client's firings may create a day


@cache
def _parts() -> _Parts:
    # The settings load with the first tick rather than the module, as in the recovery function.
    from lambdas.models import settings

    settings.forget_on_reset(_parts)
    firing = settings.firing()
    return _Parts(
        ScheduleStore(firing.schedules_table),
        job_store(firing),
        JobQueue(firing.queue_url, firing.job_queue_urls, firing.high_queue_urls),
        firing.max_firings_per_client_day,
    )


# The stack's one EventBridge Scheduler schedule sends `{"tick": "<aws.scheduler.scheduled-time>"}` every
# TICK_SECONDS; each tick fires what came due in the TICK_SECONDS before its scheduled time.
TICK = "tick"
TICK_SECONDS = 60


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    parts = _parts()
    tick = datetime.fromisoformat(event[TICK]).timestamp()
    outcomes = schedules.fire_due(
        parts.schedules, parts.store, parts.queue, tick - TICK_SECONDS, tick, parts.cap
    )
    summary = {outcome.value: count for outcome, count in sorted(outcomes.items())}
    logger.info("schedules tick", extra={"firings": summary})
    return {"firings": sum(outcomes.values()), "created": outcomes[schedules.FireOutcome.CREATED], **summary}


startup.loaded()
