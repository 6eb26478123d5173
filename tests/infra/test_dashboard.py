"""The operations dashboard: one per stack, its URL an output, and a widget for each thing an operator
watches, drawn from the metrics that are really emitted."""

import json
import re
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from lambdas import config
from lambdas.handlers import worker
from lambdas.lifecycle.attempt.worker import MessageResult, Outcome
from lambdas.observability import metrics
from tests.infra.cfn import function, functions, logical_id, render, resources

pytestmark = pytest.mark.xdist_group("infra-template")

FUNCTIONS = ("api", "worker", "dead_letter", "recovery", "schedules")


@pytest.fixture(scope="module")
def widgets(cfn: Template) -> list[dict[str, Any]]:
    """The dashboard's widgets, with every intrinsic in its body rendered as text (tests/infra/cfn.py)."""
    (dashboard,) = cfn.find_resources("AWS::CloudWatch::Dashboard").values()
    body: list[dict[str, Any]] = json.loads(render(dashboard["Properties"]["DashboardBody"]))["widgets"]
    return body


def _properties(widgets: list[dict[str, Any]], title: str) -> dict[str, Any]:
    (graph,) = [w for w in widgets if w["type"] == "metric" and w["properties"]["title"] == title]
    properties: dict[str, Any] = graph["properties"]
    return properties


def _graph(widgets: list[dict[str, Any]], title: str) -> list[list[Any]]:
    """The metric lines of the graph with this title."""
    lines: list[list[Any]] = _properties(widgets, title)["metrics"]
    return lines


def _search_schema(expression: str) -> tuple[str, set[str]]:
    """The namespace and the exact dimension set a SEARCH('{Namespace,dim,...} ...') expression finds."""
    match = re.match(r"SEARCH\('\{([^}]*)\}", expression)
    assert match, expression
    namespace, *dimensions = match.group(1).split(",")
    return namespace, set(dimensions)


def _series(lines: list[list[Any]]) -> list[tuple[Any, ...]]:
    """Each plain metric line as (namespace, name, dimensions..., stat, label)."""
    series = []
    for line in lines:
        *identity, options = line
        series.append((*identity, options.get("stat"), options.get("label")))
    return series


def test_one_dashboard_whose_url_is_an_output(cfn: Template, template: dict[str, Any]) -> None:
    cfn.resource_count_is("AWS::CloudWatch::Dashboard", 1)
    (dashboard_id,) = cfn.find_resources("AWS::CloudWatch::Dashboard")
    cfn.has_output("DashboardUrl", {"Value": Match.any_value()})
    # The console of the stack's own region, opened on this dashboard (its Ref is its name).
    url = render(template["Outputs"]["DashboardUrl"]["Value"])
    assert url == (
        "https://Ref(AWS::Region).console.aws.amazon.com/cloudwatch/home?region=Ref(AWS::Region)"
        f"#dashboards/dashboard/Ref({dashboard_id})"
    )
    cfn.has_resource_properties(
        "AWS::CloudWatch::Dashboard",
        {"DashboardName": {"Fn::Join": ["", [f"{config.STACK_ID}-", {"Ref": "AWS::Region"}]]}},
    )


def test_jobs_per_minute_by_outcome(widgets: list[dict[str, Any]]) -> None:
    lines = _series(_graph(widgets, "Jobs per minute"))
    namespace, service = config.METRICS_NAMESPACE, config.SERVICE_NAME
    assert lines == [
        (namespace, config.METRIC_SUBMITTED, "service", service, "Sum", "submitted"),
        (namespace, config.METRIC_SUCCEEDED, "service", service, "Sum", "succeeded"),
        (namespace, config.METRIC_RETRIED, "service", service, "Sum", "retried"),
        (namespace, config.METRIC_DEAD, "service", service, "Sum", "dead"),
    ]
    assert _properties(widgets, "Jobs per minute")["period"] == 60


def test_job_duration_percentiles_per_type(widgets: list[dict[str, Any]]) -> None:
    query = (
        f'{{Offload,jobType,service}} MetricName="{config.METRIC_DURATION}" service="{config.SERVICE_NAME}"'
    )
    assert [options for (options,) in _graph(widgets, "Job duration by type (ms)")] == [
        {
            "expression": f"SEARCH('{query}', '{percentile}', 60)",
            # one line per job type the search finds, named after it
            "label": f"{percentile} ${{PROP('Dim.jobType')}}",
            "period": 60,
        }
        for percentile in ("p50", "p99")
    ]


def test_job_metrics_are_read_as_the_worker_emits_them(
    widgets: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    """A search finds only metrics with exactly its dimension set: compare with a real emission."""
    # when the worker reports a finished job (and flushes its counts, as at the end of an invocation)
    worker._emit_metrics([MessageResult("m-1", Outcome.SUCCEEDED, job_type="send_email", duration_ms=12.5)])
    metrics.flush_metrics()

    blobs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    emitted = {
        name: (directive["Namespace"], set(dimensions))
        for blob in blobs
        for directive in blob["_aws"]["CloudWatchMetrics"]
        for dimensions in directive["Dimensions"]
        for name in (m["Name"] for m in directive["Metrics"])
    }
    # then the duration search and the count lines name the namespace and dimensions emitted
    for (options,) in _graph(widgets, "Job duration by type (ms)"):
        assert _search_schema(options["expression"]) == emitted[config.METRIC_DURATION]
    (succeeded,) = [line for line in _graph(widgets, "Jobs per minute") if line[1] == config.METRIC_SUCCEEDED]
    namespace, _, *dimensions, _ = succeeded
    assert (namespace, set(dimensions[::2])) == emitted[config.METRIC_SUCCEEDED]


def test_depth_and_oldest_message_of_both_queues(
    widgets: list[dict[str, Any]], template: dict[str, Any]
) -> None:
    main = logical_id(template, "AWS::SQS::Queue", "QueuesQueue")
    dlq = logical_id(template, "AWS::SQS::Queue", "DeadLetterQueue")
    queues = resources(template, "AWS::SQS::Queue")
    (group,) = [lid for lid in queues if lid.startswith("QueuesQueue180s1024MB")]
    (group_dlq,) = [lid for lid in queues if lid.startswith("QueuesDeadLetterQueue180s1024MB")]
    for title, metric in (
        ("Queue depth (messages visible)", "ApproximateNumberOfMessagesVisible"),
        ("Age of the oldest message (s)", "ApproximateAgeOfOldestMessage"),
    ):
        assert _series(_graph(widgets, title)) == [
            ("AWS/SQS", metric, "QueueName", f"QueueName({main})", "Maximum", "main"),
            ("AWS/SQS", metric, "QueueName", f"QueueName({dlq})", "Maximum", "dead-letter"),
            # process_file's worker's pair, named by its group
            ("AWS/SQS", metric, "QueueName", f"QueueName({group})", "Maximum", "main 180s1024MB"),
            ("AWS/SQS", metric, "QueueName", f"QueueName({group_dlq})", "Maximum", "dead-letter 180s1024MB"),
        ]


@pytest.mark.parametrize(
    ("title", "metric", "stat"),
    [
        ("Invocations per minute", "Invocations", "Sum"),
        ("Errors per minute", "Errors", "Sum"),
        ("Throttles per minute", "Throttles", "Sum"),
        ("Duration p99 (ms)", "Duration", "p99"),
    ],
)
def test_each_function_per_metric(
    widgets: list[dict[str, Any]], template: dict[str, Any], title: str, metric: str, stat: str
) -> None:
    ids = {name: function(template, name)[0] for name in FUNCTIONS}
    (ids["worker-180s1024MB"],) = [f for f, _ in functions(template, "worker") if f != ids["worker"]]
    order = ["api", "worker", "worker-180s1024MB", "dead_letter", "recovery", "schedules"]
    assert _series(_graph(widgets, title)) == [
        ("AWS/Lambda", metric, "FunctionName", f"Ref({ids[name]})", stat, name) for name in order
    ]


def test_api_errors_and_latency(widgets: list[dict[str, Any]], template: dict[str, Any]) -> None:
    (api,) = resources(template, "AWS::ApiGateway::RestApi").values()
    stage = logical_id(template, "AWS::ApiGateway::Stage", "DeploymentStage")
    dims = ("ApiName", api["Properties"]["Name"], "Stage", f"Ref({stage})")
    assert _series(_graph(widgets, "API requests and errors per minute")) == [
        ("AWS/ApiGateway", "Count", *dims, "Sum", "requests"),
        ("AWS/ApiGateway", "4XXError", *dims, "Sum", "4xx"),
        ("AWS/ApiGateway", "5XXError", *dims, "Sum", "5xx"),
    ]
    assert _series(_graph(widgets, "API latency (ms)")) == [
        ("AWS/ApiGateway", "Latency", *dims, "p50", "latency p50"),
        ("AWS/ApiGateway", "Latency", *dims, "p99", "latency p99"),
        ("AWS/ApiGateway", "IntegrationLatency", *dims, "p99", "function p99"),
    ]


def test_the_state_of_every_alarm(widgets: list[dict[str, Any]], template: dict[str, Any]) -> None:
    (status,) = [w for w in widgets if w["type"] == "alarm"]
    shown = status["properties"]["alarms"]
    assert sorted(shown) == sorted(f"Arn({lid})" for lid in resources(template, "AWS::CloudWatch::Alarm"))
    assert status["width"] == 24
