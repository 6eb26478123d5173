"""Every state change logs one `job_transition` line (docs/design.md, Observability): the job, its type,
the state it really left, the state it entered, the attempt and, for a retry, why. The local runtime's
`offload tail` and the demo's dead-job list read these lines; while a job runs, its id is the
correlation id of every line it logs.

Found by `make mutate` (mutants of `Worker.process`, `_succeed`, `_retry`, `_continue` and
`DeadLetterConsumer.handle` that changed only these lines). Each test was first run against the
one-line break its docstring names, seen to fail, then restored.
"""

import pytest

from lambdas.jobs import registry
from lambdas.jobs.base import ContinueLater, JobContext, JobType
from lambdas.store.jobs import JobStore
from tests.support.job_types import EchoPayload
from tests.support.pipeline import Pipeline
from tests.support.transitions import Lines, transitions

pytestmark = pytest.mark.usefixtures("test_types")


def test_a_retried_job_logs_each_state_it_left_and_entered(pipeline: Pipeline, log_lines: Lines) -> None:
    """Broken lines, each alone: `_retry`'s `log_transition(...)` with `None` for the job type, with
    `None` for `JobStatus.PENDING`, or without either argument; `_succeed`'s with `None` for the job id."""
    job_id = pipeline.submit("test_flaky", {"failTimes": 1})
    records = pipeline.receive(pipeline.queue_url)
    pipeline.run_worker(records)
    pipeline.make_visible(records)

    pipeline.run_worker()

    assert transitions(log_lines(), job_id) == [
        (f"job {job_id} new -> pending", "test_flaky", "new", "pending", 0, None),
        (f"job {job_id} pending -> processing", "test_flaky", "pending", "processing", 1, None),
        (
            f"job {job_id} processing -> pending",
            "test_flaky",
            "processing",
            "pending",
            1,
            "transient failure 1",
        ),
        (f"job {job_id} pending -> processing", "test_flaky", "pending", "processing", 2, None),
        (f"job {job_id} processing -> done", "test_flaky", "processing", "done", 2, None),
    ]


def test_every_line_a_running_job_logs_carries_its_id_as_the_correlation_id(
    pipeline: Pipeline, log_lines: Lines
) -> None:
    """Broken line: `process`'s `thread_safe_append_keys(correlation_id=job_id, ...)` with `None`."""
    job_id = pipeline.submit("test_flaky", {"failTimes": 1})

    pipeline.run_worker()

    ran = [line for line in log_lines() if line.get("jobId") == job_id and line["function_name"] == "worker"]
    assert len(ran) >= 3  # claimed, retried, its retry scheduled
    assert {line.get("correlation_id") for line in ran} == {job_id}


def _continues(payload: EchoPayload, context: JobContext) -> ContinueLater:
    return ContinueLater({"step": 1})


def test_a_job_that_continues_logs_that_it_continues(pipeline: Pipeline, log_lines: Lines) -> None:
    """Broken line: `_continue`'s `log_transition(..., job.attempts, "continues")` without `"continues"`."""
    registry.register(JobType("test_continues_logged", EchoPayload, _continues))
    job_id = pipeline.submit("test_continues_logged", {})

    pipeline.run_worker()

    assert transitions(log_lines(), job_id)[-1] == (
        f"job {job_id} processing -> pending",
        "test_continues_logged",
        "processing",
        "pending",
        1,
        "continues",
    )


def test_a_job_goes_dead_in_one_logged_transition_from_the_state_it_really_left(
    pipeline: Pipeline, store: JobStore, log_lines: Lines
) -> None:
    """The worker logs the death of a job it killed, the dead-letter consumer that of a job SQS redrove
    (its worker crashed); a letter for a job already dead logs nothing more.

    Broken lines, each alone: `DeadLetterConsumer.handle`'s `before.status is not JobStatus.DEAD` as
    `is`; its `log_transition(...)` without `JobStatus.DEAD`."""
    killed = pipeline.submit("test_permanent", {"value": "x"})
    pipeline.drain()  # the worker kills it; its letter reaches the consumer
    crashed = pipeline.submit("test_echo", {})
    store.claim(crashed, 60)  # a worker claimed it, then crashed on every delivery
    pipeline.fail_until_redriven()

    pipeline.run_dead_letter()

    lines = log_lines()
    assert [t for t in transitions(lines, killed) if t[3] == "dead"] == [
        (
            f"job {killed} processing -> dead",
            "test_permanent",
            "processing",
            "dead",
            1,
            "input can never succeed: x",
        )
    ]
    [(message, _, left, entered, attempt, _)] = [t for t in transitions(lines, crashed) if t[3] == "dead"]
    assert (message, left, entered, attempt) == (f"job {crashed} processing -> dead", "processing", "dead", 1)
