"""The `worker` function: the main queue's consumer (SQS event source, ReportBatchItemFailures)."""

# First: the modules below load with the cycle collector off (see `startup`).
from lambdas.handlers import startup  # isort: split

from collections import Counter
from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.utilities.typing import LambdaContext

from lambdas import config
from lambdas.jobs.packages import register_job_types
from lambdas.lifecycle.attempt.worker import MessageResult, Outcome, QueueMessage, Worker
from lambdas.models import settings
from lambdas.observability import logger, metrics, tracer
from lambdas.store.factory import job_store
from lambdas.store.queue import JobQueue

_COUNTED = {
    Outcome.SUCCEEDED: config.METRIC_SUCCEEDED,
    Outcome.WAITING: config.METRIC_SUCCEEDED,
    Outcome.RETRIED: config.METRIC_RETRIED,
    Outcome.RETRIED_LATER: config.METRIC_RETRIED,
    Outcome.CONTINUED: config.METRIC_RETRIED,  # counted with retries, as before it had its own outcome
}


@cache
def _worker() -> Worker:
    worker = settings.worker()
    register_job_types(worker.job_packages)
    queue = JobQueue(worker.queue_url, worker.job_queue_urls, worker.high_queue_urls)
    workflows = None
    if worker.workflow_function:  # a worker group with workflow types hands them to its durable function
        from lambdas.lifecycle.workflows.start import LambdaStarter

        workflows = LambdaStarter(worker.workflow_function)
    return Worker(worker, job_store(worker), queue, JobQueue(worker.dlq_url), workflows=workflows)


def _emit_metrics(results: list[MessageResult]) -> None:
    # Emitted here, on the handler's thread: the metrics buffer is not shared with the job threads.
    for outcome, count in Counter(r.outcome for r in results).items():
        if outcome in _COUNTED:
            metrics.add_metric(name=_COUNTED[outcome], unit=MetricUnit.Count, value=count)
    for job_type, deferred in Counter(r.job_type for r in results if r.outcome is Outcome.DEFERRED).items():
        _by_type(config.METRIC_DEFERRED, MetricUnit.Count, deferred, job_type or "-")
    for result in results:
        if result.duration_ms is None or result.job_type is None:
            continue
        _by_type(config.METRIC_DURATION, MetricUnit.Milliseconds, result.duration_ms, result.job_type)


def _by_type(name: str, unit: MetricUnit, value: float, job_type: str) -> None:
    with single_metric(
        name=name,
        unit=unit,
        value=value,
        namespace=metrics.namespace,
        default_dimensions={"service": config.SERVICE_NAME},
    ) as metric:
        metric.add_dimension(name="jobType", value=job_type)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # Imported here, not with the module: Powertools' data_classes package loads every event source's
    # classes, which this function's import need not pay; its first batch does.
    from aws_lambda_powertools.utilities.data_classes import SQSEvent

    records = SQSEvent(event).records if event.get("Records") else ()
    messages = [QueueMessage.from_record(record) for record in records]
    results = _worker().process_batch(messages, context.get_remaining_time_in_millis)
    _emit_metrics(results)
    outcomes = Counter(r.outcome.value for r in results)
    logger.info("batch processed", size=len(results), outcomes=dict(outcomes))
    return {"batchItemFailures": [{"itemIdentifier": r.message_id} for r in results if r.kept]}


startup.loaded()
