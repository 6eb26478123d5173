"""What the worker's job context lets a job type do, through a real attempt: create child jobs (and
learn how many it wrote now), and run an operator's bulk action.

Found by `make mutate` (mutants of `WorkerCapabilities._create_children` and `_bulk_action`: no test
ran a bulk action through the worker). Each test was first run against the one-line break its
docstring names, seen to fail, then restored.
"""

import json

import pytest
from pydantic import BaseModel

from lambdas import config
from lambdas.jobs import registry
from lambdas.jobs.base import CreatedChildren, JobContext, JobType, RetryableJobError
from lambdas.models.job import JobStatus, NewJob
from lambdas.store.jobs import JobStore
from tests.support.pipeline import Pipeline
from tests.support.stores import Clock

pytestmark = pytest.mark.usefixtures("test_types")


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

    registry.register(JobType("test_fan_out_twice", _Nothing, fan_out_then_fail_once))
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
    """Broken line: `_bulk_action`'s `run_bulk(..., job_id, attempt, remaining_ms, payload)` without
    `attempt` (the bulk job raises, is retried, and goes dead having retried nothing)."""
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
