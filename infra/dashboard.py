"""The operations dashboard: the pipeline on one CloudWatch page.

Top to bottom: every alarm's state; jobs per minute by outcome, how long each job type runs and how many
of each went back to wait on a limit (the EMF
metrics the functions emit, lambdas/config.py); both queues' depth and oldest message; each function's
invocations, errors, throttles and duration; the API's requests, errors and latency.
"""

from collections.abc import Mapping, Sequence
from typing import Final

from aws_cdk import Duration, Stack
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.monitoring import metrics_namespace, service_metric
from infra.queues import JobQueues
from lambdas import config

# Counts are read per minute, so the graphs keep this period whatever range the viewer picks.
PERIOD: Final = Duration.minutes(1)
_FULL_WIDTH: Final = 24
_HEIGHT: Final = 6
# (metric name, legend) of the job counts, in the order a job reaches them.
JOB_COUNTS: Final = (
    (config.METRIC_SUBMITTED, "submitted"),
    (config.METRIC_SUCCEEDED, "succeeded"),
    (config.METRIC_RETRIED, "retried"),
    (config.METRIC_DEAD, "dead"),
)
DURATION_PERCENTILES: Final = ("p50", "p99")
# (metric name, statistic, title) of the per-function graphs: Lambda's own metrics.
FUNCTION_METRICS: Final = (
    ("Invocations", cloudwatch.Stats.SUM, "Invocations per minute"),
    ("Errors", cloudwatch.Stats.SUM, "Errors per minute"),
    ("Throttles", cloudwatch.Stats.SUM, "Throttles per minute"),
    ("Duration", cloudwatch.Stats.p(99), "Duration p99 (ms)"),
)


class OperationsDashboard(Construct):
    """One dashboard per stack; `url` opens it in the console of the stack's region."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        alarms: Sequence[cloudwatch.IAlarm],
        queues: JobQueues,
        functions: Mapping[str, lambda_.IFunction],
        api_stage: apigateway.Stage,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        # Dashboards are global to the account: the region keeps two deployments of the stack apart.
        name = f"{stack.stack_name}-{stack.region}"
        self.dashboard = cloudwatch.Dashboard(
            self,
            "Dashboard",
            dashboard_name=name,
            default_interval=Duration.hours(3),
            period_override=cloudwatch.PeriodOverride.INHERIT,
        )
        self.dashboard.add_widgets(
            cloudwatch.AlarmStatusWidget(
                title="Alarms",
                alarms=list(alarms),
                width=_FULL_WIDTH,
                sort_by=cloudwatch.AlarmStatusWidgetSortBy.STATE_UPDATED_TIMESTAMP,
            )
        )
        self.dashboard.add_widgets(*_job_widgets(self))
        self.dashboard.add_widgets(*_queue_widgets(queues))
        self.dashboard.add_widgets(*_function_widgets(functions))
        self.dashboard.add_widgets(*_api_widgets(api_stage))
        self.url = (
            f"https://{stack.region}.console.aws.amazon.com/cloudwatch/home?region={stack.region}"
            f"#dashboards/dashboard/{self.dashboard.dashboard_name}"
        )


def _graph(
    title: str, metrics: Sequence[cloudwatch.IMetric], *, per_row: int, unit: str
) -> cloudwatch.GraphWidget:
    """The one graph shape of this dashboard: a row holds `per_row` of them, the left axis says the unit."""
    return cloudwatch.GraphWidget(
        title=title,
        left=list(metrics),
        left_y_axis=cloudwatch.YAxisProps(label=unit, show_units=False, min=0),
        width=_FULL_WIDTH // per_row,
        height=_HEIGHT,
        period=PERIOD,
    )


def _job_widgets(scope: Construct) -> list[cloudwatch.IWidget]:
    counts = [service_metric(scope, name, PERIOD).with_(label=label) for name, label in JOB_COUNTS]
    return [
        _graph("Jobs per minute", counts, per_row=2, unit="jobs"),
        _graph(
            "Job duration by type (ms)", _durations_by_type(metrics_namespace(scope)), per_row=2, unit="ms"
        ),
        _graph(
            "Jobs sent back to wait on a limit, by type",
            [_deferred_by_type(metrics_namespace(scope))],
            per_row=1,
            unit="jobs",
        ),
    ]


def _deferred_by_type(namespace: str) -> cloudwatch.IMetric:
    """How many jobs of each type went back to wait (over a limit, or RetryLater) per minute: a type
    whose line stays high is held back by its limit (GET /limits says which key)."""
    schema = f"{{{namespace},jobType,service}}"
    query = f'{schema} MetricName="{config.METRIC_DEFERRED}" service="{config.SERVICE_NAME}"'
    return cloudwatch.SearchExpression(
        expression=f"SEARCH('{query}', 'Sum', {int(PERIOD.to_seconds())})",
        label="${PROP('Dim.jobType')}",
        period=PERIOD,
    )


def _durations_by_type(namespace: str) -> list[cloudwatch.IMetric]:
    """One line per job type and percentile. A search rather than a list of types, so a type added
    later (docs/job-types.md) shows up without touching the stack. The worker emits the duration with
    exactly the dimensions `service` and `jobType` (lambdas/handlers/worker.py)."""
    schema = f"{{{namespace},jobType,service}}"
    query = f'{schema} MetricName="{config.METRIC_DURATION}" service="{config.SERVICE_NAME}"'
    return [
        cloudwatch.SearchExpression(
            expression=f"SEARCH('{query}', '{percentile}', {int(PERIOD.to_seconds())})",
            label=f"{percentile} ${{PROP('Dim.jobType')}}",
            period=PERIOD,
        )
        for percentile in DURATION_PERCENTILES
    ]


def _queue_widgets(queues: JobQueues) -> list[cloudwatch.IWidget]:
    pairs = [
        (f"{kind}{' ' + suffix if suffix else ''}", queue)
        for suffix, pair in queues.pairs.items()
        for kind, queue in (("main", pair.queue), ("dead-letter", pair.dead_letter))
    ]
    depth = [
        queue.metric_approximate_number_of_messages_visible(
            period=PERIOD, statistic=cloudwatch.Stats.MAXIMUM, label=label
        )
        for label, queue in pairs
    ]
    age = [
        queue.metric_approximate_age_of_oldest_message(
            period=PERIOD, statistic=cloudwatch.Stats.MAXIMUM, label=label
        )
        for label, queue in pairs
    ]
    return [
        _graph("Queue depth (messages visible)", depth, per_row=2, unit="messages"),
        _graph("Age of the oldest message (s)", age, per_row=2, unit="seconds"),
    ]


def _function_widgets(functions: Mapping[str, lambda_.IFunction]) -> list[cloudwatch.IWidget]:
    return [
        _graph(
            title,
            [
                function.metric(metric_name, statistic=statistic, period=PERIOD, label=name)
                for name, function in functions.items()
            ],
            per_row=len(FUNCTION_METRICS),
            unit="ms" if metric_name == "Duration" else "count",
        )
        for metric_name, statistic, title in FUNCTION_METRICS
    ]


def _api_widgets(stage: apigateway.Stage) -> list[cloudwatch.IWidget]:
    requests = [
        stage.metric_count(period=PERIOD, statistic=cloudwatch.Stats.SUM, label="requests"),
        stage.metric_client_error(period=PERIOD, statistic=cloudwatch.Stats.SUM, label="4xx"),
        stage.metric_server_error(period=PERIOD, statistic=cloudwatch.Stats.SUM, label="5xx"),
    ]
    latency = [
        stage.metric_latency(period=PERIOD, statistic=statistic, label=f"latency {statistic}")
        for statistic in DURATION_PERCENTILES
    ] + [
        stage.metric_integration_latency(
            period=PERIOD, statistic=cloudwatch.Stats.p(99), label="function p99"
        )
    ]
    return [
        _graph("API requests and errors per minute", requests, per_row=2, unit="requests"),
        _graph("API latency (ms)", latency, per_row=2, unit="ms"),
    ]
