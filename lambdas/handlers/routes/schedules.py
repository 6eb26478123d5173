"""Recurring schedules: POST/GET /schedules, GET/PATCH/DELETE /schedules/{scheduleId} and POST
/schedules/{scheduleId}/run. Scoped to the caller's key: another key's schedule is 404. The operator's key
names a client's schedules with `?client=` (every client's, in the list, without it).

Each route imports its lifecycle module when it first runs, not at the api's cold start
(`lambdas/handlers/api.py`).
"""

from typing import Annotated

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path, Query

from lambdas.handlers.rest.links import job_url
from lambdas.handlers.rest.openapi import responses
from lambdas.handlers.rest.services import ApiServices, RequestCaller, RequestEvent
from lambdas.models.api import SubmitJobResponse
from lambdas.models.schedule_api import (
    CreateScheduleRequest,
    SchedulePage,
    ScheduleView,
    UpdateScheduleRequest,
)

router = Router()

ScheduleId = Annotated[str, Path(alias="scheduleId", min_length=1, max_length=64)]
_NOT_FOUND = (404, "No such schedule, or one of another client's key (`schedule_not_found`).")
_INVALID = (
    400,
    "An expression or time zone EventBridge Scheduler would refuse, one that never fires, or a job payload "
    "over its bound (`invalid_schedule`).",
)
_FORBIDDEN = (403, "`client` names another client, and the key is not the operator's (`forbidden`).")
Client = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=128,
        description="The operator's key: the client whose schedule this is (its API key id, or with IAM "
        "callers its name). A client's key may name only itself.",
    ),
]
Limit = Annotated[int, Query(ge=1, le=50, description="Schedules per page.")]
Cursor = Annotated[
    str | None,
    Query(min_length=1, max_length=2048, description="The `nextCursor` of the previous page, as it was."),
]


@router.post(
    "/schedules",
    summary="Create a recurring schedule",
    description=(
        "Each firing of `expression` (cron() or rate(), read in `timeZone`) creates one job as `job` "
        "describes. The job is checked as POST /jobs would check it."
    ),
    responses=responses(
        201,
        "Created",
        ScheduleView,
        _INVALID,
        (409, "The key keeps as many schedules as it may (`schedule_limit`)."),
        422,
    ),
)
def create_schedule(
    request: CreateScheduleRequest, caller: RequestCaller, found: ApiServices
) -> Response[ScheduleView]:
    from lambdas.lifecycle.requests import schedules

    created = schedules.create_schedule(
        found.schedules,
        caller,
        request,
        found.settings.max_schedules_per_client,
        found.settings.retry_policies,
    )
    body = schedules.view(found.schedules, found.store, created)
    return Response(status_code=201, content_type=content_types.APPLICATION_JSON, body=body)


@router.get(
    "/schedules",
    summary="List schedules",
    description=(
        "The caller's schedules, a page at a time, failing ones first within a page. The operator's key: "
        "the schedules of `client`, or of every client without it."
    ),
    responses=responses(200, "A page of schedules", SchedulePage, 400, _FORBIDDEN),
)
def list_schedules(
    caller: RequestCaller,
    found: ApiServices,
    client: Client = None,
    limit: Limit = 25,
    cursor: Cursor = None,
) -> SchedulePage:
    from lambdas.lifecycle.requests import schedules

    return schedules.list_schedules(found.schedules, found.store, caller, client, limit, cursor)


@router.get(
    "/schedules/<scheduleId>",
    summary="Read a schedule",
    description="With its next fire times and the jobs of its last firings.",
    responses=responses(200, "The schedule", ScheduleView, 400, _FORBIDDEN, _NOT_FOUND),
)
def get_schedule(
    schedule_id: ScheduleId, caller: RequestCaller, found: ApiServices, client: Client = None
) -> ScheduleView:
    from lambdas.lifecycle.requests import schedules

    schedule = schedules.find_schedule(found.schedules, caller, schedule_id, client)
    return schedules.view(found.schedules, found.store, schedule)


@router.patch(
    "/schedules/<scheduleId>",
    summary="Change a schedule",
    description="Pause (`state: paused`) or resume it, or change its expression, time zone, job or overlap.",
    responses=responses(200, "Changed", ScheduleView, _INVALID, _FORBIDDEN, _NOT_FOUND, 422),
)
def update_schedule(
    schedule_id: ScheduleId,
    request: UpdateScheduleRequest,
    caller: RequestCaller,
    found: ApiServices,
    client: Client = None,
) -> ScheduleView:
    from lambdas.lifecycle.requests import schedules

    changed = schedules.update_schedule(
        found.schedules, caller, schedule_id, request, client, found.settings.retry_policies
    )
    return schedules.view(found.schedules, found.store, changed)


@router.delete(
    "/schedules/<scheduleId>",
    summary="Delete a schedule",
    description="It fires no more; the jobs it created stay. Answers the schedule as it was.",
    responses=responses(200, "Deleted", ScheduleView, 400, _FORBIDDEN, _NOT_FOUND),
)
def delete_schedule(
    schedule_id: ScheduleId, caller: RequestCaller, found: ApiServices, client: Client = None
) -> ScheduleView:
    from lambdas.lifecycle.requests import schedules

    deleted = schedules.delete_schedule(found.schedules, caller, schedule_id, client)
    return schedules.view(found.schedules, found.store, deleted, upcoming=False)


@router.post(
    "/schedules/<scheduleId>/run",
    summary="Run a schedule now",
    description="One firing now, paused or not: 202 with the job it created.",
    responses=responses(202, "Started", SubmitJobResponse, 400, _FORBIDDEN, _NOT_FOUND),
)
def run_schedule(
    schedule_id: ScheduleId,
    caller: RequestCaller,
    found: ApiServices,
    event: RequestEvent,
    client: Client = None,
) -> Response[SubmitJobResponse]:
    from lambdas.lifecycle.requests import schedules

    schedule = schedules.find_schedule(found.schedules, caller, schedule_id, client)
    fired = schedules.fire(
        found.schedules, found.store, found.queue, schedule, int(found.store.now() * 1000), now_run=True
    )
    job = fired.job
    assert job is not None  # a run now is never paused, and the schedule was just read
    return Response(
        status_code=202,
        content_type=content_types.APPLICATION_JSON,
        body=SubmitJobResponse(job_id=job.job_id, status=job.status.value),
        headers={"Location": job_url(event, job.job_id)},
    )
