"""What the api's routes work with: the store, the queue and who is calling.

Their modules (boto3 with the store) load with the api's module, since POST /jobs needs them on every
request; the objects are built on the first call, from the function's settings, and
`lambdas.models.settings.reset()` forgets them, as it forgets the settings they come from.
"""

from dataclasses import dataclass
from functools import cache
from typing import cast

from aws_lambda_powertools.event_handler.api_gateway import BaseRouter
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent

from lambdas.handlers.rest.identity import caller_of, iam_caller_of
from lambdas.jobs.packages import register_job_types
from lambdas.models import settings
from lambdas.models.caller import Caller
from lambdas.store.factory import job_store
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue
from lambdas.store.schedules import ScheduleStore


@dataclass(frozen=True)
class Services:
    store: JobStore
    queue: JobQueue
    settings: settings.ApiSettings
    schedules: ScheduleStore


@cache
def services() -> Services:
    api = settings.api()
    register_job_types(api.job_packages)
    return Services(
        job_store(api),
        JobQueue(api.queue_url, api.job_queue_urls),
        api,
        ScheduleStore(api.schedules_table),
    )


settings.forget_on_reset(services)


def request_of(router: BaseRouter) -> APIGatewayProxyEvent:
    """The request a route answers: always a REST proxy event, which is all the api's resolver reads."""
    return cast(APIGatewayProxyEvent, router.current_event)


def caller(router: BaseRouter) -> Caller:
    """The request's caller: its API key's id, and whether that is the operator key's; in IAM mode, the
    client or operator its signing role is mapped to."""
    identity = request_of(router).request_context.identity
    api = settings.api()
    if api.iam_callers is not None:
        return iam_caller_of(identity.user_arn, api.iam_callers)
    return caller_of(identity.api_key_id, api.operator_key_id or "")
