"""Back-pressure and the per-host limit of webhook deliveries, through the worker.

A receiver that answers 429 or 503 with `Retry-After` pauses every delivery to its host until then
(not only the one that got the answer), and the deliveries wait `pending` without spending attempts.
By default at most WEBHOOK_HOST_CONCURRENCY (10) deliveries to one host run at once (CDK context
`webhookHostConcurrency`).
"""

import pytest

from lambdas import config
from lambdas.jobs.types import webhook_delivery
from lambdas.jobs.types.webhook_delivery import delivery_id
from lambdas.lifecycle.limits import limit_of
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


def test_a_429_with_retry_after_pauses_every_delivery_to_that_host(stack, receiver, clock) -> None:
    """Seen to fail with `Worker._later`'s `self._limits.pause(job, job_type, until)` skipped (the second
    fan-out's delivery reached the paused host), and with the paused `WaitingFor`'s reason `None` (the
    job's `waitingFor.reason` lost; sample 581628's `xǁWorkerǁ_later__mutmut_14`)."""
    pipeline = stack.pipeline
    receiver.script("/a", Reply(429, headers={"Retry-After": "60"}))
    first = pipeline.submit(
        "webhook_fanout",
        {"eventType": "e", "data": {}, "endpoints": [{"id": "a", "url": receiver.url("/a")}]},
    )
    pipeline.drain()
    waiting = pipeline.job(delivery_id(first, "a"))
    assert (waiting["status"], waiting["attempts"]) == ("pending", 0)
    assert waiting["waitingFor"]["limit"] == "paused"
    assert waiting["waitingFor"]["key"] == f"127.0.0.1:{receiver.port}"
    assert waiting["waitingFor"]["reason"] == "HTTP 429 with Retry-After: its host is paused"

    # another endpoint on the same host, in another fan-out: it waits too, and nothing is sent to it
    second = pipeline.submit(
        "webhook_fanout",
        {"eventType": "e", "data": {}, "endpoints": [{"id": "b", "url": receiver.url("/b")}]},
    )
    pipeline.drain()
    other = pipeline.job(delivery_id(second, "b"))
    assert (other["status"], other["attempts"]) == ("pending", 0)
    assert other["waitingFor"]["limit"] == "paused"
    assert [r.path for r in receiver.requests] == ["/a"]
