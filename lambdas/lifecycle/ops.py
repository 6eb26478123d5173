"""Ops jobs: the lifecycle's own job type, `bulk_action`, for work a caller started that is too big for
one API call: an operator's retry or cancel of every job a filter matches (`bulk`), or a caller's retry
or cancel of a large fan-out's children (`fanOut`, `fan_out`).

It is not a plug-in: it is not in the job-type registry, `POST /jobs` refuses it like any unknown type
(only `start_bulk` and `fan_out.start_ops_job` store one, through `store_ops_job`), and the worker runs
it with the lifecycle's own store and queue (`bulk.ops_job_type`), so no job type's `JobContext`
carries the power to act on other jobs.

This module is what both kinds share and nothing more, so `bulk` and `fan_out` stand on it and not on
each other.
"""

import uuid
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from lambdas.models.job import Job, JobAction, JobStatus, NewJob
from lambdas.observability import log_transition, logger
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue

OPS_TYPE = "bulk_action"
OPS_MAX_ATTEMPTS = 3
PAGE_SIZE = 100
# A page is up to 100 conditional writes and sends: a few seconds. Stop before the worker's timeout.
RESERVE_MS = 15_000


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


def store_ops_job(store: JobStore, queue: JobQueue, payload: Mapping[str, Any], owner: str) -> Job:
    """An ops job stored and queued; a failed send is left to the recovery sweep."""
    job = store.put_new(
        NewJob(
            job_id=str(uuid.uuid4()),
            job_type=OPS_TYPE,
            payload=dict(payload),
            max_attempts=OPS_MAX_ATTEMPTS,
            owner=owner,
        )
    )
    log_transition(job.job_id, job.job_type, "new", JobStatus.PENDING, 0)
    try:
        queue.for_type(job.job_type).send(job.job_id, group=job.owner)
    except Exception:
        logger.exception("SendMessage failed after an ops job was stored; the recovery sweep will send it")
    return job
