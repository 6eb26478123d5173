"""GET /limits: each job type's flow-control limit and its keys in use (the operator's)."""

from aws_lambda_powertools.event_handler.api_gateway import Router

from lambdas.handlers.rest.openapi import responses
from lambdas.handlers.rest.services import ApiLimits, RequestCaller
from lambdas.handlers.routes.jobs import Cursor, Limit
from lambdas.lifecycle.attempt.limits import limits_report
from lambdas.models.limits import LimitsView

router = Router()

_BAD_QUERY = (400, "A parameter out of its bounds, or a cursor this API did not hand out (`invalid_cursor`).")
_OPERATOR_ONLY = (
    403,
    "Missing or invalid API key (answered by API Gateway), or a client's key: limits are the operator's.",
)


@router.get(
    "/limits",
    summary="Flow-control limits (operator)",
    description=(
        "Each limited job type's limit (`concurrency`, `perSecond`, `burst`, `key`, `scope`) as this stack "
        "applies it, and each key in use: slots held, tokens available, a receiver's pause, jobs waiting. "
        "Paged as `GET /jobs`: at most `limit` keys a page, types by name; a key unused for seven days "
        "is gone."
    ),
    responses=responses(200, "The limits", LimitsView, _BAD_QUERY, _OPERATOR_ONLY),
)
def get_limits(
    caller: RequestCaller, limits: ApiLimits, limit: Limit = 25, cursor: Cursor = None
) -> LimitsView:
    return limits_report(limits, caller, limit, cursor)
