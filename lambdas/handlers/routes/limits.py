"""GET /limits: each job type's flow-control limit and its keys in use (the operator's)."""

import functools

from aws_lambda_powertools.event_handler.api_gateway import Router

from lambdas.handlers.rest.openapi import responses
from lambdas.handlers.rest.services import caller
from lambdas.jobs.types import register_builtin_types
from lambdas.lifecycle.limits import Limits, limits_report
from lambdas.models import settings
from lambdas.models.limits import LimitsView
from lambdas.store.limits import LimitStore

router = Router()

_OPERATOR_ONLY = (
    403,
    "Missing or invalid API key (answered by API Gateway), or a client's key: limits are the operator's.",
)


@functools.cache
def _limits() -> Limits:
    api = settings.api()
    register_builtin_types()
    return Limits(api, LimitStore(api.limits_table), lease_seconds=0)  # reads only: no lease taken


settings.forget_on_reset(_limits)


@router.get(
    "/limits",
    summary="Flow-control limits (operator)",
    description=(
        "Each limited job type's limit (`concurrency`, `perSecond`, `burst`, `key`) as this stack applies "
        "it, and each key in use: slots held, tokens available, a receiver's pause, jobs waiting."
    ),
    responses=responses(200, "The limits", LimitsView, _OPERATOR_ONLY),
)
def get_limits() -> LimitsView:
    return limits_report(_limits(), caller(router))
