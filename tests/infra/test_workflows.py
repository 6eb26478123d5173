"""A stack with a workflow type (the docs' onboarding example, named in `jobPackages`): its worker group
gets a durable function with an alias, the worker may invoke that alias only, the API may complete and
stop that function's executions only. Each test names the line it was seen to fail against."""

from typing import Any

import pytest

from infra.bundling import REPO_ROOT
from infra.synth import synthesize
from lambdas import config
from tests.infra.access_rows import expected_row, role_access
from tests.infra.cfn import function, grants, resources, role_statements

pytestmark = pytest.mark.xdist_group("infra-template")

WORKFLOW_PACKAGE = REPO_ROOT / "examples" / "workflow_jobs"


@pytest.fixture(scope="module")
def workflow_template() -> dict[str, Any]:
    return synthesize({"jobPackages": [str(WORKFLOW_PACKAGE)]})


def lambda_grants(template: dict[str, Any], entry_point: str) -> set[tuple[str, str]]:
    props = function(template, entry_point)[1]["Properties"]
    return {
        pair for pair in grants(role_statements(template, props["Role"])) if pair[0].startswith("lambda:")
    }


def test_the_group_with_a_workflow_type_has_a_durable_function_and_its_alias(
    workflow_template: dict[str, Any],
) -> None:
    """Seen failing with `durable_config=durable` dropped from ServiceFunction (no DurableConfig)."""
    function_id, workflow = function(workflow_template, "workflow")
    assert workflow["Properties"]["DurableConfig"] == {
        "ExecutionTimeout": config.WORKFLOW_EXECUTION_TIMEOUT_SECONDS,
        "RetentionPeriodInDays": config.WORKFLOW_RETENTION_DAYS,
    }
    (alias,) = resources(workflow_template, "AWS::Lambda::Alias").values()
    assert alias["Properties"]["Name"] == "live"
    assert alias["Properties"]["FunctionName"] == {"Ref": function_id}
    version_id = alias["Properties"]["FunctionVersion"]["Fn::GetAtt"][0]
    assert workflow_template["Resources"][version_id]["Properties"]["FunctionName"] == {"Ref": function_id}


def test_the_worker_may_invoke_the_alias_only_and_is_told_its_arn(workflow_template: dict[str, Any]) -> None:
    """Seen failing with the worker's grant on `function.function.function_arn` instead of the alias."""
    (alias_id,) = resources(workflow_template, "AWS::Lambda::Alias")
    assert lambda_grants(workflow_template, "worker") == {("lambda:InvokeFunction", f"Ref({alias_id})")}
    variables = function(workflow_template, "worker")[1]["Properties"]["Environment"]["Variables"]
    assert variables[config.ENV_WORKFLOW_FUNCTION] == {"Ref": alias_id}


def test_the_api_and_the_durable_function_reach_only_its_executions(
    workflow_template: dict[str, Any],
) -> None:
    """The API completes callbacks and stops executions, the durable function checkpoints its own: each on
    `function:*` (every version's executions: an alias is not part of an execution's ARN). Seen failing
    with the API's grant on the unqualified function ARN (which never matches an execution)."""
    function_id = function(workflow_template, "workflow")[0]
    executions = f"Arn({function_id}):*"
    assert lambda_grants(workflow_template, "api") == {
        ("lambda:SendDurableExecutionCallbackSuccess", executions),
        ("lambda:StopDurableExecution", executions),
    }
    assert lambda_grants(workflow_template, "workflow") == {
        ("lambda:CheckpointDurableExecution", executions),
        ("lambda:GetDurableExecutionState", executions),
    }


@pytest.mark.parametrize("entry_point", ["api", "worker", "workflow"])
def test_each_role_holds_exactly_its_row_with_workflows(
    workflow_template: dict[str, Any], entry_point: str
) -> None:
    """The access table's rows, the workflow resources included (tests/infra/test_access.py reads them)."""
    assert role_access(workflow_template, entry_point) == expected_row(entry_point, without=())


def test_a_stack_without_workflow_types_has_no_durable_function(template: dict[str, Any]) -> None:
    """Seen failing with the group's `catalog.workflows_of(...)` check dropped (a durable function always)."""
    assert not resources(template, "AWS::Lambda::Alias")
    assert not any(
        "DurableConfig" in f["Properties"] for f in resources(template, "AWS::Lambda::Function").values()
    )
    assert not lambda_grants(template, "worker")
