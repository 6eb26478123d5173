"""provision() on the real synthesized stack: environments resolve to what was created, and anything
the stack does not emit (a property, a resource type, an intrinsic function, a condition) is refused
with `UnsupportedTemplateError` naming it, before anything is created.

test_template_stack.py checks each created resource against its declaration.
"""

import copy
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from infra.api import ROUTES
from local_runtime.template import Provisioned, UnsupportedTemplateError, provision

Change = Callable[[dict[str, Any]], None]


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws():
        yield


def _first(template: dict[str, Any], resource_type: str) -> dict[str, Any]:
    return next(d for d in template["Resources"].values() if d["Type"] == resource_type)


def _worker_env(template: dict[str, Any]) -> dict[str, Any]:
    function = next(
        d
        for d in template["Resources"].values()
        if d["Properties"].get("Handler") == "lambdas.handlers.worker.handler"
    )
    variables: dict[str, Any] = function["Properties"]["Environment"]["Variables"]
    return variables


def _expected(value: Any, provisioned: Provisioned) -> str:
    if isinstance(value, dict) and "Ref" in value:
        return provisioned.resources[value["Ref"]].ref
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        logical_id, attribute = value["Fn::GetAtt"]
        return provisioned.resources[logical_id].attributes[attribute]
    if isinstance(value, dict) and "Fn::Join" in value:  # the JSON of each type's queue URL
        separator, parts = value["Fn::Join"]
        return str(separator).join(_expected(part, provisioned) for part in parts)
    assert isinstance(value, str), f"an intrinsic this test does not know: {value}"
    return value


def test_every_function_environment_resolves_to_the_created_resources(
    template: dict[str, Any], aws: None
) -> None:
    provisioned = provision(template)

    for logical_id, function in provisioned.functions.items():
        declared = template["Resources"][logical_id]["Properties"]["Environment"]["Variables"]
        assert dict(function.environment) == {
            name: _expected(value, provisioned) for name, value in declared.items()
        }


def test_routes_and_outputs_are_read_from_the_template(template: dict[str, Any], aws: None) -> None:
    provisioned = provision(template)

    (api,) = provisioned.apis
    methods = [d for d in template["Resources"].values() if d["Type"] == "AWS::ApiGateway::Method"]
    console = [("GET", "/console"), ("GET", "/console/{file}")]
    assert sorted((r.method, r.resource) for r in api.routes) == sorted([*ROUTES, *console])
    assert len(api.routes) == len(methods)
    assert (
        provisioned.outputs["ApiUrl"]
        == f"https://{api.api_id}.execute-api.us-east-1.amazonaws.com/{api.stage}/"
    )
    assert set(provisioned.outputs) == set(template["Outputs"])


def _queue_property(t: dict[str, Any]) -> None:
    _first(t, "AWS::SQS::Queue")["Properties"]["FifoQueue"] = True


def _table_stream(t: dict[str, Any]) -> None:
    _first(t, "AWS::DynamoDB::Table")["Properties"]["StreamSpecification"] = {"StreamViewType": "NEW_IMAGE"}


def _mapping_filter(t: dict[str, Any]) -> None:
    _first(t, "AWS::Lambda::EventSourceMapping")["Properties"]["FilterCriteria"] = {"Filters": []}


def _global_table(t: dict[str, Any]) -> None:
    _first(t, "AWS::DynamoDB::Table")["Type"] = "AWS::DynamoDB::GlobalTable"


def _if_in_environment(t: dict[str, Any]) -> None:
    _worker_env(t)["LOCAL"] = {"Fn::If": ["IsLocal", "yes", "no"]}


def _no_value(t: dict[str, Any]) -> None:
    _worker_env(t)["GONE"] = {"Ref": "AWS::NoValue"}


def _conditions(t: dict[str, Any]) -> None:
    t["Conditions"] = {"IsLocal": {"Fn::Equals": [{"Ref": "AWS::Region"}, "us-east-1"]}}


def _conditional_resource(t: dict[str, Any]) -> None:
    _first(t, "AWS::SNS::Topic")["Condition"] = "IsLocal"


def _scheduler_start_date(t: dict[str, Any]) -> None:
    _first(t, "AWS::Scheduler::Schedule")["Properties"]["StartDate"] = "2030-01-01T00:00:00Z"


def _scheduler_flexible_window(t: dict[str, Any]) -> None:
    window = {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 5}
    _first(t, "AWS::Scheduler::Schedule")["Properties"]["FlexibleTimeWindow"] = window


def _unknown_attribute(t: dict[str, Any]) -> None:
    key = next(lid for lid, d in t["Resources"].items() if d["Type"] == "AWS::KMS::Key")
    _worker_env(t)["KEY_ARN"] = {"Fn::GetAtt": [key, "Arn"]}


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (_queue_property, "AWS::SQS::Queue property FifoQueue"),
        (_table_stream, "AWS::DynamoDB::Table property StreamSpecification"),
        (_mapping_filter, "AWS::Lambda::EventSourceMapping property FilterCriteria"),
        (_global_table, "resource type AWS::DynamoDB::GlobalTable"),
        (_if_in_environment, "intrinsic function Fn::If"),
        (_no_value, "pseudo parameter AWS::NoValue"),
        (_conditions, "section Conditions"),
        (_conditional_resource, "resource attribute Condition"),
        (_unknown_attribute, "attribute 'Arn' of .*AWS::KMS::Key.* is not known locally"),
        (_scheduler_start_date, "AWS::Scheduler::Schedule property StartDate"),
        (_scheduler_flexible_window, "only FlexibleTimeWindow OFF runs locally"),
    ],
    ids=lambda value: getattr(value, "__name__", "").strip("_") or None,
)
def test_what_the_stack_does_not_emit_is_refused_by_name(
    template: dict[str, Any], aws: None, change: Change, named: str
) -> None:
    # given the real template with one thing the local runtime does not reproduce
    changed = copy.deepcopy(template)
    change(changed)

    with pytest.raises(UnsupportedTemplateError, match=named):
        provision(changed)


def test_a_refused_template_creates_nothing(template: dict[str, Any], aws: None) -> None:
    changed = copy.deepcopy(template)
    _queue_property(changed)

    with pytest.raises(UnsupportedTemplateError):
        provision(changed)

    assert boto3.client("sqs").list_queues().get("QueueUrls", []) == []
    assert boto3.client("dynamodb").list_tables()["TableNames"] == []


def test_the_stack_with_every_context_key_overridden_provisions(aws: None) -> None:
    # Context adds resources (an alert e-mail subscription) that the default stack does not have.
    from infra.synth import synthesize
    from local_runtime.runtime import LOCAL_CONTEXT
    from tests.infra.conftest import CUSTOM_CONTEXT

    provisioned = provision(synthesize({**LOCAL_CONTEXT, **CUSTOM_CONTEXT}))

    assert {m.batch_size for m in provisioned.event_source_mappings} >= {
        int(CUSTOM_CONTEXT["workerBatchSize"])
    }
