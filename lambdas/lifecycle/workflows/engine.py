"""What offload asks of the durable execution engine once an execution runs: complete an event's
callback, and stop an execution (a cancel). On AWS, Lambda's durable execution API."""

from typing import Protocol

from lambdas.store import clients


class Engine(Protocol):
    def complete(self, callback_id: str, result: bytes) -> None: ...

    def stop(self, execution_arn: str, reason: str) -> None: ...


class LambdaEngine:
    """SendDurableExecutionCallbackSuccess and StopDurableExecution."""

    def complete(self, callback_id: str, result: bytes) -> None:
        clients.client("lambda").send_durable_execution_callback_success(
            CallbackId=callback_id, Result=result
        )

    def stop(self, execution_arn: str, reason: str) -> None:
        clients.client("lambda").stop_durable_execution(
            DurableExecutionArn=execution_arn,
            Error={"ErrorType": "Cancelled", "ErrorMessage": reason},
        )
