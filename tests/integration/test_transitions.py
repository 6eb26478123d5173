"""The `job_transition` log lines (docs/internals/README.md, Observability): every state change logs one, naming
the job, its type, the state it really left, the state it entered, the attempt and, for a retry, why.
The local runtime's `offload tail` and the demo's dead-job list read these lines; while a job runs, its
id is the correlation id of every line it logs. The worker's changes come first, then the ones nobody's
worker makes (a caller's retry and cancel, the recovery sweep's requeue).
"""

import pytest

from lambdas import config
from lambdas.jobs import registry
from lambdas.jobs.base import Capability, ContinueLater, JobContext, JobType
from lambdas.lifecycle.requests import retry_cancel
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue
from tests.integration.test_operations import ALICE, _fan_out
from tests.integration.test_worker import _awaits
from tests.support.job_types import EchoPayload
from tests.support.pipeline import Pipeline
from tests.support.stores import Clock
from tests.support.transitions import Lines, transitions

# Every state change logs one `job_transition` line (docs/internals/README.md, Observability): the job, its type,
# the state it really left, the state it entered, the attempt and, for a retry, why. The local runtime's
# `offload tail` and the demo's dead-job list read these lines; while a job runs, its id is the
# correlation id of every line it logs.
#
# Found by `make mutate` (mutants of `Worker.process`, `_succeed`, `_retry`, `_continue` and
# `DeadLetterConsumer.handle` that changed only these lines). Each test was first run against the
# one-line break its docstring names, seen to fail, then restored.


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


def test_a_parent_that_hands_its_work_to_children_logs_that_it_waits(
    pipeline: Pipeline, log_lines: Lines
) -> None:
    """Seen to fail against `_await`'s `log_transition(...)` with `None` for the job type (sample
    581628's `xǁWorkerǁ_await__mutmut_11`)."""
    registry.register(
        JobType("test_awaits_logged", EchoPayload, _awaits, uses=frozenset({Capability.CHILDREN}))
    )
    job_id = pipeline.submit("test_awaits_logged", {})
    (parent,) = pipeline.receive(pipeline.queue_url)

    pipeline.run_worker([parent])

    assert transitions(log_lines(), job_id)[-1] == (
        f"job {job_id} processing -> waiting",
        "test_awaits_logged",
        "processing",
        "waiting",
        1,
        None,
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


# The `job_transition` lines of the changes nobody's worker makes (docs/internals/README.md, Observability): a
# caller's retry and cancel, and the recovery sweep's requeue. Each names the job, its type, the state it
# really left, the state it entered, the attempt and, for a retry, why; `offload tail` and the demo read them.
#
# Found by `make mutate` (mutants of `lambdas/lifecycle/requests/retry_cancel.py` and `recovery.py` that changed only
# these lines). Each test was first run against the one-line break its docstring names, seen to fail,
# then restored.


def test_a_callers_retry_of_a_dead_job_logs_dead_to_pending_with_a_fresh_budget(
    pipeline: Pipeline, log_lines: Lines
) -> None:
    """Broken line: `_announce`'s `log_transition(..., 0, "retried by a caller")` with another reason."""
    job_id = pipeline.submit("test_permanent", {"value": "x"})
    pipeline.run_worker()  # the worker kills it

    assert pipeline.request("POST", f"/jobs/{job_id}/retry").status == 202

    assert transitions(log_lines(), job_id)[-1] == (
        f"job {job_id} dead -> pending",
        "test_permanent",
        "dead",
        "pending",
        0,
        "retried by a caller",
    )


def test_a_callers_retry_of_a_dead_fan_outs_children_logs_each_child_and_the_parent_waiting_again(
    pipeline: Pipeline, store: JobStore, log_lines: Lines
) -> None:
    """Broken line: `_retry_children`'s `log_transition(parent.job_id, parent.job_type, ...)` with
    `None` for the job type."""
    _, children = _fan_out(store, 2)
    for child in children:
        store.fail(store.claim(child, 60), "gone")  # the last child's write finishes the parent: done

    retry_cancel.retry_job(store, JobQueue(pipeline.queue_url), ALICE, "fan")

    lines = log_lines()
    for child in children:
        assert transitions(lines, child) == [
            (f"job {child} dead -> pending", "webhook_delivery", "dead", "pending", 0, "retried by a caller")
        ]
    assert transitions(lines, "fan") == [
        ("job fan done -> waiting", "webhook_fanout", "done", "waiting", 1, None)
    ]


def test_a_callers_cancel_logs_each_job_it_cancelled(
    pipeline: Pipeline, store: JobStore, log_lines: Lines
) -> None:
    """A plain pending job, and a waiting fan-out (its pending children first, then the parent).

    Broken line: `_cancel_one`'s `log_transition(job.job_id, job.job_type, ...)` with `None` for the
    job type."""
    job_id = pipeline.submit("test_echo", {})
    _, children = _fan_out(store, 2)

    assert pipeline.request("POST", f"/jobs/{job_id}/cancel").status == 200
    retry_cancel.cancel_job(store, ALICE, "fan")

    lines = log_lines()
    assert transitions(lines, job_id)[-1] == (
        f"job {job_id} pending -> cancelled",
        "test_echo",
        "pending",
        "cancelled",
        0,
        None,
    )
    for child in children:
        assert transitions(lines, child) == [
            (f"job {child} pending -> cancelled", "webhook_delivery", "pending", "cancelled", 0, None)
        ]
    assert transitions(lines, "fan") == [
        ("job fan waiting -> cancelled", "webhook_fanout", "waiting", "cancelled", 1, None)
    ]


def test_the_sweeps_requeue_logs_an_expired_lease_as_a_transition_and_a_lost_message_as_none(
    pipeline: Pipeline, store: JobStore, clock: Clock, log_lines: Lines
) -> None:
    """A lost message re-sent changes no state (the job stays `pending`), so it logs no transition.

    Broken lines, each alone: `Sweeper._resend`'s `log_transition(...)` without `job.job_id`, or
    without `job.job_type`."""
    lost = pipeline.submit("test_echo", {})  # its message is lost: nobody receives it
    crashed = pipeline.submit("test_echo", {})
    store.claim(crashed, lease_seconds=60)  # its worker dies holding the lease
    clock.advance(max(61, int(pipeline.env[config.ENV_RECOVERY_GRACE_SECONDS]) + 1))

    report = pipeline.run_recovery()

    assert (report["requeuedPending"], report["requeuedExpired"]) == (1, 1)
    lines = log_lines()
    assert transitions(lines, lost) == [
        (f"job {lost} new -> pending", "test_echo", "new", "pending", 0, None)
    ]
    assert transitions(lines, crashed)[-1] == (
        f"job {crashed} processing -> pending",
        "test_echo",
        "processing",
        "pending",
        1,
        "lease expired on attempt 1: the worker crashed or timed out",
    )
    assert pipeline.job(crashed)["status"] == "pending"
