"""The `dead_letter` function: the dead-letter queue's consumer. Marks jobs dead and raises alerts."""

from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from lambdas import config
from lambdas.lifecycle.dead_letter import DeadLetter, DeadLetterConsumer, Verdict
from lambdas.models import settings
from lambdas.observability import logger, metrics, tracer
from lambdas.store.alerts import Alerts
from lambdas.store.factory import job_store


@cache
def _consumer() -> DeadLetterConsumer:
    dead_letter = settings.dead_letter()
    return DeadLetterConsumer(job_store(dead_letter), Alerts(dead_letter.alerts_topic_arn))


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    failures = []
    # One at a time: two letters for one job in a batch must not both raise its alert.
    for record in event.get("Records", []):
        letter = DeadLetter.from_record(record)
        try:
            verdict = _consumer().handle(letter)
        except Exception:
            logger.exception("dead letter not handled; it stays on the queue", messageId=letter.message_id)
            failures.append({"itemIdentifier": letter.message_id})
            continue
        if verdict in (Verdict.ALERTED, Verdict.POISON):
            metrics.add_metric(name=config.METRIC_DEAD, unit=MetricUnit.Count, value=1)
    return {"batchItemFailures": failures}
