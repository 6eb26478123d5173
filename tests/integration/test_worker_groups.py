"""A job of a type with a worker function of its own goes to that function's queue, from every sender,
and is run there; the shared queue never sees it (docs/internals/README.md, worker groups)."""

import json

import pytest

from lambdas import config
from lambdas.models import settings
from tests.support.pipeline import Pipeline, fail_sends
from tests.support.stores import Clock, store_from_env

pytestmark = pytest.mark.usefixtures("test_types")


@pytest.fixture
def routed(pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch) -> str:
    """test_echo routed to process_file's worker group, as the stack routes a type asking the same."""
    group_queue = pipeline.queue_url_of("process_file")
    assert group_queue != pipeline.queue_url
    routes = {**json.loads(pipeline.env[config.ENV_JOB_QUEUE_URLS]), "test_echo": group_queue}
    monkeypatch.setenv(config.ENV_JOB_QUEUE_URLS, json.dumps(routes))
    settings.reset()
    return group_queue


def _queued(pipeline: Pipeline, queue_url: str) -> list[str]:
    """The jobs the queue's messages name (the messages are taken off it)."""
    records = pipeline.receive(queue_url)
    for record in records:
        pipeline.sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=record["receiptHandle"])
    return [json.loads(r["body"])["jobId"] for r in records]


def test_a_submitted_job_goes_to_its_types_queue_and_runs_in_its_worker(
    pipeline: Pipeline, routed: str
) -> None:
    """Seen to fail with submit sending to its own queue (`send_job` sending to `self.url`, not `self.for_type(job.job_type).url`)."""
    job_id = pipeline.submit("test_echo", {"value": "routed"})

    assert (pipeline.visible(pipeline.queue_url), pipeline.visible(routed)) == (0, 1)
    pipeline.run_worker()
    assert pipeline.job(job_id)["status"] == "done"


def test_recovery_re_sends_a_lost_message_to_its_types_queue(
    pipeline: Pipeline, routed: str, monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    """Seen to fail with the sweep's re-send going to the recovery function's QUEUE_URL."""
    fail_sends()
    job_id = pipeline.submit("test_echo", {"value": "lost"})
    from lambdas.handlers import recovery
    from lambdas.store import clients

    clients.reset()  # the outage is over
    monkeypatch.setenv(config.ENV_RECOVERY_GRACE_SECONDS, "0")
    settings.reset()
    recovery._sweeper.cache_clear()
    clock.advance(1)
    assert pipeline.run_recovery()["requeuedPending"] == 1

    assert _queued(pipeline, pipeline.queue_url) == []
    assert _queued(pipeline, routed) == [job_id]


def test_a_retried_job_goes_back_to_its_types_queue(pipeline: Pipeline, routed: str) -> None:
    """Seen to fail with `fan_out.announce` sending to the API's own queue."""
    dead = pipeline.submit("test_echo", {"value": "again"}, maxAttempts=1)
    _queued(pipeline, routed)
    store = store_from_env(pipeline.env)
    store.fail(store.claim(dead, 60), "gone")
    assert pipeline.request("POST", f"/jobs/{dead}/retry").status == 202

    assert _queued(pipeline, pipeline.queue_url) == []
    assert _queued(pipeline, routed) == [dead]
