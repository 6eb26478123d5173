"""Back-pressure and the per-host limit of webhook deliveries, through the worker.

A receiver that answers 429 or 503 with `Retry-After` pauses that client's deliveries to that URL until
then (not only the one that got the answer, and no other client's), and the deliveries wait `pending`
without spending attempts.
By default at most WEBHOOK_HOST_CONCURRENCY (10) deliveries to one host run at once (CDK context
`webhookHostConcurrency`).
"""

import pytest

from lambdas import config
from lambdas.jobs.types import webhook_delivery
from lambdas.jobs.types.webhook_delivery import delivery_id
from lambdas.lifecycle.attempt.limits import limit_of
from lambdas.models.limits import Limit
from lambdas.models.settings import WorkerSettings
from tests.support.webhook_receiver import Reply

pytestmark = pytest.mark.usefixtures("loopback_webhooks")


def test_deliveries_run_at_most_ten_at_once_per_host_by_default(stack) -> None:
    """Seen to fail with webhook_delivery's `limits=Limit(concurrency=..., key="host")` removed."""
    settings = WorkerSettings.load(stack.pipeline.env)
    limit = limit_of(webhook_delivery.JOB_TYPE, settings.job_limits)
    assert limit == Limit(concurrency=config.WEBHOOK_HOST_CONCURRENCY, key="host")
    assert config.WEBHOOK_HOST_CONCURRENCY == 10


def test_a_429_with_retry_after_pauses_that_clients_deliveries_to_that_url_only(
    stack, receiver, clock
) -> None:
    """Seen to fail with `Worker._later`'s `self._limits.pause(job, job_type, until)` skipped (the second
    delivery to the paused URL was sent), with `pause_of`'s scope without the owner (beta's delivery to
    the same URL held by alpha's receiver's answer), and with the paused `WaitingFor`'s reason `None`
    (the job's `waitingFor.reason` lost; sample 581628's `xǁWorkerǁ_later__mutmut_14`)."""
    pipeline = stack.pipeline
    receiver.script("/a", Reply(429, headers={"Retry-After": "60"}))

    def fan_out(endpoint: str, url: str, owner: str | None = None) -> str:
        body = {"eventType": "e", "data": {}, "endpoints": [{"id": endpoint, "url": receiver.url(url)}]}
        job_id = pipeline.submit("webhook_fanout", body, api_key_id=owner)
        pipeline.drain()
        return delivery_id(job_id, endpoint)

    first = pipeline.job(fan_out("a", "/a"))
    assert (first["status"], first["attempts"]) == ("pending", 0)
    assert first["waitingFor"]["limit"] == "paused"
    assert first["waitingFor"]["key"] == f"127.0.0.1:{receiver.port}"
    assert first["waitingFor"]["reason"] == "HTTP 429 with Retry-After: deliveries to this URL wait"

    # the same client's next delivery to that URL, in another fan-out: it waits, nothing is sent to it
    again = pipeline.job(fan_out("a2", "/a"))
    assert (again["status"], again["attempts"], again["waitingFor"]["limit"]) == ("pending", 0, "paused")
    assert [r.path for r in receiver.requests] == ["/a"]
    # another URL of that host, and another client's delivery to that URL, go on
    assert pipeline.job(fan_out("b", "/b"))["status"] == "done"
    theirs = pipeline.request("GET", f"/jobs/{fan_out('a3', '/a', owner='beta-key')}", api_key_id="beta-key")
    assert theirs.body["status"] == "done"
    assert [r.path for r in receiver.requests] == ["/a", "/b", "/a"]
