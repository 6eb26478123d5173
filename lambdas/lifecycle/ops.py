"""Ops jobs: the lifecycle's own job type, `bulk_action`, for work a caller started that is too big for
one API call: an operator's retry or cancel of every job a filter matches (`bulk`), or a caller's retry
or cancel of a large fan-out's children (`fanOut`, `fan_out`).

It is not a plug-in: it is not in the job-type registry, `POST /jobs` refuses it like any unknown type
(only `start_bulk` and `fan_out.start_ops_job` store one), and the worker runs it with the lifecycle's
own store and queue (`Worker`), so no job type's `JobContext` carries the power to act on other jobs.
"""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from lambdas import config
from lambdas.jobs.base import JobContext, JobType
from lambdas.models.job import JobAction
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue

OPS_TYPE = config.OPS_JOB_TYPE


class OpsPayload(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    action: JobAction
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


def ops_job_type(store: JobStore, queue: JobQueue) -> JobType[OpsPayload]:
    """The ops job type bound to the worker's store and queue."""

    def run(payload: OpsPayload, context: JobContext) -> Any:
        # Imported on first use: only the ops jobs need the listing and the API models.
        from lambdas.lifecycle.bulk import run_bulk
        from lambdas.lifecycle.fan_out import run_fan_out_action

        raw = payload.model_dump(mode="json", by_alias=True, exclude_none=True)
        act = run_fan_out_action if payload.fan_out else run_bulk
        return act(store, queue, context.job_id, context.attempt, context.remaining_ms, raw)

    return JobType(name=OPS_TYPE, payload_model=OpsPayload, run=run, public=False)
