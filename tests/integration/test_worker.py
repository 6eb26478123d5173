"""The worker's side of the lifecycle: claim, run, and exactly one outcome per attempt."""

import json
import math
import random
import threading
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from pydantic import BaseModel

from lambdas import config
from lambdas.handlers import worker
from lambdas.jobs import registry
from lambdas.jobs.base import (
    AwaitChildren,
    Capability,
    ContinueLater,
    CreatedChildren,
    JobContext,
    JobType,
    RetryableJobError,
)
from lambdas.models.job import JobStatus, NewJob
from lambdas.store import clients
from lambdas.store.jobs import JobStore
from local_runtime.context import LambdaContext
from tests.support.calls import record_params
from tests.support.job_types import EchoPayload
from tests.support.pipeline import Pipeline, fail_sends
from tests.support.stores import Clock

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


def test_an_attempts_outcome_asks_for_nothing_back(pipeline: Pipeline) -> None:
    """The worker uses no item its outcome wrote: done, a retry and dead each ask DynamoDB for nothing
    back (ReturnValues NONE), sparing the item's copy, its bytes and their parse. Seen to fail with
    the lone write asking for ALL_NEW again."""
    updates = record_params("dynamodb", "UpdateItem")
    ids = [
        pipeline.submit(t, p) for t, p in (("test_echo", {"value": "x"}), ("test_flaky", {"failTimes": 1}))
    ]
    ids.append(pipeline.submit("test_permanent", {}))

    pipeline.run_worker()

    statuses = {pipeline.job(job_id)["status"] for job_id in ids}
    assert statuses == {"done", "pending", "dead"}
    outcomes = [u for u in updates if u["ReturnValues"] != "ALL_OLD"]  # the claims ask for what they took
    assert len(updates) == 6
    assert [u["ReturnValues"] for u in outcomes] == ["NONE"] * 3


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
    assert [json.loads(r["body"])["jobId"] for r in letters] == [job_id]
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


# Worker promises that only show when something around the job fails: the DLQ, DynamoDB, the registry.
#
# Each test was first run against the one-line break its docstring names, seen to fail, then restored.


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
    """Broken line: `_run`'s `except registry.NotRegisteredError` returning `self._retry(...)` instead."""
    job_id = pipeline.submit("test_echo", {})
    registry.unregister("test_echo")  # a deploy removed the type while the job was queued

    assert pipeline.run_worker() == {"batchItemFailures": []}

    job = pipeline.job(job_id)
    assert (job["status"], job["attempts"], job["lastError"]) == ("dead", 1, "unknown job type 'test_echo'")
    pipeline.run_dead_letter()
    assert [a["jobId"] for a in pipeline.alerts()] == [job_id]


class _Needs(BaseModel):
    crm_url: str


def _never_runs(payload: EchoPayload, context: JobContext) -> dict[str, Any]:
    raise AssertionError("a type without its settings never runs")


def test_a_type_whose_settings_this_worker_lacks_dies_saying_so(pipeline: Pipeline) -> None:
    """A type added after synth (`make run` reloading a new module) has no settings in the worker's
    environment: its job dies with the reason, not stuck `processing` while every attempt crashes.
    Broken line: `_attempt`'s `except registry.UnusableTypeError` removed (the batch item fails)."""
    registry.register(
        JobType(name="test_needs_settings", payload_model=EchoPayload, run=_never_runs, settings_model=_Needs)
    )
    job_id = pipeline.submit("test_needs_settings", {"value": "x"})

    assert pipeline.run_worker() == {"batchItemFailures": []}

    job = pipeline.job(job_id)
    assert (job["status"], job["attempts"]) == ("dead", 1)
    assert job["lastError"].startswith("job type 'test_needs_settings': invalid settings:")
    assert "crm_url" in job["lastError"]


def test_a_type_whose_module_does_not_import_dies_saying_so(
    pipeline: Pipeline, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Broken lines, each alone: `_run`'s `except registry.UnusableTypeError` removed; `_load` letting
    the import's error through instead of `UnusableTypeError`."""
    job_id = pipeline.submit("test_echo", {"value": "x"})
    (tmp_path / "broken_type_mod.py").write_text("import no_such_dependency_here\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.unregister("test_echo")
    registry.register_module("test_echo", "broken_type_mod")  # this worker's copy lacks a dependency

    assert pipeline.run_worker() == {"batchItemFailures": []}

    job = pipeline.job(job_id)
    assert (job["status"], job["attempts"]) == ("dead", 1)
    assert job["lastError"] == (
        "job type 'test_echo' does not import here: ModuleNotFoundError: No module named 'no_such_dependency_here'"
    )


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
    other messages of the batch settle as they would; the fresh message names the job's owner as its
    message group, as every message does (fair queues). Seen to fail against `_continue` keeping its
    message (`change_visibility(..., 0)` and `Outcome.RETRIED`, the behaviour before issue 18), and
    against its `send(job.job_id, group=job.owner)` without the group (sample 581628's
    `xǁWorkerǁ_continue__mutmut_26`)."""
    registry.register(JobType("test_continues_in_batch", _Nothing, _continues))
    continuing = pipeline.submit("test_continues_in_batch", {}, api_key_id="alpha-key")
    pipeline.submit("test_echo", {})
    records = pipeline.receive(pipeline.queue_url)
    (old,) = [r["messageId"] for r in records if json.loads(r["body"])["jobId"] == continuing]

    assert pipeline.run_worker(records) == {"batchItemFailures": []}

    (fresh,) = pipeline.receive(pipeline.queue_url)
    assert json.loads(fresh["body"])["jobId"] == continuing
    assert fresh["messageId"] != old
    assert fresh["attributes"]["ApproximateReceiveCount"] == "1"
    assert fresh["attributes"]["MessageGroupId"] == "alpha-key"


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


# Every attempt that ran reports its duration, including one that used its time budget and continues,
# and one that handed its work to child jobs.
#
# Found by `make mutate` (mutants of `Worker._continue` and `Worker._await` no test failed on). Each
# test was first run against the one-line break its docstring names, seen to fail, then restored.


def _continues(_: Any, context: JobContext) -> ContinueLater:
    return ContinueLater({"step": 1})


def _awaits(_: Any, context: JobContext) -> AwaitChildren:
    child = NewJob(
        job_id=f"{context.job_id}-child",
        job_type="test_echo",
        payload={},
        max_attempts=1,
        parent_id=context.job_id,
    )
    context.create_children([child])
    return AwaitChildren(total=1)


@pytest.mark.parametrize(
    ("run", "status"),
    [(_continues, "pending"), (_awaits, "waiting")],
    ids=["continues later", "awaits its children"],
)
def test_an_attempt_that_hands_on_its_work_reports_its_duration(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str], run: Any, status: str
) -> None:
    """Broken lines, each alone: `_continue`'s and `_await`'s `MessageResult(..., job.job_type, elapsed)`
    without `elapsed`."""
    registry.register(
        JobType(
            name="test_hands_on", payload_model=EchoPayload, run=run, uses=frozenset({Capability.CHILDREN})
        )
    )
    job_id = pipeline.submit("test_hands_on", {})
    capsys.readouterr()

    pipeline.run_worker()

    assert pipeline.job(job_id)["status"] == status
    durations = _emitted(capsys.readouterr().out, config.METRIC_DURATION)
    assert [dimensions["jobType"] for _, dimensions, _ in durations] == ["test_hands_on"]


def _fails(_: Any, context: JobContext) -> None:
    raise RetryableJobError("the partner is down")


def test_an_attempt_that_fails_its_last_try_reports_its_duration(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seen to fail against `_retry`'s `self._dead(message, job, exhausted, started, recorded)` with
    `None` for `started` (sample 581628's `xǁWorkerǁ_retry__mutmut_6`: no duration metric)."""
    registry.register(JobType(name="test_fails", payload_model=EchoPayload, run=_fails))
    job_id = pipeline.submit("test_fails", {}, maxAttempts=1)
    capsys.readouterr()

    pipeline.run_worker()

    assert pipeline.job(job_id)["status"] == "dead"
    durations = _emitted(capsys.readouterr().out, config.METRIC_DURATION)
    assert [dimensions["jobType"] for _, dimensions, _ in durations] == ["test_fails"]


def test_an_attempt_that_fails_and_is_retried_reports_a_retry_and_its_duration(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seen to fail against `_retry`'s `logger.info("retry scheduled", ...)` without its message (sample
    581628's `xǁWorkerǁ_retry__mutmut_57`: a TypeError after the retry was written, so the attempt
    reported an error, and neither a retry nor its duration)."""
    registry.register(JobType(name="test_fails", payload_model=EchoPayload, run=_fails))
    job_id = pipeline.submit("test_fails", {}, maxAttempts=2)
    capsys.readouterr()

    pipeline.run_worker()

    assert (pipeline.job(job_id)["status"], pipeline.job(job_id)["attempts"]) == ("pending", 1)
    out = capsys.readouterr().out
    retried = _emitted(out, config.METRIC_RETRIED)
    assert [value for _, _, value in retried] == [1]
    assert [dimensions["jobType"] for _, dimensions, _ in _emitted(out, config.METRIC_DURATION)] == [
        "test_fails"
    ]


# What the worker's job context lets a job type do, through a real attempt: create child jobs (and
# learn how many it wrote now), and run an operator's bulk action.
#
# Found by `make mutate` (mutants of `WorkerCapabilities._create_children` and `_bulk_action`: no test
# ran a bulk action through the worker). Each test was first run against the one-line break its
# docstring names, seen to fail, then restored.


class _Nothing(BaseModel):
    pass


def test_create_children_says_how_many_it_wrote_now_and_a_repeat_writes_none(pipeline: Pipeline) -> None:
    """Broken line: `_create_children`'s `CreatedChildren(created=len(created), ...)` with `None`."""
    reported: list[CreatedChildren] = []

    def fan_out_then_fail_once(payload: _Nothing, context: JobContext) -> dict[str, int]:
        children = [
            NewJob(job_id=f"{context.job_id}-{n}", job_type="test_echo", payload={}, max_attempts=1)
            for n in range(2)
        ]
        reported.append(context.create_children(children))
        if context.attempt == 1:
            raise RetryableJobError("failed after writing its children")
        return {}

    registry.register(
        JobType("test_fan_out_twice", _Nothing, fan_out_then_fail_once, uses=frozenset({Capability.CHILDREN}))
    )
    job_id = pipeline.submit("test_fan_out_twice", {})
    first = pipeline.receive(pipeline.queue_url)
    pipeline.run_worker(first)
    pipeline.make_visible(first)  # its backoff ends
    # its retry, alone: the children's own messages wait
    pipeline.run_worker(
        [r for r in pipeline.receive(pipeline.queue_url) if json.loads(r["body"])["jobId"] == job_id]
    )

    assert reported == [CreatedChildren(created=2, unsent=0), CreatedChildren(created=0, unsent=0)]


def test_an_operators_bulk_retry_is_run_by_the_worker(
    pipeline: Pipeline, store: JobStore, clock: Clock
) -> None:
    """The ops job type is the lifecycle's own (`lifecycle/ops_jobs/job.py`), run by the worker with its store.
    Broken line: `bulk.ops_job_type`'s `run_ops_job(store, queue, context.job_id, context.attempt, ...)` without
    `context.attempt` (the bulk job raises, is retried, and goes dead having retried nothing); first
    seen against the same break in the former `WorkerCapabilities._bulk_action`."""
    dead = store.put_new(NewJob(job_id="gone", job_type="test_echo", payload={}, max_attempts=1, owner="a"))
    store.fail(store.claim(dead.job_id, 60), "boom")
    clock.advance(1)
    operator = pipeline.env[config.ENV_OPERATOR_KEY_ID]
    started = pipeline.request("POST", "/jobs/retry", {"limit": 10}, api_key_id=operator)
    assert started.status == 202, started.body

    pipeline.drain()

    bulk = pipeline.request("GET", f"/jobs/{started.body['jobId']}", api_key_id=operator).body
    assert bulk["status"] == "done", bulk
    retried = store.get(dead.job_id)
    assert retried is not None
    assert (retried.status, retried.result) == (JobStatus.DONE, {"echo": "ok", "attempt": 1})


def _mails_undeclared(_: Any, context: JobContext) -> None:
    context.send_email({"Destination": {"ToAddresses": ["a@example.com"]}})


def _reads_uploads_undeclared(_: Any, context: JobContext) -> None:
    context.uploads.head("uploads/someone-elses")


@pytest.mark.parametrize(
    ("run", "capability"), [(_mails_undeclared, "email"), (_reads_uploads_undeclared, "uploads")]
)
def test_a_type_that_uses_a_capability_it_did_not_declare_dies_saying_which(
    pipeline: Pipeline, run: Any, capability: str
) -> None:
    """Deployed, its function's role would refuse the call; moto would not, so the context refuses it
    and the job is `dead` at once, naming the capability. Seen to fail with `WorkerCapabilities.context`
    giving every capability whatever `uses` says (the email was sent through moto)."""
    registry.register(JobType(name="test_undeclared", payload_model=EchoPayload, run=run))
    job_id = pipeline.submit("test_undeclared", {}, maxAttempts=3)

    pipeline.run_worker()

    job = pipeline.job(job_id)
    assert (job["status"], job["attempts"]) == ("dead", 1)
    assert f"uses {capability!r} without declaring it" in job["lastError"]
