"""SnapStart as CDK context (`snapStart`): the named functions run a published version with SnapStart
on, behind the alias `live`, and what invokes them invokes that alias; the others are untouched."""

from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra.synth import SKIP_BUNDLING, build_app
from tests.infra.cfn import function, functions, resources

pytestmark = pytest.mark.xdist_group("infra-template")


@pytest.fixture(scope="module")
def snap_started(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    context = {"snapStart": "api,worker", **SKIP_BUNDLING}
    _, stack = build_app(context, outdir=str(tmp_path_factory.mktemp("snap")), checks=False)
    return dict(Template.from_stack(stack).to_json())


def _alias_of(template: dict[str, Any], function_id: str) -> str:
    """The id of the alias `live` on a version of the function."""
    versions = [
        lid
        for lid, r in resources(template, "AWS::Lambda::Version").items()
        if r["Properties"]["FunctionName"] == {"Ref": function_id}
    ]
    assert len(versions) == 1, versions
    aliases = [
        lid
        for lid, r in resources(template, "AWS::Lambda::Alias").items()
        if r["Properties"]["FunctionVersion"] == {"Fn::GetAtt": [versions[0], "Version"]}
    ]
    assert len(aliases) == 1, aliases
    assert template["Resources"][aliases[0]]["Properties"]["Name"] == "live"
    return aliases[0]


def _named(value: Any) -> set[str]:
    """The logical ids a property refers to (Ref, Fn::GetAtt), at any depth; pseudo parameters left out."""
    if isinstance(value, list):
        return {name for item in value for name in _named(item)}
    if not isinstance(value, dict):
        return set()
    found = {value["Ref"]} if isinstance(value.get("Ref"), str) else set()
    if "Fn::GetAtt" in value:
        found.add(value["Fn::GetAtt"][0])
    found |= {
        name for key, item in value.items() if key not in ("Ref", "Fn::GetAtt") for name in _named(item)
    }
    return {name for name in found if not name.startswith("AWS::")}


def _integration_targets(template: dict[str, Any]) -> set[str]:
    """The ids of what the API's Lambda integrations invoke."""
    methods = resources(template, "AWS::ApiGateway::Method").values()
    return {
        name for method in methods for name in _named(method["Properties"].get("Integration", {}).get("Uri"))
    }


def test_the_api_runs_its_snapshot_and_the_api_invokes_its_alias(snap_started: dict[str, Any]) -> None:
    """Breaks when the integration stays on the function (`handler=functions.api.function` in
    infra/stack.py) or SnapStart is not set (`snap_start=...` in ServiceFunction)."""
    api_id, api = function(snap_started, "api")
    assert api["Properties"]["SnapStart"] == {"ApplyOn": "PublishedVersions"}
    assert _integration_targets(snap_started) == {_alias_of(snap_started, api_id)}


def test_every_worker_group_s_queue_drives_its_alias(snap_started: dict[str, Any]) -> None:
    """Breaks when the mappings stay on the function (`worker.function` in infra/stack.py's Triggers)."""
    workers = functions(snap_started, "worker")
    assert len(workers) == 2  # the shared worker and process_file's group
    mappings = resources(snap_started, "AWS::Lambda::EventSourceMapping").values()
    mapped = {name for r in mappings for name in _named(r["Properties"]["FunctionName"])}
    for worker_id, worker in workers:
        assert worker["Properties"]["SnapStart"] == {"ApplyOn": "PublishedVersions"}
        assert _alias_of(snap_started, worker_id) in mapped
        assert worker_id not in mapped


def test_functions_not_named_start_as_before(snap_started: dict[str, Any], template: dict[str, Any]) -> None:
    """Without the context no function has SnapStart or an alias of its own; with it, only the named."""
    for entry_point in ("dead_letter", "recovery", "schedules"):
        assert "SnapStart" not in function(snap_started, entry_point)[1]["Properties"]
    for _, resource in resources(template, "AWS::Lambda::Function").items():
        assert "SnapStart" not in resource["Properties"]
    api_id, _ = function(template, "api")
    assert _integration_targets(template) == {api_id}


def test_docs_say_what_snap_start_costs_and_what_a_restore_changes() -> None:
    deploy = (Path(__file__).resolve().parents[2] / "docs" / "deploy.md").read_text()
    section = deploy[deploy.index("## SnapStart") :]
    for words in ("restore", "cache", "random", "connections"):
        assert words in section, words
