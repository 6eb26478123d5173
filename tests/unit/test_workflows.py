"""Workflows on the durable SDK's own local engine: offload's `Flow` and the execution's end.

The engine is `aws_durable_execution_sdk_python_testing`'s, in process (tests/support/workflows.py);
what offload writes of the execution is recorded by its runtime. Each test names the line it was seen
to fail against, broken once and restored.
"""

import json
from collections.abc import Callable
from typing import Any

import pytest
from aws_durable_execution_sdk_python.exceptions import InvocationError
from aws_durable_execution_sdk_python.execution import InvocationStatus
from pydantic import BaseModel

from lambdas.jobs.base import JobType, PermanentJobError
from tests.support.workflows import RecordingRuntime, engine, onboarding_module, start, wait_until

FAST = {"email": "new@example.com", "pauseSeconds": 1, "convertWithinSeconds": 3}


def onboarding_runtime(max_attempts: int = 3, fail_emails: int = 0, **payload: object) -> RecordingRuntime:
    return RecordingRuntime(onboarding_module().JOB_TYPE, {**FAST, **payload}, max_attempts, fail_emails)


def test_an_event_resumes_the_waiting_workflow_and_the_welcome_is_sent_once() -> None:
    """The welcome step's email is sent once though the workflow is replayed after its sleep and after
    the event, and the event's data is what `wait_for_event` returns (no follow-up). Seen failing with
    `Flow.step` calling `body` itself instead of `self._durable.step(...)` (the welcome sent again on each replay)."""
    runtime = onboarding_runtime(convertWithinSeconds=60)
    with engine(runtime, skip_time=False) as runner:
        arn = start(runner)
        wait_until(lambda: "converted" in runtime.callbacks)
        runner.send_callback_success(runtime.callbacks["converted"], json.dumps({"plan": "pro"}).encode())
        result = runner.wait_for_result(arn, timeout=30)
    assert result.status is InvocationStatus.SUCCEEDED
    assert runtime.subjects() == ["Welcome!"]
    assert runtime.ended == [("done", {"welcome": "message-1", "converted": {"plan": "pro"}})]
    assert ("sleeping", "pause", 1) in runtime.journal
    assert runtime.journal.count(("started", "welcome", 1)) == 1


def test_a_wait_whose_timeout_passes_returns_none_and_the_follow_up_is_sent() -> None:
    """No `converted` event: `wait_for_event` returns None and the follow-up goes out, once. Seen
    failing with `except CallbackTimeoutError` re-raising (the workflow dead)."""
    runtime = onboarding_runtime()
    with engine(runtime) as runner:
        result = runner.wait_for_result(start(runner), timeout=30)
    assert result.status is InvocationStatus.SUCCEEDED
    assert runtime.subjects() == ["Welcome!", "Need a hand?"]
    assert runtime.ended == [("done", {"welcome": "message-1", "followUp": "message-2"})]


def test_a_retryable_step_is_retried_by_the_engine_with_its_own_attempts() -> None:
    """An email outage fails the welcome's first two attempts; the SDK retries the step (attempts 2
    and 3) and the workflow goes on. Seen failing with `_retry_strategy` answering `no_retry()` always."""
    runtime = onboarding_runtime(fail_emails=2)
    with engine(runtime) as runner:
        result = runner.wait_for_result(start(runner), timeout=30)
    assert result.status is InvocationStatus.SUCCEEDED
    welcome = [entry for entry in runtime.journal if entry[1:2] == ("welcome",)]
    assert [entry[0] for entry in welcome] == ["started", "failed", "started", "failed", "started", "done"]
    assert [entry[2] for entry in welcome if entry[0] == "started"] == [1, 2, 3]
    assert welcome[1][2] == "email not sent: SES is unavailable"


def test_a_step_out_of_attempts_ends_the_workflow_dead() -> None:
    """With `maxAttempts` 2 and three failures, the step gives up after its second attempt: the job is
    written dead with the step's error, and nothing after it runs. Seen failing with the retry
    strategy's `attempts_made >= self.context.max_attempts` dropped (three attempts)."""
    runtime = onboarding_runtime(fail_emails=3, max_attempts=2)
    with engine(runtime) as runner:
        result = runner.wait_for_result(start(runner), timeout=30)
    assert result.status is InvocationStatus.FAILED
    assert [entry for entry in runtime.journal if entry[0] == "started"] == [
        ("started", "welcome", 1),
        ("started", "welcome", 2),
    ]
    assert runtime.ended == [("dead", "email not sent: SES is unavailable")]
    assert not any(entry[0] == "sleeping" for entry in runtime.journal)


class Empty(BaseModel):
    pass


def run_type(run: Callable[[Empty, Any], Any]) -> tuple[Any, RecordingRuntime]:
    """A one-off workflow type running `run` to its end on the engine; its result and its runtime."""
    runtime = RecordingRuntime(JobType("one_off", Empty, run, workflow=True), {})
    with engine(runtime) as runner:
        return runner.wait_for_result(start(runner), timeout=30), runtime


def test_a_permanent_error_is_not_retried_and_ends_the_workflow_dead() -> None:
    """PermanentJobError in a step: one attempt, the job dead with its message. Seen failing with the
    retry strategy's `isinstance(error, PermanentJobError)` dropped (three attempts)."""
    calls: list[int] = []

    def refuse() -> None:
        calls.append(1)
        raise PermanentJobError("no such account")

    def run(payload: Empty, flow: object) -> None:
        flow.step("charge", refuse)  # type: ignore[attr-defined]

    result, runtime = run_type(run)
    assert result.status is InvocationStatus.FAILED
    assert calls == [1]
    assert runtime.ended == [("dead", "no such account")]


def test_a_step_whose_result_json_cannot_hold_fails_before_it_is_retried() -> None:
    """A step returning a set: refused for good at once (its side effect is not repeated by retries).
    Seen failing with `_checkpointable` not called (the SDK's serializer fails it, retried)."""
    calls: list[int] = []

    def make_set() -> set[int]:
        calls.append(1)
        return {1}

    def run(payload: Empty, flow: object) -> None:
        flow.step("odd", make_set)  # type: ignore[attr-defined]

    result, runtime = run_type(run)
    assert result.status is InvocationStatus.FAILED
    assert calls == [1]
    assert runtime.ended[0][0] == "dead"
    assert "JSON" in runtime.ended[0][1]


@pytest.mark.parametrize("seconds", [0, 367 * 24 * 3600])
def test_a_sleep_outside_one_second_to_a_year_is_refused(seconds: int) -> None:
    """Seen failing with `_bounded`'s range check dropped (the SDK accepts a two-year wait)."""

    def run(payload: Empty, flow: object) -> None:
        flow.sleep("nap", seconds)  # type: ignore[attr-defined]

    result, runtime = run_type(run)
    assert result.status is InvocationStatus.FAILED
    assert runtime.ended[0][0] == "dead"
    assert "sleep takes 1 to" in runtime.ended[0][1]


def test_a_workflow_gone_before_it_begins_ends_without_a_write() -> None:
    """A cancelled job's execution ends at once, writing nothing (WorkflowGone from `begin`)."""
    runtime = onboarding_runtime()
    runtime.gone = True
    with engine(runtime) as runner:
        result = runner.wait_for_result(start(runner), timeout=30)
    assert result.status is InvocationStatus.SUCCEEDED
    assert runtime.emails == []
    assert runtime.ended == []


class CrashingAfterFirstStep(RecordingRuntime):
    """Its invocation dies once, right after the welcome step's result was checkpointed."""

    crashed = False

    def sleeping(self, name: str, seconds: int) -> None:
        if not self.crashed:
            self.crashed = True
            # What Lambda sees of a process killed mid-invocation: the invocation failed, and it is
            # invoked again; the SDK raises InvocationError for exactly that.
            raise InvocationError("the function's process was killed")
        super().sleeping(name, seconds)


def test_a_step_finished_before_a_crash_is_not_run_again_when_the_workflow_resumes() -> None:
    """The invocation dies after the welcome step; the engine invokes the function again, the workflow
    replays, and the welcome returns its recorded result without a second email. Seen failing with
    `Flow.step` calling `body` itself instead of `self._durable.step(...)` (two welcomes)."""
    runtime = CrashingAfterFirstStep(onboarding_module().JOB_TYPE, {**FAST, "convertWithinSeconds": 1})
    with engine(runtime) as runner:
        result = runner.wait_for_result(start(runner), timeout=60)
    assert runtime.crashed
    assert result.status is InvocationStatus.SUCCEEDED
    assert runtime.subjects() == ["Welcome!", "Need a hand?"]
    assert runtime.ended == [("done", {"welcome": "message-1", "followUp": "message-2"})]


def test_the_docs_show_the_onboarding_example_as_it_is() -> None:
    """docs/job-types.md's workflow example is the file the tests run, line for line."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    doc = (root / "docs" / "job-types.md").read_text()
    shown = doc.split("## Workflows", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert shown.strip() in (root / "examples" / "workflow_jobs" / "onboarding.py").read_text()
