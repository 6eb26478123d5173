"""bulk_action (internal): an operator's retry or cancel of every job a filter matches, or (`fanOut`) a
caller's retry or cancel of a large fan-out's children.

Started by `POST /jobs/retry` and `POST /jobs/cancel` (operator key only), or by `POST /jobs/{id}/retry`
and `/cancel` of a fan-out with more than `fan_out.INLINE_CHILDREN` children (`lambdas/lifecycle/fan_out.py`),
never by `POST /jobs`: the type is not public. The work itself is the lifecycle's (`lambdas/lifecycle/bulk.py`), reached through
the context's `bulk_action` capability.
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lambdas.jobs.base import JobContext, JobType

NAME = "bulk_action"


class BulkActionPayload(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    action: Literal["retry", "cancel"]
    status: str = Field(min_length=1, max_length=32)
    job_type: str | None = Field(default=None, alias="type")
    before: int = Field(ge=0, description="Only jobs that entered the status before this (epoch ms).")
    limit: int = Field(ge=1, le=10_000)
    fan_out: str | None = Field(
        default=None,
        alias="fanOut",
        min_length=1,
        max_length=64,
        description="Act on this fan-out's children instead of the listing (a large fan-out's retry or cancel).",
    )


def run(payload: BulkActionPayload, context: JobContext) -> Any:
    return context.bulk_action(payload.model_dump(by_alias=True, exclude_none=True))


JOB_TYPE = JobType(name=NAME, payload_model=BulkActionPayload, run=run, public=False)
