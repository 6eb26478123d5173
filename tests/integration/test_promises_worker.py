"""Worker promises that only show when something around the job fails: the DLQ, DynamoDB, the registry.

Each test was first run against the one-line break its docstring names, seen to fail, then restored.
"""

import json
import random
from typing import Any

import pytest
from botocore.exceptions import ClientError
from pydantic import BaseModel

from lambdas import config
from lambdas.jobs import registry
from lambdas.jobs.base import ContinueLater, JobContext, JobType
from lambdas.store import clients
from tests.support.pipeline import Pipeline, fail_sends
from tests.support.stores import Clock

pytestmark = pytest.mark.usefixtures("test_types")


def _refuse(operation: str) -> Any:
    def refuse(**_: object) -> None:
        raise ClientError({"Error": {"Code": "InternalServerError", "Message": "injected"}}, operation)

    return refuse


def test_a_dead_job_whose_forward_to_the_dlq_failed_is_forwarded_on_redelivery(pipeline: Pipeline) -> None:
    """Broken line: `_not_claimed`'s `job.status is JobStatus.DEAD and not job.alerted` without `not`."""
    job_id = pipeline.submit("test_permanent", {"value": "never"})

    def refuse_dlq(params: dict[str, Any], **_: object) -> None:
        if params["QueueUrl"] == pipeline.dlq_url:
            _refuse("SendMessage")()

    # given the job dies while the dead-letter queue refuses messages
    clients.client("sqs").meta.events.register("provide-client-params.sqs.SendMessage", refuse_dlq)
    records = pipeline.receive(pipeline.queue_url)
    response = pipeline.run_worker(records)
    assert response == {"batchItemFailures": [{"itemIdentifier": records[0]["messageId"]}]}
    assert pipeline.job(job_id)["status"] == "dead"
    assert pipeline.visible(pipeline.dlq_url) == 0
    clients.reset()  # the outage is over

    # when SQS delivers the kept message again
    pipeline.make_visible(records)
    assert pipeline.run_worker() == {"batchItemFailures": []}
    pipeline.run_dead_letter()

    # then the dead job's alert is raised once, with its reason
    alerts = pipeline.alerts()
    assert [(a["jobId"], a["lastError"]) for a in alerts] == [(job_id, "input can never succeed: never")]
    assert pipeline.visible(pipeline.queue_url) == 0


def test_an_unknown_job_type_at_run_time_goes_dead_at_once_not_retried(pipeline: Pipeline) -> None:
    """Broken line: `_run`'s `except registry.UnknownJobTypeError` returning `self._retry(...)` instead."""
    job_id = pipeline.submit("test_echo", {})
    registry.unregister("test_echo")  # a deploy removed the type while the job was queued

    assert pipeline.run_worker() == {"batchItemFailures": []}

    job = pipeline.job(job_id)
    assert (job["status"], job["attempts"], job["lastError"]) == ("dead", 1, "unknown job type 'test_echo'")
    pipeline.run_dead_letter()
    assert [a["jobId"] for a in pipeline.alerts()] == [job_id]


def test_a_retry_comes_back_when_its_backoff_ends_not_the_queues_visibility_timeout(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Broken lines, each alone: `JobQueue.change_visibility`'s `QueueUrl=self.url` as `QueueUrl=None`;
    its `max(0, ...)` as `max(1, ...)` (the backoff never reaches SQS, or is never zero)."""
    monkeypatch.setattr(random, "random", lambda: 0.0)  # full jitter drew a backoff of zero seconds
    job_id = pipeline.submit("test_flaky", {"failTimes": 1})
    pipeline.run_worker()
    assert pipeline.job(job_id)["status"] == "pending"

    again = pipeline.receive(pipeline.queue_url)  # at once, not after the queue's visibility timeout

    assert [json.loads(r["body"])["jobId"] for r in again] == [job_id]
    assert pipeline.run_worker(again) == {"batchItemFailures": []}
    assert (pipeline.job(job_id)["status"], pipeline.job(job_id)["attempts"]) == ("done", 2)


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("not json at all", "body is not JSON"),
        ('["a"]', "body has no string jobId"),
        ('{"jobId": ""}', "body has no string jobId"),
        ('{"jobId": 7}', "body has no string jobId"),
    ],
)
def test_a_poison_alert_says_why_the_message_names_no_job(pipeline: Pipeline, body: str, why: str) -> None:
    """Broken line: `parse_job_message`'s `raise MalformedMessageError("body is not JSON")` without its reason."""
    pipeline.sqs.send_message(QueueUrl=pipeline.queue_url, MessageBody=body)

    pipeline.run_worker()
    pipeline.run_dead_letter()

    (alert,) = pipeline.alerts()
    assert (alert["rawBody"], alert["reason"]) == (body, f"unreadable message: {why}; {why}")


class _Nothing(BaseModel):
    pass


def test_an_attempt_that_cannot_record_its_outcome_keeps_its_message(
    pipeline: Pipeline, clock: Clock
) -> None:
    """Broken line: `_KEEP_MESSAGE = {Outcome.RETRIED, Outcome.ERROR}` without `Outcome.ERROR`."""

    def outage_while_running(payload: _Nothing, context: JobContext) -> dict[str, int]:
        if context.attempt == 1:  # DynamoDB goes away while the first attempt runs
            clients.client("dynamodb").meta.events.register(
                "before-call.dynamodb.UpdateItem", _refuse("UpdateItem")
            )
        return {"attempt": context.attempt}

    registry.register(JobType("test_outage", _Nothing, outage_while_running))
    job_id = pipeline.submit("test_outage", {})
    records = pipeline.receive(pipeline.queue_url)

    # when the attempt's outcome cannot be written
    response = pipeline.run_worker(records)

    # then its message is reported failed, so SQS keeps it and delivers it again
    assert response == {"batchItemFailures": [{"itemIdentifier": records[0]["messageId"]}]}
    clients.reset()
    assert pipeline.job(job_id)["status"] == "processing"
    # ...and once the first attempt's lease has run out, the redelivery finishes the job
    clock.advance(int(pipeline.env[config.ENV_LEASE_SECONDS]) + 1)
    pipeline.make_visible(records)
    assert pipeline.run_worker() == {"batchItemFailures": []}
    job = pipeline.job(job_id)
    assert (job["status"], job["result"]) == ("done", {"attempt": 2})


def _emitted(output: str, name: str) -> list[tuple[str, dict[str, str], float]]:
    """(namespace, dimensions, value) of every EMF record in `output` that carries metric `name`."""
    found = []
    for line in output.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or "_aws" not in record:
            continue
        for directive in record["_aws"]["CloudWatchMetrics"]:
            if name not in [m["Name"] for m in directive["Metrics"]]:
                continue
            dimensions = {d: record[d] for group in directive["Dimensions"] for d in group}
            values = record[name] if isinstance(record[name], list) else [record[name]]
            found.append((directive["Namespace"], dimensions, float(sum(values))))
    return found


def test_the_dead_job_metric_the_alarm_watches_is_emitted_once_per_dead_job(
    pipeline: Pipeline, template: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """Broken line: the dead_letter handler's `metrics.add_metric(name=config.METRIC_DEAD, ...)` removed."""
    (alarm,) = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::CloudWatch::Alarm" and r["Properties"].get("MetricName") == config.METRIC_DEAD
    ]
    watched = (alarm["Namespace"], {d["Name"]: d["Value"] for d in alarm["Dimensions"]})
    job_id = pipeline.submit("test_permanent", {})
    pipeline.run_worker()
    # a second letter for the same job (a redrive racing the worker's forward) must not count twice
    pipeline.sqs.send_message(QueueUrl=pipeline.dlq_url, MessageBody=json.dumps({"jobId": job_id}))
    capsys.readouterr()

    pipeline.drain()

    emitted = _emitted(capsys.readouterr().out, config.METRIC_DEAD)
    assert [(namespace, dimensions) for namespace, dimensions, _ in emitted] == [watched] * len(emitted)
    assert sum(value for _, _, value in emitted) == 1


def _continues(payload: _Nothing, context: JobContext) -> ContinueLater:
    return ContinueLater({"step": 1})


def test_a_job_that_continues_goes_on_in_a_fresh_message_and_settles_its_batch(pipeline: Pipeline) -> None:
    """A continuation is a new message (its receive count starts again), the old one deleted, and the
    other messages of the batch settle as they would. Seen to fail against `_continue` keeping its
    message (`change_visibility(..., 0)` and `Outcome.RETRIED`, the behaviour before issue 18)."""
    registry.register(JobType("test_continues_in_batch", _Nothing, _continues))
    continuing = pipeline.submit("test_continues_in_batch", {})
    pipeline.submit("test_echo", {})
    records = pipeline.receive(pipeline.queue_url)
    (old,) = [r["messageId"] for r in records if json.loads(r["body"])["jobId"] == continuing]

    assert pipeline.run_worker(records) == {"batchItemFailures": []}

    (fresh,) = pipeline.receive(pipeline.queue_url)
    assert json.loads(fresh["body"])["jobId"] == continuing
    assert fresh["messageId"] != old
    assert fresh["attributes"]["ApproximateReceiveCount"] == "1"


def test_a_continuation_whose_send_fails_keeps_its_own_message(pipeline: Pipeline) -> None:
    """Nothing lost when the fresh message cannot be sent: the old one is made visible again and kept
    (reported failed). Seen to fail (the batch reported clean, the job pending with no message) with
    `_continue`'s fallback returning `Outcome.CONTINUED`."""
    registry.register(JobType("test_continues_in_batch", _Nothing, _continues))
    continuing = pipeline.submit("test_continues_in_batch", {})
    (record,) = pipeline.receive(pipeline.queue_url)
    fail_sends()

    assert pipeline.run_worker([record]) == {"batchItemFailures": [{"itemIdentifier": record["messageId"]}]}

    clients.reset()
    (again,) = pipeline.receive(pipeline.queue_url)  # visible at once
    assert (again["messageId"], json.loads(again["body"])["jobId"]) == (record["messageId"], continuing)
