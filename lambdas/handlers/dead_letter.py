"""The `dead_letter` function: the dead-letter queue's consumer. Marks jobs dead and raises alerts."""

# First: the modules below load with the cycle collector off (see `startup`).
from lambdas.handlers import startup  # isort: split

from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSEvent, SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from lambdas import config
from lambdas.lifecycle.dead_letter import DeadLetter, DeadLetterConsumer, LetterVerdict
from lambdas.observability import logger, metrics, tracer
from lambdas.store.alert_groups import AlertGroups
from lambdas.store.alerts import Alerts
from lambdas.store.factory import job_store


class AlertPendingError(Exception):
    """The alert cannot be settled yet (another consumer holds its claim, the fan-out it belongs to
    is still running, or it is its group's timer); the letter returns after the queue's visibility
    timeout."""


@cache
def _consumer() -> DeadLetterConsumer:
    # The settings load with the first batch rather than the module: no one waits on a first alert.
    # They need no pydantic; a fan-out's alert does.
    from lambdas.models import settings

    dead_letter = settings.dead_letter()
    return DeadLetterConsumer(
        job_store(dead_letter),
        Alerts(dead_letter.alerts_topic_arn),
        AlertGroups(dead_letter.jobs_table),
        dead_letter.alert_window_seconds,
        counted=lambda: metrics.add_metric(name=config.METRIC_DEAD, unit=MetricUnit.Count, value=1),
    )


def _handle(record: SQSRecord) -> LetterVerdict:
    letter = DeadLetter.from_record(record)
    try:
        verdict = _consumer().handle(letter)
    except Exception:
        logger.exception("dead letter not handled; it stays on the queue", messageId=letter.message_id)
        raise
    if verdict is LetterVerdict.ALERT_PENDING:
        logger.info("alert claimed by another consumer; the letter stays on the queue")
        raise AlertPendingError(letter.message_id)
    if verdict is LetterVerdict.FANOUT_PENDING:
        logger.info("a dead delivery of a running fan-out; the letter stays until the fan-out finishes")
        raise AlertPendingError(letter.message_id)
    if verdict is LetterVerdict.GROUP_PENDING:
        logger.info("its group's alert waits for the window to end; the letter stays until then")
        raise AlertPendingError(letter.message_id)
    return verdict


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # One letter at a time, so two letters for one job in a batch never race. A letter that fails
    # (logged by `_handle`) stays on the queue; a batch whose every letter failed is reported like any
    # other, each letter listed, not raised. Powertools' batch utility would do the same, and load
    # asyncio and the Kafka, Kinesis and DynamoDB stream classes with this function (~16 ms of CPU).
    failed = []
    for record in SQSEvent(event).records if event.get("Records") else ():
        try:
            _handle(record)
        except Exception:
            failed.append({"itemIdentifier": record.message_id})
    return {"batchItemFailures": failed}


startup.loaded()
