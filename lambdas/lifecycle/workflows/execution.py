"""One workflow job's durable execution, from its input to the job's end.

The durable function's handler (`lambdas/handlers/workflow.py`) is this function under the SDK's
`durable_execution`. Its input names the job (`{"jobId"}`); the execution's name is the job id, so the
engine runs one execution per job however often the worker's message is delivered. Each invocation
replays `run(payload, flow)` from the top; the SDK returns finished operations from their checkpoints.

The job's end is one step (`offload:end`): `done` with the result, or `dead` with the reason when a
step failed for good or `run` raised. Its write is fenced on the job's state, so a workflow cancelled
meanwhile stays `cancelled` (`WorkflowGone` ends the execution without another write).
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from aws_durable_execution_sdk_python import DurableContext, DurableOperationError
from aws_durable_execution_sdk_python.config import Duration, StepConfig
from aws_durable_execution_sdk_python.retries import RetryDecision

from lambdas.jobs.base import JobContext, JobError, JobType
from lambdas.lifecycle.workflows.flow import DurableFlow
from lambdas.lifecycle.workflows.journal import Journal, WorkflowGone

END_STEP = "offload:end"


@dataclass(frozen=True)
class Begun:
    job_type: JobType[Any]
    payload: Any
    context: JobContext
    journal: Journal


class WorkflowRuntime(Protocol):
    """What a workflow's execution needs from offload: the job to run, and where its end is written."""

    def backoff(self, attempt: int, retry_after: float | None) -> int:
        """Seconds before a failed step's next attempt."""
        ...

    def begin(self, job_id: str) -> Begun:
        """The job's type, payload, context and journal; WorkflowGone when it is not running any more."""
        ...

    def end(self, job_id: str, result: Any) -> None: ...

    def fail(self, job_id: str, error: str) -> None: ...


def run_workflow(event: Mapping[str, Any], durable: DurableContext, runtime: WorkflowRuntime) -> Any:
    job_id = str(event["jobId"])
    try:
        begun = runtime.begin(job_id)
    except WorkflowGone:
        return None
    flow = DurableFlow(durable, begun.context, begun.journal, runtime.backoff)
    try:
        result = begun.job_type.run(begun.payload, flow)
    except (JobError, DurableOperationError) as error:
        reason = _reason(error)
        _once(durable, lambda _: runtime.fail(job_id, reason))
        raise
    _once(durable, lambda _: runtime.end(job_id, result))
    return result


def _once(durable: DurableContext, write: Any) -> None:
    """The end's write, checkpointed: a replay after it does not write again; retried while the
    store is unreachable (at most the SDK's default attempts)."""
    durable.step(write, name=END_STEP, config=StepConfig(retry_strategy=_retry_unless_gone))


def _retry_unless_gone(error: Exception, attempts_made: int) -> RetryDecision:
    if isinstance(error, WorkflowGone) or attempts_made >= 3:
        return RetryDecision.no_retry()
    return RetryDecision.retry(Duration.from_seconds(2**attempts_made))


def _reason(error: Exception) -> str:
    if isinstance(error, DurableOperationError) and error.message:
        return error.message
    return str(error)
