"""What the api's routes work with, handed to them by Powertools' dependency injection (`Depends`): who
is calling (`RequestCaller`), the store and queue (`ApiServices`), the flow-control limits
(`ApiLimits`), the webhook secrets (`ApiSecrets`) and the request's event (`RequestEvent`, for the
links a route answers with). A route declares the ones it needs as parameters; none builds them or
reads the caller's identity itself. Powertools keeps none of these in the OpenAPI document.

The caller is read once per request. The others are built on their first use, from the function's
settings, and kept for the process; `lambdas.models.settings.reset()` forgets them, as it forgets the
settings they come from. Their modules (boto3 with the store) load with the api's module, since POST
/jobs needs them on every request; the delivery log and the gauges load on their first use.
"""

from dataclasses import dataclass
from functools import cache, cached_property
from typing import TYPE_CHECKING, Annotated, cast

from aws_lambda_powertools.event_handler import Depends
from aws_lambda_powertools.event_handler.request import Request
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent

from lambdas.handlers.rest.identity import caller_of, iam_caller_of
from lambdas.jobs.packages import register_job_types
from lambdas.lifecycle.attempt.limits import Limits
from lambdas.lifecycle.requests.webhook_secrets import WebhookSecrets, webhook_secrets
from lambdas.models import settings
from lambdas.models.caller import Caller
from lambdas.store.factory import job_store
from lambdas.store.jobs import JobStore
from lambdas.store.limits import LimitStore
from lambdas.store.queue import JobQueue
from lambdas.store.schedules import ScheduleStore

if TYPE_CHECKING:
    from lambdas.store.deliveries import DeliveryLog
    from lambdas.store.gauges import JobGauges


@dataclass(frozen=True)
class Services:
    store: JobStore
    queue: JobQueue
    settings: settings.ApiSettings
    schedules: ScheduleStore

    @cached_property
    def deliveries(self) -> "DeliveryLog":
        from lambdas.store.deliveries import DeliveryLog

        return DeliveryLog(self.settings.deliveries_table)

    @cached_property
    def gauges(self) -> "JobGauges":
        from lambdas.store.gauges import JobGauges

        return JobGauges(self.settings.jobs_table)


@cache
def services() -> Services:
    api = settings.api()
    register_job_types(api.job_packages)
    return Services(
        job_store(api),
        JobQueue(api.queue_url, api.job_queue_urls, api.high_queue_urls),
        api,
        ScheduleStore(api.schedules_table),
    )


@cache
def limits() -> Limits:
    api = settings.api()
    register_job_types(api.job_packages)  # the stack's packages' types are limited too
    return Limits(api, LimitStore(api.limits_table), lease_seconds=0)  # reads only: no lease taken


@cache
def secrets() -> WebhookSecrets:
    return webhook_secrets(settings.api())


for _cached in (services, limits, secrets):
    settings.forget_on_reset(_cached)


def request_event(request: Request) -> APIGatewayProxyEvent:
    """The request a route answers: always a REST proxy event, which is all the api's resolver reads."""
    return cast(APIGatewayProxyEvent, request.resolved_event)


def request_caller(request: Request) -> Caller:
    """The request's caller: its API key's id, and whether that is the operator key's; in IAM mode, the
    client or operator its signing role is mapped to (an unmapped one is refused, 403)."""
    identity = request_event(request).request_context.identity
    api = settings.api()
    if api.iam_callers is not None:
        return iam_caller_of(identity.user_arn, api.iam_callers)
    return caller_of(identity.api_key_id, api.operator_key_id or "")


RequestCaller = Annotated[Caller, Depends(request_caller)]
RequestEvent = Annotated[APIGatewayProxyEvent, Depends(request_event)]
ApiServices = Annotated[Services, Depends(services)]
ApiLimits = Annotated[Limits, Depends(limits)]
ApiSecrets = Annotated[WebhookSecrets, Depends(secrets)]
