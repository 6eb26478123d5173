"""Submitting jobs and reading them back: POST /jobs, GET /jobs, GET /jobs/{jobId} and its children
and deliveries. Every read is scoped to the caller (a client sees the jobs its key submitted).

Each route imports its lifecycle module when it first runs, not at the api's cold start
(`lambdas/handlers/api.py`).
"""

from typing import Annotated

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Header, Path, Query
from aws_lambda_powertools.metrics import MetricUnit

from lambdas import config
from lambdas.handlers.rest.links import job_url
from lambdas.handlers.rest.openapi import responses
from lambdas.handlers.rest.services import ApiServices, RequestCaller, RequestEvent
from lambdas.lifecycle.requests.submit import submit
from lambdas.models.api import ChildPage, DeliveryPage, JobPage, JobView, SubmitJobRequest, SubmitJobResponse
from lambdas.models.job import JobStatus
from lambdas.observability import metrics

router = Router()

JobId = Annotated[str, Path(alias="jobId", min_length=1, max_length=64)]
Limit = Annotated[int, Query(ge=1, le=100, description="Items per page.")]
Cursor = Annotated[
    str | None,
    Query(min_length=1, max_length=16_384, description="The `nextCursor` of the previous page, as it was."),
]
_BAD_QUERY = (400, "A parameter out of its bounds, or a cursor this API did not hand out (`invalid_cursor`).")
_NOT_FOUND = (404, "No such job, or one another client's key submitted.")


@router.post(
    "/jobs",
    summary="Submit a job",
    description="Stores the job and queues it. Answers 202 at once; follow the job at its Location.",
    responses=responses(202, "Accepted", SubmitJobResponse, 400, 409, 413, 422),
)
def submit_job(
    request: SubmitJobRequest,
    caller: RequestCaller,
    found: ApiServices,
    event: RequestEvent,
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="idempotency-key",
            min_length=1,
            max_length=255,
            description="Repeat a request safely: the same key and body return the same job.",
        ),
    ] = None,
) -> Response[SubmitJobResponse]:
    submitted = submit(
        request,
        found.store,
        found.queue,
        caller,
        idempotency_key=idempotency_key,
        horizon_seconds=found.settings.schedule_horizon_seconds,
        retry_policies=found.settings.retry_policies,
    )
    if submitted.created:
        metrics.add_metric(name=config.METRIC_SUBMITTED, unit=MetricUnit.Count, value=1)
    return Response(
        status_code=202,
        content_type=content_types.APPLICATION_JSON,
        body=SubmitJobResponse(job_id=submitted.job.job_id, status=submitted.job.status.value),
        headers={"Location": job_url(event, submitted.job.job_id)},
    )


@router.get(
    "/jobs",
    summary="List jobs",
    description=(
        "The caller's jobs, newest first: by the time they entered `status` when it is given, else by "
        "creation. Every job for the operator key."
    ),
    responses=responses(200, "A page of jobs", JobPage, _BAD_QUERY),
)
def list_jobs(
    caller: RequestCaller,
    found: ApiServices,
    status: Annotated[JobStatus | None, Query()] = None,
    job_type: Annotated[str | None, Query(alias="type", min_length=1, max_length=64)] = None,
    limit: Limit = 25,
    cursor: Cursor = None,
) -> JobPage:
    from lambdas.lifecycle.requests.operations import list_jobs as listed

    return listed(
        found.store,
        caller,
        status=status,
        job_type=job_type,
        limit=limit,
        cursor=cursor,
    )


@router.get(
    "/jobs/<jobId>",
    summary="Get a job",
    description="The job, its last attempts and, for a fan-out, its children's counts.",
    responses=responses(200, "The job", JobView, 400, _NOT_FOUND),
)
def get_job(job_id: JobId, caller: RequestCaller, found: ApiServices) -> JobView:
    from lambdas.lifecycle.requests.operations import allowed_actions, find_job
    from lambdas.lifecycle.requests.uploads import download_links

    job = find_job(found.store, job_id, caller)
    return JobView.of(job, allowed_actions(job), download_links(job))


@router.get(
    "/jobs/<jobId>/children",
    summary="List a fan-out's children",
    description="One delivery job per endpoint, in the payload's order; empty for a job without children.",
    responses=responses(200, "A page of children", ChildPage, _BAD_QUERY, _NOT_FOUND),
)
def list_children(
    job_id: JobId,
    caller: RequestCaller,
    found: ApiServices,
    status: Annotated[JobStatus | None, Query()] = None,
    limit: Limit = 25,
    cursor: Cursor = None,
) -> ChildPage:
    from lambdas.lifecycle.requests.operations import list_children as listed

    return listed(found.store, caller, job_id, status=status, limit=limit, cursor=cursor)


@router.get(
    "/jobs/<jobId>/deliveries",
    summary="List delivery attempts",
    description=(
        "Every attempt to deliver a webhook: all of a fan-out's children's, a delivery child's own; "
        "empty for other jobs."
    ),
    responses=responses(200, "A page of delivery attempts", DeliveryPage, _BAD_QUERY, _NOT_FOUND),
)
def list_deliveries(
    job_id: JobId, caller: RequestCaller, found: ApiServices, limit: Limit = 25, cursor: Cursor = None
) -> DeliveryPage:
    from lambdas.lifecycle.requests.operations import list_deliveries as listed

    return listed(found.store, found.deliveries, caller, job_id, limit=limit, cursor=cursor)
