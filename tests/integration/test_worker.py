"""The worker's side of the lifecycle: claim, run, and exactly one outcome per attempt."""

import json
import math
import random
import threading
from typing import Any

import boto3
import pytest
from pydantic import BaseModel

from lambdas import config
from lambdas.handlers import worker
from lambdas.jobs import registry
from lambdas.jobs.base import JobContext, JobType
from local_runtime.context import LambdaContext
from tests.support.calls import record_params
from tests.support.pipeline import Pipeline

pytestmark = pytest.mark.usefixtures("test_types")


@pytest.fixture
def visibility_changes(pipeline: Pipeline) -> list[dict[str, Any]]:
    """The ChangeMessageVisibility calls the worker puts on the wire."""
    return record_params("sqs", "ChangeMessageVisibility")


def test_success_marks_the_job_done_with_its_result_and_deletes_the_message(pipeline: Pipeline) -> None:
    job_id = pipeline.submit("test_echo", {"value": "hello"})

    response = pipeline.run_worker()

    assert response == {"batchItemFailures": []}
    job = pipeline.job(job_id)
    assert (job["status"], job["attempts"], job["result"]) == ("done", 1, {"echo": "hello", "attempt": 1})
    assert pipeline.visible(pipeline.queue_url) == 0


def test_retry_goes_back_to_pending_with_the_computed_backoff_as_visibility(
    pipeline: Pipeline, visibility_changes: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(random, "random", lambda: 0.5)
    job_id = pipeline.submit("test_flaky", {"failTimes": 2})

    records = pipeline.receive(pipeline.queue_url)
    response = pipeline.run_worker(records)

    assert response == {"batchItemFailures": [{"itemIdentifier": records[0]["messageId"]}]}
    job = pipeline.job(job_id)
    assert job["status"] == "pending"
    assert job["lastError"] == "transient failure 1"
    assert job["nextAttemptAt"] is not None
    first_delay = math.ceil(0.5 * config.BACKOFF_BASE_SECONDS)
    assert [c["VisibilityTimeout"] for c in visibility_changes] == [first_delay]
    assert visibility_changes[0]["ReceiptHandle"] == records[0]["receiptHandle"]
    assert pipeline.receive(pipeline.queue_url) == []  # hidden for the backoff

    pipeline.make_visible(records)
    records = pipeline.receive(pipeline.queue_url)
    pipeline.run_worker(records)
    # The window doubles with each attempt: base * 2^(attempt - 1), full jitter inside it.
    assert visibility_changes[1]["VisibilityTimeout"] == math.ceil(0.5 * config.BACKOFF_BASE_SECONDS * 2)

    pipeline.make_visible(records)
    pipeline.run_worker()
    job = pipeline.job(job_id)
    assert (job["status"], job["attempts"], job["result"]) == ("done", 3, {"succeededOnAttempt": 3})


def test_retry_after_from_the_job_is_a_floor_for_the_delay(
    pipeline: Pipeline, visibility_changes: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(random, "random", lambda: 0.0)
    pipeline.submit("test_flaky", {"failTimes": 1, "retryAfter": 42})

    pipeline.run_worker()

    assert [c["VisibilityTimeout"] for c in visibility_changes] == [42]


def test_backoff_is_capped(pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(config.ENV_BACKOFF_CAP_SECONDS, "15")
    monkeypatch.setattr(random, "random", lambda: 1.0)
    seen: list[int] = []
    from lambdas.store import clients

    clients.client("sqs").meta.events.register(
        "provide-client-params.sqs.ChangeMessageVisibility",
        lambda params, **_: seen.append(params["VisibilityTimeout"]),
    )
    job_id = pipeline.submit("test_flaky", {"failTimes": 4}, maxAttempts=5)

    pipeline.drain()

    assert seen == [10, 15, 15, 15]
    assert pipeline.job(job_id)["status"] == "done"


def test_permanent_error_goes_dead_at_once_through_the_dead_letter_queue(pipeline: Pipeline) -> None:
    job_id = pipeline.submit("test_permanent", {"value": "bad input"})

    assert pipeline.run_worker() == {"batchItemFailures": []}

    job = pipeline.job(job_id)
    assert (job["status"], job["attempts"], job["lastError"]) == (
        "dead",
        1,
        "input can never succeed: bad input",
    )
    letters = pipeline.receive(pipeline.dlq_url)
    assert [json.loads(r["body"]) for r in letters] == [{"jobId": job_id}]
    assert letters[0]["messageAttributes"]["reason"]["stringValue"] == "input can never succeed: bad input"


def test_exhausted_job_goes_dead_with_one_alert(pipeline: Pipeline) -> None:
    job_id = pipeline.submit("test_always_fail", {}, maxAttempts=3)

    pipeline.drain()

    job = pipeline.job(job_id)
    assert job["status"] == "dead"
    assert job["attempts"] == 3
    assert job["lastError"].startswith(
        "attempts exhausted (3/3): RuntimeError: downstream unavailable (attempt 3)"
    )
    alerts = pipeline.alerts()
    assert len(alerts) == 1
    assert alerts[0]["jobId"] == job_id
    assert alerts[0]["jobType"] == "test_always_fail"
    assert alerts[0]["lastError"] == job["lastError"]


def test_duplicate_delivery_to_two_workers_runs_the_job_once(pipeline: Pipeline) -> None:
    job_id = pipeline.submit("test_sleep", {"seconds": 0.5})
    records = pipeline.receive(pipeline.queue_url)
    responses: list[dict[str, Any]] = []

    def invoke() -> None:
        responses.append(worker.handler({"Records": records}, LambdaContext(function_name="worker")))

    threads = [threading.Thread(target=invoke) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert responses == [{"batchItemFailures": []}] * 2
    job = pipeline.job(job_id)
    assert (job["status"], job["attempts"], job["result"]) == ("done", 1, {"slept": 0.5})


def test_message_for_a_finished_job_is_dropped(pipeline: Pipeline) -> None:
    job_id = pipeline.submit("test_echo", {})
    pipeline.run_worker()
    boto3.client("sqs").send_message(QueueUrl=pipeline.queue_url, MessageBody=json.dumps({"jobId": job_id}))

    assert pipeline.run_worker() == {"batchItemFailures": []}

    assert pipeline.job(job_id)["attempts"] == 1
    assert pipeline.visible(pipeline.dlq_url) == 0


@pytest.mark.parametrize(
    "body", ["not json at all", '{"jobId": "5d0c7b8e-0000-4000-8000-00000000dead"}', '["a"]']
)
def test_poison_message_reaches_the_dead_letter_queue_and_raises_an_alert_with_its_body(
    pipeline: Pipeline, body: str
) -> None:
    boto3.client("sqs").send_message(QueueUrl=pipeline.queue_url, MessageBody=body)

    assert pipeline.run_worker() == {"batchItemFailures": []}
    assert pipeline.visible(pipeline.queue_url) == 0
    pipeline.run_dead_letter()

    alerts = pipeline.alerts()
    assert len(alerts) == 1
    assert alerts[0]["rawBody"] == body
    assert pipeline.visible(pipeline.dlq_url) == 0


class _Nothing(BaseModel):
    pass


def test_a_batch_runs_concurrently(pipeline: Pipeline) -> None:
    # Ten jobs that can only finish once all ten are running at the same time.
    barrier = threading.Barrier(10, timeout=10)

    def rendezvous(payload: _Nothing, context: JobContext) -> dict[str, int]:
        barrier.wait()
        return {"attempt": context.attempt}

    registry.register(JobType("test_rendezvous", _Nothing, rendezvous))
    ids = [pipeline.submit("test_rendezvous", {}) for _ in range(10)]

    assert pipeline.run_worker() == {"batchItemFailures": []}
    assert {pipeline.job(i)["status"] for i in ids} == {"done"}


def test_a_batch_where_every_message_fails_returns_the_whole_failure_list(pipeline: Pipeline) -> None:
    for _ in range(10):
        pipeline.submit("test_always_fail", {})
    records = pipeline.receive(pipeline.queue_url)
    assert len(records) == 10

    response = pipeline.run_worker(records)

    assert sorted(f["itemIdentifier"] for f in response["batchItemFailures"]) == sorted(
        r["messageId"] for r in records
    )


def test_job_with_a_payload_its_type_no_longer_accepts_goes_dead_with_the_reason(pipeline: Pipeline) -> None:
    job_id = pipeline.submit("test_flaky", {"failTimes": 0})
    registry.unregister("test_flaky")

    class Stricter(BaseModel):
        fail_times: int
        must_have: str

    registry.register(JobType("test_flaky", Stricter, lambda p, c: None))
    pipeline.drain()

    job = pipeline.job(job_id)
    assert job["status"] == "dead"
    assert job["lastError"].startswith("invalid payload")
    assert len(pipeline.alerts()) == 1
