"""Retry policies: a job type's attempts, backoff and window (`JobType.retry`), the stack's override of
them (CDK context `retryPolicies`, the functions' RETRY_POLICIES), and retries that wait longer than SQS
can delay a message, which go through the `scheduled` state and the recovery sweep's hand-over."""

import dataclasses
import json
import random
from datetime import datetime
from typing import Any

import pytest

from lambdas import config
from lambdas.handlers import worker
from lambdas.jobs import registry
from lambdas.jobs.base import RetryPolicy
from lambdas.models import settings
from tests.support.pipeline import Pipeline
from tests.support.stores import Clock
from tests.support.transitions import Lines, transitions

pytestmark = pytest.mark.usefixtures("test_types")

DAY = 86_400


def _register(name: str, policy: RetryPolicy, like: str = "test_always_fail") -> str:
    """A test type that runs as `like` does, with `policy`."""
    registry.register(dataclasses.replace(registry.get(like), name=name, retry=policy))
    return name


@pytest.fixture
def visibility(pipeline: Pipeline) -> list[int]:
    from lambdas.store import clients

    seen: list[int] = []
    clients.client("sqs").meta.events.register(
        "provide-client-params.sqs.ChangeMessageVisibility",
        lambda params, **_: seen.append(params["VisibilityTimeout"]),
    )
    return seen


def _override(monkeypatch: pytest.MonkeyPatch, policies: dict[str, Any]) -> None:
    """The stack's `retryPolicies`, as the functions' environment carries it."""
    monkeypatch.setenv(config.ENV_RETRY_POLICIES, json.dumps(policies))
    settings.reset()
    worker._worker.cache_clear()


def _receive_count(pipeline: Pipeline) -> list[int]:
    answer = pipeline.sqs.receive_message(
        QueueUrl=pipeline.queue_url, AttributeNames=["ApproximateReceiveCount"], MaxNumberOfMessages=10
    )
    return [int(m["Attributes"]["ApproximateReceiveCount"]) for m in answer.get("Messages", [])]


def test_a_types_policy_sets_its_jobs_attempts_and_backoff(
    pipeline: Pipeline, visibility: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Broken lines, each alone: `retries`' `base = policy.backoff_base_seconds or base_seconds` as
    `base = base_seconds` (the first delay is the stack's 10 s); `max_attempts`' `return default` as
    `return config.DEFAULT_MAX_ATTEMPTS` (the job gets 5)."""
    monkeypatch.setattr(random, "random", lambda: 1.0)
    name = _register(
        "test_patient", RetryPolicy(attempts=12, backoff_base_seconds=60, backoff_cap_seconds=90)
    )
    job_id = pipeline.submit(name, {})

    records = pipeline.receive(pipeline.queue_url)
    pipeline.run_worker(records)
    pipeline.make_visible(records)
    pipeline.run_worker()

    assert visibility == [60, 90]  # the type's base, then its cap
    assert pipeline.job(job_id)["maxAttempts"] == 12


def test_a_caller_may_ask_up_to_the_policys_attempts_and_no_more(pipeline: Pipeline) -> None:
    """The policy raises the ceiling of `maxAttempts` from 10 to its attempts; a type without one keeps
    10. Broken line: `most = max(config.MAX_ATTEMPTS_LIMIT, default)` as `most = config.MAX_ATTEMPTS_LIMIT`."""
    name = _register("test_patient", RetryPolicy(attempts=25))
    assert pipeline.job(pipeline.submit(name, {}, maxAttempts=25))["maxAttempts"] == 25
    assert pipeline.job(pipeline.submit(name, {}, maxAttempts=3))["maxAttempts"] == 3
    refused = pipeline.request("POST", "/jobs", {"type": name, "payload": {}, "maxAttempts": 26})
    assert (refused.status, refused.body["error"]["code"]) == (400, "invalid_request")
    assert "at most 25" in refused.body["error"]["message"]
    plain = pipeline.request("POST", "/jobs", {"type": "test_echo", "payload": {}, "maxAttempts": 11})
    assert (plain.status, plain.body["error"]["code"]) == (400, "invalid_request")


def test_a_type_without_a_policy_retries_exactly_as_before(
    pipeline: Pipeline, visibility: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """5 attempts, the stack's backoff (base 10 s, doubling), the message kept for each retry. Broken
    line: `RetryPolicy`'s default `attempts` made 6 via `policy_attempts`' `or config.DEFAULT_MAX_ATTEMPTS`
    as `or 6`."""
    monkeypatch.setattr(random, "random", lambda: 1.0)
    job_id = pipeline.submit("test_always_fail", {})

    pipeline.drain()

    job = pipeline.job(job_id)
    assert (job["status"], job["attempts"], job["maxAttempts"]) == ("dead", 5, 5)
    assert visibility == [10, 20, 40, 80]
    assert job["lastError"].startswith("attempts exhausted (5/5)")


def test_the_stacks_override_applies_in_the_worker_and_the_api(
    pipeline: Pipeline, visibility: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Broken line: `_policy`'s `if name in overrides` as `if False` (the override is never read)."""
    monkeypatch.setattr(random, "random", lambda: 1.0)
    name = _register("test_patient", RetryPolicy(attempts=12, backoff_base_seconds=60))
    _override(monkeypatch, {name: {"attempts": 3, "backoffBaseSeconds": 7}})
    job_id = pipeline.submit(name, {})

    pipeline.run_worker()

    assert pipeline.job(job_id)["maxAttempts"] == 3
    assert visibility == [7]


def test_a_retry_after_two_hours_waits_scheduled_spends_one_attempt_and_is_never_redriven(
    pipeline: Pipeline,
    clock: Clock,
    visibility: list[int],
    monkeypatch: pytest.MonkeyPatch,
    log_lines: Lines,
) -> None:
    """A wait longer than SQS can delay a message is the job's start time: `scheduled`, its message
    deleted, handed to SQS by the recovery sweep when due, claimed then and not before. Broken lines,
    each alone: `scheduled = delay > config.SQS_MAX_DELAY_SECONDS` as `scheduled = False` (a 2-hour
    visibility timeout on a kept message); the store's `retry` writing `pending` whatever `scheduled`;
    `hand_over_due`'s log line with attempt 0 (as it was when only new jobs were `scheduled`)."""
    monkeypatch.setattr(random, "random", lambda: 1.0)
    name = _register(
        "test_outage",
        RetryPolicy(attempts=3, backoff_base_seconds=7200, backoff_cap_seconds=7200),
        like="test_flaky",
    )
    job_id = pipeline.submit(name, {"failTimes": 1})

    assert pipeline.run_worker() == {"batchItemFailures": []}  # the message is deleted, not kept

    job = pipeline.job(job_id)
    assert (job["status"], job["attempts"]) == ("scheduled", 1)
    assert visibility == []
    assert _receive_count(pipeline) == []  # no message at all while it waits
    clock.advance(7200 - config.SCHEDULE_HORIZON_SECONDS - 60)
    assert pipeline.run_recovery()["handedOver"] == 0  # not due within the horizon yet
    clock.advance(config.SCHEDULE_HORIZON_SECONDS + 60)
    assert pipeline.run_recovery()["handedOver"] == 1
    assert pipeline.job(job_id)["status"] == "pending"
    records = pipeline.receive(pipeline.queue_url)
    assert [json.loads(r["body"])["jobId"] for r in records] == [job_id]
    assert [r["attributes"]["ApproximateReceiveCount"] for r in records] == ["1"]  # a fresh message

    pipeline.run_worker(records)

    job = pipeline.job(job_id)
    assert (job["status"], job["attempts"]) == ("done", 2)
    assert pipeline.visible(pipeline.dlq_url) == 0
    moves = [(t[2], t[3], t[4]) for t in transitions(log_lines(), job_id)]
    assert moves == [
        ("new", "pending", 0),
        ("pending", "processing", 1),
        ("processing", "scheduled", 1),
        ("scheduled", "pending", 1),
        ("pending", "processing", 2),
        ("processing", "done", 2),
    ]


def test_a_job_past_its_window_dies_saying_so_with_one_alert(
    pipeline: Pipeline, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Retries two days apart in a 3-day window: the second comes as the window ends (one day later,
    not two), and its failure ends the job. Broken lines, each alone: `if left <= 0 or ...` as
    `if False` (it retries on to its 50 attempts); `delay = min(delay, math.ceil(left))` removed (the
    last retry comes a day after the window); `since = ...` as `since = now` (the window never passes)."""
    monkeypatch.setattr(random, "random", lambda: 1.0)
    policy = RetryPolicy(
        attempts=50, backoff_base_seconds=2 * DAY, backoff_cap_seconds=2 * DAY, window_seconds=3 * DAY
    )
    job_id = pipeline.submit(_register("test_outage", policy), {})
    first = clock()

    pipeline.run_worker()
    starts = []
    for _ in range(2):
        job = pipeline.job(job_id)
        assert job["status"] == "scheduled"
        starts.append(datetime.fromisoformat(job["runAt"]).timestamp() - first)
        clock.advance(starts[-1] - (clock() - first))
        assert pipeline.run_recovery()["handedOver"] == 1
        pipeline.run_worker()

    assert starts == [pytest.approx(2 * DAY, abs=1), pytest.approx(3 * DAY, abs=1)]
    job = pipeline.job(job_id)
    assert (job["status"], job["attempts"]) == ("dead", 3)
    assert job["lastError"].startswith("retry window of 3 days passed after 3 attempts: RuntimeError")
    pipeline.drain()
    assert len(pipeline.alerts()) == 1


def test_retries_past_the_tenth_attempt_wait_in_fresh_messages_so_sqs_never_redrives(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    """20 attempts outnumber the queue's maxReceiveCount (15): kept, one message would be redriven to
    the DLQ mid-way. Broken line: `if job.attempts < config.MAX_ATTEMPTS_LIMIT` as `if True`."""
    monkeypatch.setattr(random, "random", lambda: 0.0)
    name = _register("test_stubborn", RetryPolicy(attempts=20))
    job_id = pipeline.submit(name, {})

    pipeline.drain(rounds=60, letters_return=True)

    job = pipeline.job(job_id)
    assert (job["status"], job["attempts"]) == ("dead", 20)
    assert job["lastError"].startswith("attempts exhausted (20/20)")


def test_a_schedules_jobs_get_their_types_attempts_unless_it_names_its_own(pipeline: Pipeline) -> None:
    """As POST /jobs: the policy's attempts by default, the schedule's when given, up to the policy's.
    Broken lines, each alone: `_attempts`' `asked = ...` as `asked = job.max_attempts` (the model's 5
    whatever the type); `create_schedule`'s `max_attempts=_attempts(...)` as `request.job.max_attempts`."""
    name = _register("test_patient", RetryPolicy(attempts=25))

    def schedule(job: dict[str, Any]) -> Any:
        request = {"name": "nightly", "expression": "cron(0 2 * * ? *)", "job": {"type": name, **job}}
        return pipeline.request("POST", "/schedules", request)

    assert schedule({"payload": {}}).body["job"]["maxAttempts"] == 25
    assert schedule({"payload": {}, "maxAttempts": 3}).body["job"]["maxAttempts"] == 3
    refused = schedule({"payload": {}, "maxAttempts": 26})
    assert (refused.status, refused.body["error"]["code"]) == (400, "invalid_request")
