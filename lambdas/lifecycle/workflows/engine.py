"""What offload asks of the durable execution engine once an execution runs: complete an event's
callback, and stop an execution (a cancel). On AWS, Lambda's durable execution API."""

from typing import Protocol

from botocore.exceptions import ClientError

from lambdas.store import clients

# What Lambda answers for a callback that is no longer waiting: completed already, timed out, or its
# execution ended (a wait that was over before the job's record said so).
_CALLBACK_GONE = {"ResourceNotFoundException", "InvalidParameterValueException", "CallbackTimeoutException"}


class CallbackGoneError(Exception):
    """The wait this callback ended is over: the event came too late."""


class Engine(Protocol):
    def complete(self, callback_id: str, result: bytes) -> None:
        """CallbackGoneError when the callback no longer waits."""
        ...

    def stop(self, execution_arn: str, reason: str) -> None: ...


class LambdaEngine:
    """SendDurableExecutionCallbackSuccess and StopDurableExecution."""

    def complete(self, callback_id: str, result: bytes) -> None:
        try:
            clients.client("lambda").send_durable_execution_callback_success(
                CallbackId=callback_id, Result=result
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in _CALLBACK_GONE:
                raise CallbackGoneError(str(error)) from None
            raise

    def stop(self, execution_arn: str, reason: str) -> None:
        clients.client("lambda").stop_durable_execution(
            DurableExecutionArn=execution_arn,
            Error={"ErrorType": "Cancelled", "ErrorMessage": reason},
        )
