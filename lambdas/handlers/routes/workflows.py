"""The route that speaks to a running workflow: POST /jobs/{jobId}/events.

Each route imports its lifecycle module when it first runs, not at the api's cold start
(`lambdas/handlers/api.py`).
"""

from typing import Annotated

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path

from lambdas.handlers.rest.openapi import responses
from lambdas.handlers.rest.services import ApiServices, RequestCaller
from lambdas.models.api import EventAccepted, EventRequest

router = Router()

JobId = Annotated[str, Path(alias="jobId", min_length=1, max_length=64)]


@router.post(
    "/jobs/<jobId>/events",
    summary="Send an event to a workflow",
    description=(
        "A workflow waiting for an event of this `name` (`flow.wait_for_event`) goes on with `data` as what "
        "the wait returns: 202. An event the workflow does not wait for now (another name, not waiting yet, "
        "finished, or not a workflow) is refused, never kept for later: 409 `not_waiting`."
    ),
    responses=responses(
        202,
        "Delivered to the waiting workflow",
        EventAccepted,
        400,
        (404, "No such job, or one another client's key submitted."),
        (409, "The job is not waiting for an event of this name (`not_waiting`)."),
    ),
)
def send_event(
    job_id: JobId, request: EventRequest, caller: RequestCaller, found: ApiServices
) -> Response[EventAccepted]:
    from lambdas.lifecycle.workflows.engine import LambdaEngine
    from lambdas.lifecycle.workflows.events import send_event as send

    send(found.store, LambdaEngine(), caller, job_id, request.name, request.data)
    return Response(
        status_code=202,
        content_type=content_types.APPLICATION_JSON,
        body=EventAccepted(job_id=job_id, name=request.name),
    )
