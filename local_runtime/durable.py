"""Lambda's durable execution API for workflows run locally, on the durable SDK's own local engine.

The engine is `aws_durable_execution_sdk_python_testing`'s `DurableFunctionTestRunner`, in real time
(`skip_time=False`): it runs the durable function's real handler (`lambdas.handlers.workflow.handler`)
in this process, checkpoints each operation, replays the handler after a wait, and times sleeps and
callbacks. offload's worker starts executions through `start` (Lambda's Invoke with a
DurableExecutionName), its API completes callbacks (`complete`) and stops executions (`stop`).

Emulated AWS rule (the local engine does not apply it; Lambda's Invoke documents it):
- an execution name is unique per function: an Invoke with a name already used and the same payload
  answers with that execution, never starts a second; with another payload it fails with
  `DurableExecutionAlreadyStartedException`.
"""

import threading
from collections.abc import Callable
from typing import Any

from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

from lambdas import config


class DurableExecutionAlreadyStartedError(Exception):
    """Lambda's DurableExecutionAlreadyStartedException: the name ran with another payload."""


class LocalDurableFunctions:
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
