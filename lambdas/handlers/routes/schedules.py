"""Recurring schedules: POST/GET /schedules, GET/PATCH/DELETE /schedules/{scheduleId} and POST
/schedules/{scheduleId}/run. Scoped to the caller's key: another key's schedule is 404."""

from typing import Annotated

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path

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
_INVALID = (400, "An expression or time zone EventBridge Scheduler would refuse, or one that never fires.")


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
    from lambdas.lifecycle import schedules

    created = schedules.create_schedule(
        found.schedules, caller, request, found.settings.max_schedules_per_client
    )
    body = schedules.view(found.schedules, found.store, created)
    return Response(status_code=201, content_type=content_types.APPLICATION_JSON, body=body)


@router.get(
    "/schedules",
    summary="List schedules",
    description="The caller's schedules.",
    responses=responses(200, "The schedules", SchedulePage),
)
def list_schedules(caller: RequestCaller, found: ApiServices) -> SchedulePage:
    from lambdas.lifecycle import schedules

    owned = found.schedules.of_owner(caller.owner)
    return SchedulePage(schedules=[schedules.view(found.schedules, found.store, s) for s in owned])


@router.get(
    "/schedules/<scheduleId>",
    summary="Read a schedule",
    description="With its next fire times and the jobs of its last firings.",
    responses=responses(200, "The schedule", ScheduleView, 400, _NOT_FOUND),
)
def get_schedule(schedule_id: ScheduleId, caller: RequestCaller, found: ApiServices) -> ScheduleView:
    from lambdas.lifecycle import schedules

    schedule = schedules.find_schedule(found.schedules, caller, schedule_id)
    return schedules.view(found.schedules, found.store, schedule)


@router.patch(
    "/schedules/<scheduleId>",
    summary="Change a schedule",
    description="Pause (`state: paused`) or resume it, or change its expression, time zone, job or overlap.",
    responses=responses(200, "Changed", ScheduleView, _INVALID, _NOT_FOUND, 422),
)
def update_schedule(
    schedule_id: ScheduleId, request: UpdateScheduleRequest, caller: RequestCaller, found: ApiServices
) -> ScheduleView:
    from lambdas.lifecycle import schedules

    changed = schedules.update_schedule(found.schedules, caller, schedule_id, request)
    return schedules.view(found.schedules, found.store, changed)


@router.delete(
    "/schedules/<scheduleId>",
    summary="Delete a schedule",
    description="It fires no more; the jobs it created stay. Answers the schedule as it was.",
    responses=responses(200, "Deleted", ScheduleView, 400, _NOT_FOUND),
)
def delete_schedule(schedule_id: ScheduleId, caller: RequestCaller, found: ApiServices) -> ScheduleView:
    from lambdas.lifecycle import schedules

    deleted = schedules.delete_schedule(found.schedules, caller, schedule_id)
    return schedules.view(found.schedules, found.store, deleted, upcoming=False)


@router.post(
    "/schedules/<scheduleId>/run",
    summary="Run a schedule now",
    description="One firing now, paused or not: 202 with the job it created.",
    responses=responses(202, "Started", SubmitJobResponse, 400, _NOT_FOUND),
)
def run_schedule(
    schedule_id: ScheduleId, caller: RequestCaller, found: ApiServices, event: RequestEvent
) -> Response[SubmitJobResponse]:
    from lambdas.lifecycle import schedules

    schedule = schedules.find_schedule(found.schedules, caller, schedule_id)
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
