"""Dead jobs alert by group: one alert per (type, owner) per window, the first at once; a fan-out is one
alert whenever its children die (lambdas/lifecycle/sweeps/dead_letter.py, lambdas/store/alert_groups.py)."""

import uuid
from typing import Any

import pytest
from pydantic import BaseModel

from lambdas import config
from lambdas.handlers import dead_letter, worker
from lambdas.jobs import registry
from lambdas.jobs.base import AwaitChildren, Capability, JobContext, JobType, RetryableJobError
from lambdas.models.job import NewJob
from lambdas.store import clients
from tests.support.pipeline import Pipeline
from tests.support.stores import Clock

pytestmark = pytest.mark.usefixtures("test_types")

OUTAGE = 500
_DYNAMODB_OPERATIONS = (
    "GetItem",
    "UpdateItem",
    "PutItem",
    "Query",
    "Scan",
    "BatchGetItem",
    "TransactWriteItems",
)


def _record_dynamodb() -> list[str]:
    """Every DynamoDB operation the functions' client makes from now on, by name."""
    seen: list[str] = []
    events = clients.client("dynamodb").meta.events
    for operation in _DYNAMODB_OPERATIONS:
        events.register(
            f"provide-client-params.dynamodb.{operation}", lambda op=operation, **_: seen.append(op)
        )
    return seen


def _letters(pipeline: Pipeline) -> tuple[int, list[dict[str, Any]]]:
    """Hand every letter on the dead-letter queue to its consumer once: how many, and those it kept."""
    handled, kept = 0, []
    while letters := pipeline.receive(pipeline.dlq_url):
        handled += len(letters)
        kept.extend(pipeline.deliver(pipeline.dlq_url, letters, dead_letter.handler, "dead_letter").kept)
    return handled, kept


@pytest.mark.timeout(600)  # 500 jobs through the API, the worker and the consumer: 90 s on an idle machine
def test_500_jobs_dying_at_once_send_two_alerts_counting_every_one_at_a_cost_per_job(
    pipeline: Pipeline, clock: Clock
) -> None:
    """An outage kills 500 jobs of one type and client, and one of another type: the first death of
    each quiet group alerts at once, the other 499 are one alert when the window ends, with their
    count and the first five ids and errors; the consumer's DynamoDB calls are a few per letter, never
    a query or a scan. Seen to fail with the window ignored (`GroupState.sendable` true whatever
    `windowEnds` says, and `claim`'s condition on it dropped: 500 alerts)."""
    ids = [pipeline.submit("test_permanent", {"value": str(i)}) for i in range(OUTAGE)]
    other = pipeline.submit("test_always_fail", {"value": "x"}, maxAttempts=1)
    while records := pipeline.receive(pipeline.queue_url):
        pipeline.deliver(pipeline.queue_url, records, worker.handler, "worker")
    calls = _record_dynamodb()

    handled, kept = _letters(pipeline)

    assert handled == OUTAGE + 1
    alerts = pipeline.alerts()
    assert sorted((a["jobType"], a["dead"]) for a in alerts) == [
        ("test_always_fail", 1),
        ("test_permanent", 1),
    ]
    assert {a["jobId"] for a in alerts} <= {*ids, other}
    assert len(kept) == 1  # the group's timer: one letter waits for the window, the others are done
    assert not {"Query", "Scan"} & set(calls)
    assert len(calls) <= 6 * handled, len(calls)

    # when the window is over and the timer letter comes back
    clock.advance(config.ALERT_WINDOW_SECONDS)
    pipeline.make_visible(kept)
    assert _letters(pipeline) == (1, [])

    (summary,) = pipeline.alerts()
    assert summary["subject"].startswith(f"offload: {OUTAGE - 1} jobs test_permanent dead")
    assert (summary["jobType"], summary["dead"], summary["windowSeconds"]) == (
        "test_permanent",
        OUTAGE - 1,
        300,
    )
    assert len(summary["firstDead"]) == 5
    assert {d["jobId"] for d in summary["firstDead"]} <= set(ids)
    assert all(d["lastError"].startswith("input can never succeed: ") for d in summary["firstDead"])
    assert pipeline.visible(pipeline.dlq_url) == 0


def test_a_death_in_a_quiet_group_after_its_window_alerts_at_once(pipeline: Pipeline, clock: Clock) -> None:
    """Seen to fail with `claim` moving `windowEnds` by the window twice (the second death waited)."""
    first = pipeline.submit("test_permanent", {"value": "1"})
    pipeline.run_worker()
    _letters(pipeline)
    clock.advance(config.ALERT_WINDOW_SECONDS)

    second = pipeline.submit("test_permanent", {"value": "2"})
    pipeline.run_worker()
    assert _letters(pipeline) == (1, [])

    assert [a["jobId"] for a in pipeline.alerts()] == [first, second]


class _SpawnPayload(BaseModel):
    children: int


def _spawn_then_fail(payload: _SpawnPayload, context: JobContext) -> AwaitChildren:
    """Creates its children, and its first attempt then fails: they run before it waits."""
    context.create_children(
        [
            NewJob(
                job_id=str(uuid.uuid5(uuid.UUID(context.job_id), str(i))),
                job_type="test_permanent",
                payload={"value": str(i)},
                max_attempts=1,
                parent_id=context.job_id,
            )
            for i in range(payload.children)
        ]
    )
    if context.attempt == 1:
        raise RetryableJobError("the parent's attempt failed after spawning")
    return AwaitChildren(total=payload.children)


def test_children_that_die_before_their_parent_waits_are_still_one_alert(pipeline: Pipeline) -> None:
    """Issue 38's outage case: the parent's attempt fails after its children were sent, they all die
    before it waits. Seen to fail with `_raise`'s `FANOUT_PENDING` for a parent not yet finished
    removed (the children alerted as their own group: two alerts, neither the fan-out's). The type
    declares `uses={Capability.CHILDREN}`: since least privilege (i38-iam) a type that creates
    children without declaring it dies on its first attempt, before any child is sent."""
    spawning = JobType(
        "test_spawn_then_fail", _SpawnPayload, _spawn_then_fail, uses=frozenset({Capability.CHILDREN})
    )
    registry.register(spawning)
    parent_id = pipeline.submit("test_spawn_then_fail", {"children": 20})
    first_attempt = pipeline.receive(pipeline.queue_url)
    pipeline.run_worker(first_attempt)
    assert pipeline.job(parent_id)["status"] == "pending"  # its retry waits out its backoff
    while records := pipeline.receive(pipeline.queue_url):
        pipeline.deliver(pipeline.queue_url, records, worker.handler, "worker")

    # the children are dead before their parent waits: their letters wait for it
    handled, kept = _letters(pipeline)
    assert (handled, len(kept), pipeline.alerts()) == (20, 20, [])

    pipeline.make_visible(first_attempt + kept)  # the backoff and the letters' visibility pass
    pipeline.drain(letters_return=True)  # the parent runs again, waits, and finds its children finished

    assert pipeline.job(parent_id)["status"] == "done"
    (alert,) = pipeline.alerts()
    assert alert["subject"] == f"offload: 20 of 20 dead in fan-out {parent_id}"
    assert pipeline.visible(pipeline.dlq_url) == 0
