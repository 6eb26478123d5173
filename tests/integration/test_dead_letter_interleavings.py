"""Issue 18's interleavings, shuffled: a bulk retry over more than `maxReceiveCount` continuations
racing stale copies of its jobs' dead letters, the worker and the dead-letter consumer taking turns
in a seeded random order. Whatever the order: every job ends terminal, none is lost, none runs twice
in one life, the bulk job is never dead-lettered, and each death is counted in exactly one alert.

Seen to fail against either fix undone: the attempt fence (`letter.attempt_total is not None` branch
removed: copies killed retried jobs, which then ended dead) and continuations keeping their message
(the bulk job redriven, marked dead and alerted).
"""

import random
from collections import Counter
from typing import Any

import pytest

from lambdas import config
from lambdas.handlers import dead_letter, worker
from lambdas.jobs import registry
from lambdas.jobs.base import JobContext, JobType, PermanentJobError
from lambdas.lifecycle.ops_jobs import bulk
from lambdas.lifecycle.ops_jobs import job as ops
from lambdas.models.api import BulkRequest
from lambdas.models.caller import Caller
from lambdas.models.job import JobStatus
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue
from tests.integration.test_dead_letter_fences import copy_of
from tests.support.job_types import EchoPayload
from tests.support.pipeline import Pipeline
from tests.support.stores import Clock

JOBS = 20  # one page each: 20 deliveries of the bulk job, more than maxReceiveCount (15)
_runs: Counter[str] = Counter()


def _dies_first(_: EchoPayload, context: JobContext) -> dict[str, Any]:
    _runs[context.job_id] += 1
    if _runs[context.job_id] == 1:
        raise PermanentJobError("the first life dies")
    return {"life": _runs[context.job_id]}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_bulk_retry_racing_stale_letters_ends_with_every_job_done_and_one_alert_per_death(
    pipeline: Pipeline, store: JobStore, clock: Clock, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    _runs.clear()
    registry.register(JobType(name="test_dies_first", payload_model=EchoPayload, run=_dies_first))
    monkeypatch.setattr(ops, "PAGE_SIZE", 1)
    monkeypatch.setattr(ops, "RESERVE_MS", 10**9)
    rng = random.Random(seed)
    ids = [pipeline.submit("test_dies_first", {}) for _ in range(JOBS)]
    # first lives: every job dies, each letter is handled once (one alert per death) and kept as a copy
    while records := pipeline.receive(pipeline.queue_url):
        pipeline.deliver(pipeline.queue_url, records, worker.handler, "worker")
    copies, timers = [], []
    while letters := pipeline.receive(pipeline.dlq_url):
        copies.extend(letters)
        timers.extend(pipeline.deliver(pipeline.dlq_url, letters, dead_letter.handler, "dead_letter").kept)
    assert len(copies) == JOBS
    # the first death alerts at once; its group's window holds the others, and one letter waits for it
    assert [a["dead"] for a in pipeline.alerts()] == [1]
    assert len(timers) == 1
    clock.advance(config.ALERT_WINDOW_SECONDS)
    pipeline.make_visible(timers)
    pipeline.deliver(pipeline.dlq_url, pipeline.receive(pipeline.dlq_url), dead_letter.handler, "dead_letter")
    assert [a["dead"] for a in pipeline.alerts()] == [JOBS - 1]  # every death counted once in all
    clock.advance(1)
    bulk_job = bulk.start_bulk(
        store, JobQueue(pipeline.queue_url), Caller("ops", operator=True), "retry", BulkRequest()
    )

    # then, in a random order: a worker batch, a stale copy re-sent, a dead-letter batch
    for _ in range(400):
        step = rng.choice(("worker", "worker", "copy", "letters"))
        if step == "copy":
            copy_of(pipeline, rng.choice(copies))
        elif step == "worker" and (records := pipeline.receive(pipeline.queue_url, rng.randint(1, 10))):
            kept = pipeline.deliver(pipeline.queue_url, records, worker.handler, "worker").kept
            pipeline.make_visible(kept)
        elif step == "letters" and (letters := pipeline.receive(pipeline.dlq_url, rng.randint(1, 10))):
            pipeline.deliver(pipeline.dlq_url, letters, dead_letter.handler, "dead_letter")
        if store.get(bulk_job.job_id).status.finished and rng.random() < 0.05:  # type: ignore[union-attr]
            break
    pipeline.drain(rounds=100, letters_return=True)

    final = store.get(bulk_job.job_id)
    assert final is not None
    assert final.status is JobStatus.DONE, final.last_error
    assert final.attempt_total > 15
    jobs = store.get_many(ids)
    assert len(jobs) == JOBS  # none lost
    assert Counter(j.status for j in jobs) == {JobStatus.DONE: JOBS}
    assert _runs == {job_id: 2 for job_id in ids}  # one run per life, never a second in one
    assert pipeline.alerts() == []  # nothing since the first lives' two alerts
    assert pipeline.visible(pipeline.dlq_url) == 0
