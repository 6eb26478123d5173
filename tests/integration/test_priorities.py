"""Priorities: `priority` on a job and on a schedule's job, stored, shown, and routing a `high` job's
message to its worker group's high queue, which the worker drains as it drains its queue."""

import json
from typing import Any

import pytest

from lambdas.handlers import schedules as firing
from lambdas.lifecycle.requests import schedules
from tests.support.pipeline import Pipeline

pytestmark = pytest.mark.usefixtures("test_types")


def _bodies(pipeline: Pipeline, queue_url: str) -> list[dict[str, Any]]:
    return [json.loads(r["body"]) for r in pipeline.receive(queue_url)]


def test_a_high_job_is_stored_shown_and_sent_to_its_queues_high_queue_where_the_worker_runs_it(
    pipeline: Pipeline,
) -> None:
    """A backlog on the queue cannot hold it back: its message is on the high queue, which has a
    mapping of its own. Seen to fail with `JobQueue.url_for`'s `priority is Priority.HIGH` as `False`
    (the message went to the queue, behind the backlog)."""
    backlog = [pipeline.submit("test_echo", {"value": f"b{i}"}) for i in range(3)]
    job_id = pipeline.submit("test_echo", {"value": "now"}, priority="high")
    high_queue = pipeline.high_queue_urls[pipeline.queue_url]

    assert pipeline.visible(pipeline.queue_url) == len(backlog)
    assert pipeline.visible(high_queue) == 1
    shown = pipeline.job(job_id)
    assert shown["priority"] == "high"
    listed = pipeline.request("GET", "/jobs?limit=10").body["jobs"]
    assert {j["jobId"]: j["priority"] for j in listed} == {job_id: "high", **dict.fromkeys(backlog, "normal")}

    records = pipeline.receive(high_queue)
    assert [json.loads(r["body"]) for r in records] == [
        {"jobId": job_id, "type": "test_echo", "owner": shown_owner(pipeline, job_id), "priority": "high"}
    ]
    pipeline.run_worker(records)
    assert pipeline.job(job_id)["status"] == "done"
    assert [pipeline.job(j)["status"] for j in backlog] == ["pending"] * 3


def shown_owner(pipeline: Pipeline, job_id: str) -> str:
    from tests.support.stores import store_from_env

    job = store_from_env(pipeline.env).get(job_id)
    assert job is not None
    return job.owner


def test_a_normal_or_low_job_takes_the_queue_and_its_message_names_only_a_priority_that_is_not_normal(
    pipeline: Pipeline,
) -> None:
    low = pipeline.submit("test_echo", {"value": "later"}, priority="low")
    normal = pipeline.submit("test_echo", {"value": "plain"})

    bodies = {b["jobId"]: b for b in _bodies(pipeline, pipeline.queue_url)}
    assert bodies[low]["priority"] == "low"
    assert "priority" not in bodies[normal]
    assert pipeline.visible(pipeline.high_queue_urls[pipeline.queue_url]) == 0
    assert pipeline.job(normal)["priority"] == "normal"


def test_a_schedules_job_keeps_its_priority_through_create_patch_and_firing(pipeline: Pipeline) -> None:
    """Seen to fail with `fire`'s NewJob built without `priority=schedule.priority` (the fired job was
    normal)."""
    job = {"type": "test_echo", "payload": {"value": "night"}, "priority": "high"}
    created = pipeline.request(
        "POST", "/schedules", {"name": "n", "expression": "cron(0 2 * * ? *)", "job": job}
    )
    assert created.status == 201, created.body
    schedule_id = created.body["scheduleId"]
    assert created.body["job"]["priority"] == "high"

    parts = firing._parts()
    schedule = parts.schedules.get(created.body["owner"], schedule_id)
    assert schedule is not None
    fired = schedules.fire(
        parts.schedules, parts.store, parts.queue, schedule, 1_800_000_000_000, cap=parts.cap
    )
    assert fired.job is not None
    assert pipeline.job(fired.job.job_id)["priority"] == "high"
    assert pipeline.visible(pipeline.high_queue_urls[pipeline.queue_url]) == 1

    patched = pipeline.request("PATCH", f"/schedules/{schedule_id}", {"job": {**job, "priority": "low"}})
    assert patched.status == 200, patched.body
    assert patched.body["job"]["priority"] == "low"


def test_a_high_job_that_fails_is_retried_on_the_high_queue_it_came_from(pipeline: Pipeline) -> None:
    """The backoff is set on the message where it is (ChangeMessageVisibility on the queue the record
        names), so the retry stays out of reach of the backlog too. Seen to fail with
        `JobQueue.change_visibility`'s `url = high` as `pass` (the call went to the queue, where AWS refuses a
    receipt handle of another queue; moto accepts it, so the queue the call names is what is checked)."""
    from lambdas.store import clients

    seen: list[str] = []
    clients.client("sqs").meta.events.register(
        "provide-client-params.sqs.ChangeMessageVisibility",
        lambda params, **_: seen.append(params["QueueUrl"]),
    )
    job_id = pipeline.submit("test_flaky", {"failTimes": 1}, priority="high")
    high_queue = pipeline.high_queue_urls[pipeline.queue_url]

    response = pipeline.run_worker(pipeline.receive(high_queue))

    assert len(response["batchItemFailures"]) == 1  # kept, to come back after its backoff
    job = pipeline.job(job_id)
    assert (job["status"], job["attempts"], job["priority"]) == ("pending", 1, "high")
    assert seen == [high_queue]
