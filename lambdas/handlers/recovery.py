"""The `recovery` function: runs on a schedule and re-sends jobs whose message or worker was lost."""

# First: the modules below load with the cycle collector off (see `startup`).
from lambdas.handlers import startup  # isort: split

from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from lambdas import config
from lambdas.lifecycle.sweeps.recovery import Sweeper
from lambdas.observability import logger, metrics, tracer
from lambdas.store.factory import job_store
from lambdas.store.queue import JobQueue

# Stop starting new work this long before the function's timeout.
_SAFETY_MARGIN_MS = 10_000


@cache
def _sweeper() -> Sweeper:
    # The settings load with the first sweep rather than the module, as in the dead_letter
    # function: nothing waits on a scheduled sweep.
    from lambdas.models import settings

    recovery = settings.recovery()
    return Sweeper(
        job_store(recovery),
        JobQueue(
            recovery.queue_url,
            recovery.job_queue_urls,
            recovery.high_queue_urls,
            recovery.dead_letter_queue_urls,
        ),
        recovery.grace_seconds,
        recovery.schedule_horizon_seconds,
    )


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    report = _sweeper().sweep(lambda: context.get_remaining_time_in_millis() > _SAFETY_MARGIN_MS)
    if report.requeued:
        metrics.add_metric(name=config.METRIC_RECOVERED, unit=MetricUnit.Count, value=report.requeued)
    metrics.add_metric(name=config.METRIC_SWEEPS, unit=MetricUnit.Count, value=1)
    summary: dict[str, Any] = {
        "requeuedPending": report.requeued_pending,
        "requeuedExpired": report.requeued_expired,
        "parentsFinished": report.parents_finished,
        "handedOver": report.handed_over,
        "workflowsTimedOut": report.workflows_timed_out,
        "outOfTime": report.out_of_time,
        "errors": len(report.errors),
    }
    logger.info("sweep finished", extra=summary)
    return summary


startup.loaded()
