"""GET /stats: the caller's pipeline at a glance (the console's overview)."""

from aws_lambda_powertools.event_handler.api_gateway import Router

from lambdas.handlers.rest.openapi import responses
from lambdas.handlers.rest.services import caller, services
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
def get_stats() -> StatsView:
    from lambdas.lifecycle.stats import pipeline_stats
    from lambdas.store.gauges import JobGauges

    found = services()
    return pipeline_stats(
        found.store,
        JobGauges(found.settings.jobs_table),
        caller(router),
        queue_url=found.settings.queue_url,
        dlq_url=found.settings.dlq_url,
    )
