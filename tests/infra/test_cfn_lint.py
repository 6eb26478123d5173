"""cfn-lint over the synthesized template: CloudFormation would accept it as written."""

import json
from typing import Any

import pytest
from cfnlint.api import lint

pytestmark = pytest.mark.xdist_group("infra-template")

# CDK adds DependsOn on a function's role next to the GetAtt of that role; harmless redundancy.
TOLERATED_WARNINGS = {"W3005"}


@pytest.fixture(scope="module")
def matches(template: dict[str, Any]) -> list[Any]:
    return lint(json.dumps(template), regions=["us-east-1", "eu-west-1"])


def test_no_errors(matches: list[Any]) -> None:
    errors = [
        f"{m.rule.id} {m.message} at {'/'.join(map(str, m.path))}" for m in matches if m.rule.id[0] == "E"
    ]
    assert errors == []


def test_no_warnings_beyond_cdks_own(matches: list[Any]) -> None:
    warnings = {m.rule.id for m in matches if m.rule.id[0] == "W"}
    assert warnings <= TOLERATED_WARNINGS
