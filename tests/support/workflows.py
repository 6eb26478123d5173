"""Workflows on the durable SDK's own local engine (`aws_durable_execution_sdk_python_testing`), in
process: the engine, its checkpoints, replays, waits and callbacks are the SDK's; offload's side of the
execution (the job, its journal, its end) is `RecordingRuntime`, which records what the execution wrote.
"""

import importlib.util
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

from aws_durable_execution_sdk_python import durable_execution
from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

from lambdas import config
from lambdas.jobs.base import JobType
from lambdas.lifecycle.workflows.execution import Begun, run_workflow
from lambdas.lifecycle.workflows.journal import StepStatus, WorkflowGone

ONBOARDING = Path(__file__).resolve().parents[2] / "examples" / "workflow_jobs" / "onboarding.py"


def onboarding_module() -> ModuleType:
    """The docs' onboarding example, the file itself."""
    spec = importlib.util.spec_from_file_location("onboarding_example", ONBOARDING)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class RecordingRuntime:
    """Runs one job of `job_type` with `payload`; records the journal's and the end's writes, and the
    emails its steps send (`fail_emails` of them fail first, as an outage would)."""

    job_type: JobType[Any]
    payload: Mapping[str, Any]
    max_attempts: int = 3
    fail_emails: int = 0
    journal: list[tuple[Any, ...]] = field(default_factory=list)
    emails: list[Mapping[str, Any]] = field(default_factory=list)
    ended: list[tuple[str, Any]] = field(default_factory=list)
    gone: bool = False
    callbacks: dict[str, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def backoff(self, attempt: int, retry_after: float | None) -> int:
        return 1

    def begin(self, job_id: str) -> Begun:
        if self.gone:
            raise WorkflowGone(job_id)
        context = SimpleNamespace(job_id=job_id, max_attempts=self.max_attempts, send_email=self._send)
        payload = self.job_type.payload_model.model_validate(self.payload)
        return Begun(self.job_type, payload, context, self)  # type: ignore[arg-type]

    def _send(self, request: Mapping[str, Any]) -> str:
        with self._lock:
            if self.fail_emails > 0:
                self.fail_emails -= 1
                raise ConnectionError("SES is unavailable")
            self.emails.append(request)
            return f"message-{len(self.emails)}"

    def end(self, job_id: str, result: Any) -> None:
        self._end("done", result)

    def fail(self, job_id: str, error: str) -> None:
        self._end("dead", error)

    def _end(self, outcome: str, value: Any) -> None:
        if self.gone:
            raise WorkflowGone("cancelled")
        self.ended.append((outcome, value))

    # The journal
    def step_started(self, name: str, attempt: int) -> None:
        self.journal.append(("started", name, attempt))

    def step_ended(self, name: str, status: StepStatus, error: str | None = None) -> None:
        self.journal.append((status.value, name, error))

    def sleeping(self, name: str, seconds: int) -> None:
        self.journal.append(("sleeping", name, seconds))

    def waiting_for_event(self, name: str, callback_id: str, timeout_seconds: int) -> None:
        self.callbacks[name] = callback_id
        self.journal.append(("waiting", name, timeout_seconds))

    def running(self) -> None:
        self.journal.append(("running",))

    def subjects(self) -> list[str]:
        return [e["Content"]["Simple"]["Subject"]["Data"] for e in self.emails]


@contextmanager
def engine(runtime: RecordingRuntime, *, skip_time: bool = True) -> Iterator[DurableFunctionTestRunner]:
    """The SDK's local engine running `runtime`'s job as a durable function."""

    @durable_execution
    def handler(event: Any, context: Any) -> Any:
        return run_workflow(event, context, runtime)

    with DurableFunctionTestRunner(handler=handler, skip_time=skip_time, poll_interval=0.05) as runner:
        yield runner


def start(runner: DurableFunctionTestRunner, job_id: str = "job-1", timeout: int = 60) -> str:
    return runner.run_async(
        input=json.dumps({"jobId": job_id}), execution_timeout=timeout, execution_name=job_id
    )


def wait_until(predicate: Callable[[], bool], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


@contextmanager
def local_workflows(monkeypatch: Any, env: Mapping[str, str]) -> Iterator[Any]:
    """The worker and the API reach the durable SDK's local engine (`local_runtime/durable.py`) where
    on AWS they call Lambda: the worker's LambdaStarter starts, the API's LambdaEngine completes and
    stops executions of the real durable handler there (`LocalDurableFunctions`). The onboarding example is registered."""
    import boto3

    from lambdas.handlers import workflow
    from lambdas.jobs import registry
    from lambdas.lifecycle.workflows.engine import LambdaEngine
    from lambdas.lifecycle.workflows.start import LambdaStarter
    from local_runtime.template.resources import verify_email_identity

    registry.register(onboarding_module().JOB_TYPE)
    monkeypatch.setenv("WORKFLOW_FUNCTION", "workflows-live")
    verify_email_identity(boto3.client, env["SENDER_EMAIL"])
    engine = LocalDurableFunctions(workflow.handler)
    monkeypatch.setattr(LambdaStarter, "start", lambda self, name, payload: engine.start(name, payload))
    monkeypatch.setattr(
        LambdaEngine, "complete", lambda self, callback, result: engine.complete(callback, result)
    )
    monkeypatch.setattr(LambdaEngine, "stop", lambda self, arn, reason: engine.stop(arn, reason))
    try:
        yield engine
    finally:
        engine.close()


class DurableExecutionAlreadyStartedError(Exception):
    """Lambda's DurableExecutionAlreadyStartedException: the name ran with another payload."""


class LocalDurableFunctions:
    """Lambda's durable execution API in this process, on the SDK's `DurableFunctionTestRunner` in real
    time, for the integration tests (`make run` runs `local_runtime/durable.py` instead). Emulated as
    Lambda's Invoke documents it: an execution name used again with the same payload answers with
    that execution; with another payload it fails (DurableExecutionAlreadyStartedError)."""

    def __init__(self, handler: Callable[[Any, Any], Any], *, skip_time: bool = False) -> None:
        self._runner = DurableFunctionTestRunner(handler=handler, skip_time=skip_time, poll_interval=0.05)
        self._started: dict[str, tuple[str, str]] = {}  # name -> (payload, ARN)
        self._lock = threading.Lock()

    def start(self, name: str, payload: str) -> str:
        with self._lock:
            if name in self._started:
                first, arn = self._started[name]
                if first != payload:
                    raise DurableExecutionAlreadyStartedError(
                        f"execution {name} started with another payload"
                    )
                return arn
            arn = self._runner.run_async(
                input=payload,
                execution_name=name,
                execution_timeout=config.WORKFLOW_EXECUTION_TIMEOUT_SECONDS,
            )
            self._started[name] = (payload, arn)
            return arn

    def complete(self, callback_id: str, result: bytes) -> None:
        from aws_durable_execution_sdk_python_testing.exceptions import ResourceNotFoundException

        from lambdas.lifecycle.workflows.engine import CallbackGoneError

        try:
            self._runner.send_callback_success(callback_id, result)
        except ResourceNotFoundException as error:  # as Lambda's: the callback no longer waits
            raise CallbackGoneError(str(error)) from None

    def stop(self, execution_arn: str, reason: str) -> None:
        from aws_durable_execution_sdk_python.lambda_service import ErrorObject

        self._runner._executor.stop_execution(execution_arn, ErrorObject.from_message(reason))

    def pause(self, name: str) -> None:
        """Hold the execution's next invocation (the engine's experimental pause): for tests of what a
        caller meets while an execution has not caught up yet."""
        self._runner.pause_execution(self._started[name][1])

    def resume(self, name: str) -> None:
        self._runner.resume_execution(self._started[name][1])

    def executions(self) -> int:
        """How many executions were started (for the rule above's test)."""
        return len(self._started)

    def wait_for_result(self, name: str, timeout: int = 60) -> Any:
        return self._runner.wait_for_result(self._started[name][1], timeout=timeout)

    def close(self) -> None:
        """Stop every execution still running, then the engine: none wakes after its function is gone."""
        for _, arn in self._started.values():
            self.stop(arn, "the local runtime stopped")
        # The engine's close does not wait for an invocation in flight (its pool's threads are left to
        # run): wait for them here, so no step of a stopped execution runs once its resources are gone.
        self._runner._executor._invocation_pool.shutdown(wait=True)
        self._runner.close()
