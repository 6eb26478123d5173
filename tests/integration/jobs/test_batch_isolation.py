"""One job cannot take down its batch (issue 19): a worker invocation runs up to ten jobs of any
clients at once, and a job that held it to its timeout or ran it out of memory would cost every one
of them an attempt. Each test runs a real batch through the worker handler, one bad job among good
ones: the good ones finish, the bad one's attempt ends with its own clear error."""

from pathlib import Path

import pytest

from lambdas import config
from lambdas.jobs import webhook_http
from lambdas.models import settings
from lambdas.store.deliveries import DeliveryLog
from tests.support import uploads
from tests.support.deliveries import every_attempt
from tests.support.webhook_receiver import Reply
from tests.unit.jobs.test_files import big_png

ASSETS = Path(__file__).resolve().parents[2] / "assets"


@pytest.mark.usefixtures("loopback_webhooks")
def test_a_receiver_trickling_its_answer_is_cut_at_the_deadline_and_the_batch_delivers(
    stack, receiver, monkeypatch
):
    """Seen to fail against `webhook_delivery.run` passing `total_timeout=99` to `webhook_http.post`
    (the trickle held the delivery its full 7 s, then read as delivered), and against `_Watchdog._fire`
    not cutting the sockets (the delivery was held 6.4 s)."""
    # given: a deadline of 2.5 s (the healthy receivers answer in milliseconds, with room for a loaded
    # machine), and a receiver that sends its 70-byte answer one byte per 0.1 s
    monkeypatch.setattr(webhook_http, "TOTAL_TIMEOUT_SECONDS", 2.5)
    receiver.script("/slow", Reply(200, body=b"x" * 25, trickle=0.1))
    endpoints = [{"id": "slow", "url": receiver.url("/slow")}] + [
        {"id": f"ep-{i}", "url": receiver.url(f"/ep/{i}")} for i in range(3)
    ]
    pipeline = stack.pipeline
    fanout_id = pipeline.submit("webhook_fanout", {"eventType": "e.t", "data": {}, "endpoints": endpoints})
    pipeline.run_worker()

    # when: the four deliveries run as one batch
    children = pipeline.receive(pipeline.queue_url)
    assert len(children) == 4
    pipeline.run_worker(children)

    # then
    log = {
        entry.endpoint_id: entry for entry in every_attempt(DeliveryLog(stack.deliveries_table), fanout_id)
    }
    assert {log[f"ep-{i}"].outcome for i in range(3)} == {"delivered"}
    slow = log["slow"]
    assert (slow.outcome, slow.http_status) == ("retry", None)
    assert slow.error == "timeout: no complete answer within the delivery's deadline of 2.5 s"
    assert slow.latency_ms < 5_000  # the whole answer takes 7 s to arrive
    assert pipeline.job(fanout_id)["children"]["delivered"] == 3


def test_an_image_needing_more_memory_than_the_worker_has_is_dead_and_the_batch_finishes(stack, monkeypatch):
    """Seen to fail against `DecodeBudget.reserve` without its `needed > self.limit_bytes` refusal
    (the bomb waited for memory that can never be free, and was retried instead of dead)."""
    # given: a worker of 300 MB (44 MB to spare for decoding) and a 40 KB PNG of 6.8 million RGBA
    # pixels (about 59 MB to decode) uploaded beside two ordinary images
    monkeypatch.setenv(config.ENV_FUNCTION_MEMORY_MB, "300")
    settings.reset()
    bomb = big_png(2600, 2600)
    assert len(bomb) < 50_000
    pipeline = stack.pipeline
    jobs = {
        name: pipeline.submit("process_file", {"key": _upload(stack, name, data)})
        for name, data in (
            ("bomb.png", bomb),
            ("landscape.jpg", None),
            ("transparent.png", None),
        )
    }

    # when: the three jobs run as one batch
    records = pipeline.receive(pipeline.queue_url_of("process_file"))
    assert len(records) == 3
    pipeline.run_worker(records)

    # then
    dead = pipeline.job(jobs["bomb.png"])
    assert (dead["status"], dead["attempts"]) == ("dead", 1)
    assert "decoding it needs about 59 MB; this worker can spare 44 MB for an image" in dead["lastError"]
    assert {pipeline.job(jobs[name])["status"] for name in ("landscape.jpg", "transparent.png")} == {"done"}


def _upload(stack, name: str, data: bytes | None) -> str:
    return uploads.upload(stack.bucket, name, (ASSETS / name).read_bytes() if data is None else data)
