"""`step_fails`: a first step that succeeds, then a step named by the payload that fails for good with
the payload's error text (the console's tests show both names and the error as text)."""

from pydantic import BaseModel, Field

from lambdas.jobs.base import Flow, JobType, PermanentJobError


class StepFailsPayload(BaseModel):
    step: str = Field(min_length=1, max_length=100)
    error: str = Field(min_length=1, max_length=500)


def _first() -> str:
    return "ok"


def _fail(error: str) -> None:
    raise PermanentJobError(error)


def run(payload: StepFailsPayload, flow: Flow) -> None:
    flow.step("first", _first)
    flow.step(payload.step, _fail, payload.error)


JOB_TYPE = JobType(name="step_fails", payload_model=StepFailsPayload, run=run, workflow=True)
