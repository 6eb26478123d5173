"""GET /stats: the caller's pipeline at a glance (the console's overview).

Each route imports its lifecycle module when it first runs, not at the api's cold start
(`lambdas/handlers/api.py`).
"""

from aws_lambda_powertools.event_handler.api_gateway import Router

from lambdas.handlers.rest.openapi import responses
from lambdas.handlers.rest.services import ApiServices, RequestCaller
from lambdas.models.stats import StatsView

router = Router()


@router.get(
    "/stats",
    summary="Pipeline statistics",
    description=(
        "The caller's jobs per state and per type, jobs finished per minute over the last hour, and the "
        "queues' depths. Counts stop at 1,000 (`more: true`); nothing here scans the table."
    ),
    responses=responses(200, "Statistics", StatsView),
)
def get_stats(caller: RequestCaller, found: ApiServices) -> StatsView:
    from lambdas.lifecycle.requests.stats import pipeline_stats

    return pipeline_stats(
        found.store,
        found.gauges,
        caller,
        queue_url=found.settings.queue_url,
        dlq_url=found.settings.dlq_url,
    )
