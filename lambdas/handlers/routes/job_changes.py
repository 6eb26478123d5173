"""The routes that change jobs: POST /jobs/{jobId}/retry, /cancel and /reschedule (the caller's own job,
or any for the operator), and the operator's bulk POST /jobs/retry and /jobs/cancel, which start an ops
job that does the work in the worker.

Each route imports its lifecycle module when it first runs, not at the api's cold start
(`lambdas/handlers/api.py`).
"""

from typing import Annotated

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path

from lambdas import config
from lambdas.handlers.rest.links import job_url
from lambdas.handlers.rest.openapi import REFUSED_CALLER, responses
from lambdas.handlers.rest.services import ApiServices, RequestCaller, RequestEvent
from lambdas.models.api import BulkRequest, JobView, RescheduleRequest, SubmitJobResponse
from lambdas.models.job import JobAction

router = Router()

JobId = Annotated[str, Path(alias="jobId", min_length=1, max_length=64)]
_NOT_FOUND = (404, "No such job, or one another client's key submitted.")
_OPERATOR_ONLY = (
    403,
    f"{REFUSED_CALLER}, or a client's key: bulk actions are the operator's.",
)


def _accepted(event: RequestEvent, job_id: str, status: str) -> Response[SubmitJobResponse]:
    return Response(
        status_code=202,
        content_type=content_types.APPLICATION_JSON,
        body=SubmitJobResponse(job_id=job_id, status=status),
        headers={"Location": job_url(event, job_id)},
    )


@router.post(
    "/jobs/<jobId>/retry",
    summary="Retry a job",
    description=(
        "A `dead` job goes back to `pending` with a fresh attempt budget; a finished fan-out retries its dead "
        "children and goes back to `waiting`. Its history keeps the earlier attempts. A fan-out of more than "
        f"{config.FAN_OUT_INLINE_CHILDREN} children is retried by an ops job (type `bulk_action`): the answer's `jobId` and "
        "Location are the ops job's, whose `result` counts the children retried."
    ),
    responses=responses(
        202,
        "Retrying",
        SubmitJobResponse,
        400,
        _NOT_FOUND,
        (409, "The job is not in a state that can be retried (`not_retryable`)."),
    ),
)
def retry_job(
    job_id: JobId, caller: RequestCaller, found: ApiServices, event: RequestEvent
) -> Response[SubmitJobResponse]:
    from lambdas.lifecycle.requests.operations import Deferred
    from lambdas.lifecycle.requests.operations import retry_job as retry

    job = retry(found.store, found.queue, caller, job_id)
    if isinstance(job, Deferred):
        job = job.job
    return _accepted(event, job.job_id, job.status.value)


@router.post(
    "/jobs/<jobId>/cancel",
    summary="Cancel a job",
    description=(
        "A `pending` job becomes `cancelled` and never runs; a `waiting` fan-out cancels its pending "
        f"children, then itself. A fan-out of more than {config.FAN_OUT_INLINE_CHILDREN} children is cancelled by an ops job "
        "(type `bulk_action`): 202 with the ops job's `jobId` and Location."
    ),
    responses=responses(
        200,
        "Cancelled",
        JobView,
        400,
        _NOT_FOUND,
        (409, "The job is not in a state that can be cancelled (`not_cancellable`)."),
        also=(202, "A large fan-out: the ops job that cancels it was started.", SubmitJobResponse),
    ),
)
def cancel_job(
    job_id: JobId, caller: RequestCaller, found: ApiServices, event: RequestEvent
) -> Response[JobView | SubmitJobResponse]:
    from lambdas.lifecycle.requests.operations import Deferred, allowed_actions
    from lambdas.lifecycle.requests.operations import cancel_job as cancel

    job = cancel(found.store, caller, job_id, found.queue)
    if isinstance(job, Deferred):
        return _accepted(event, job.job.job_id, job.job.status.value)  # type: ignore[return-value]
    return Response(
        status_code=200,
        content_type=content_types.APPLICATION_JSON,
        body=JobView.of(job, allowed_actions(job)),
    )


@router.post(
    "/jobs/<jobId>/reschedule",
    summary="Reschedule a job",
    description=(
        "A job that has not started (`scheduled`, or `pending` with a start time) gets a new `runAt`: "
        "`scheduled` when it is more than 900 s ahead, else `pending`. Refused (409) when the job started "
        "or changed meanwhile."
    ),
    responses=responses(
        200,
        "Rescheduled",
        JobView,
        400,
        _NOT_FOUND,
        (409, "The job started, finished or was cancelled (`not_reschedulable`)."),
    ),
)
def reschedule_job(
    job_id: JobId, request: RescheduleRequest, caller: RequestCaller, found: ApiServices
) -> JobView:
    from lambdas.lifecycle.requests.operations import allowed_actions
    from lambdas.lifecycle.requests.reschedule import reschedule_job as reschedule

    horizon = found.settings.schedule_horizon_seconds
    moved = reschedule(found.store, found.queue, caller, job_id, request.run_at, horizon)
    return JobView.of(moved, allowed_actions(moved))


def _bulk(
    action: JobAction, request: BulkRequest, caller: RequestCaller, found: ApiServices, event: RequestEvent
) -> Response[SubmitJobResponse]:
    from lambdas.lifecycle.requests.operations import start_bulk

    job = start_bulk(found.store, found.queue, caller, action, request)
    return _accepted(event, job.job_id, job.status.value)


@router.post(
    "/jobs/retry",
    summary="Retry jobs in bulk (operator)",
    description=(
        "Starts an ops job (type `bulk_action`) that retries every matching job (default status `dead`); "
        "follow its progress in its `result` at the Location."
    ),
    responses=responses(202, "Started", SubmitJobResponse, 400, _OPERATOR_ONLY),
)
def bulk_retry(
    request: BulkRequest, caller: RequestCaller, found: ApiServices, event: RequestEvent
) -> Response[SubmitJobResponse]:
    return _bulk(JobAction.RETRY, request, caller, found, event)


@router.post(
    "/jobs/cancel",
    summary="Cancel jobs in bulk (operator)",
    description=(
        "Starts an ops job (type `bulk_action`) that cancels every matching job (default status "
        "`pending`); follow its progress in its `result` at the Location."
    ),
    responses=responses(202, "Started", SubmitJobResponse, 400, _OPERATOR_ONLY),
)
def bulk_cancel(
    request: BulkRequest, caller: RequestCaller, found: ApiServices, event: RequestEvent
) -> Response[SubmitJobResponse]:
    return _bulk(JobAction.CANCEL, request, caller, found, event)
