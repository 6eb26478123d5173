"""The deploy pipeline to copy (.github/workflows/deploy.yml): it parses, runs in the documented order
with a person's approval before production, calls only real make targets and CLI commands, and its role
is allowed exactly what docs/deploy.md lists."""

import json
import re
import shlex
from pathlib import Path
from typing import Any

import yaml

from offload_cli.main import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "deploy.yml"
DOC = ROOT / "docs" / "deploy.md"


def _needs(run: list[str]) -> set[str]:
    """What one command of the pipeline calls with the deploy role's credentials."""
    if run[:2] in (["make", "diff"], ["make", "deploy"]):
        return {"sts:AssumeRole"}  # CDK's bootstrap roles read the deployed stack and deploy it
    if run[0].endswith("offload"):
        doctor = {"cloudwatch:DescribeAlarms"} if "doctor" in run else set()
        # a key named with --outputs-file: its value is read by its id from API Gateway
        return doctor | ({"apigateway:GET"} if {"--key", "--outputs-file"} <= set(run) else set())
    return set()


def _workflow() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text())
    return document


def _runs(job: dict[str, Any]) -> list[list[str]]:
    return [shlex.split(step["run"]) for step in job["steps"] if "run" in step]


def _make_targets() -> set[str]:
    return set(re.findall(r"^([a-z][a-z0-9_-]*):", (ROOT / "Makefile").read_text(), re.MULTILINE))


def _documented_actions() -> set[str]:
    block = DOC.read_text().split("<!-- deploy-role-policy -->", 1)[1]
    policy = json.loads(block.split("```json", 1)[1].split("```", 1)[0])
    return {statement["Action"] for statement in policy["Statement"]}


def test_the_pipeline_tests_diffs_deploys_staging_smoke_tests_and_waits_for_approval_before_prod() -> None:
    """Seen to fail with production's `environment: production` removed (no approval before it)."""
    jobs = _workflow()["jobs"]
    assert [jobs[name].get("needs") for name in ("diff", "staging", "production")] == [
        "test",
        "diff",
        "staging",
    ]
    assert (jobs["staging"]["environment"], jobs["production"]["environment"]) == ("staging", "production")
    assert ["make", "test"] in _runs(jobs["test"])
    for job, stage in (("staging", "staging"), ("production", "prod")):
        runs = _runs(jobs[job])
        deploy = next(i for i, run in enumerate(runs) if run[:2] == ["make", "deploy"])
        assert f"STAGE={stage}" in runs[deploy]
        doctor = runs[deploy + 1]  # the smoke test right after the deploy, against that stage's stack
        assert doctor[0].endswith("offload")
        assert doctor[doctor.index("doctor") + 1 :] == ["--stack", f"Offload-{stage}"]
        assert f"cdk.out/outputs-{stage}.json" in doctor


def test_its_commands_are_real_and_its_role_needs_only_what_the_docs_list() -> None:
    """Seen to fail with `make diff` renamed in the Makefile, and with apigateway:GET left out of
    docs/deploy.md's policy."""
    workflow = _workflow()
    needed: set[str] = set()
    for job in workflow["jobs"].values():
        signs_in = any("configure-aws-credentials" in step.get("uses", "") for step in job["steps"])
        if signs_in:  # OIDC: the job may ask GitHub for a token
            assert job["permissions"]["id-token"] == "write"
            (step,) = [s for s in job["steps"] if "configure-aws-credentials" in s.get("uses", "")]
            assert step["with"]["role-to-assume"] == "${{ vars.AWS_DEPLOY_ROLE_ARN }}"
        for run in _runs(job):
            if run[0] == "make":
                assert run[1] in _make_targets(), f"`make {run[1]}` is not a target of the Makefile"
            elif run[0].endswith("offload"):
                assert any(word in COMMANDS for word in run[1:]), f"{run} names no command of the CLI"
            used = _needs(run)
            assert not used or signs_in, f"{run} calls AWS in a job without the role"
            needed |= used
    assert workflow["permissions"] == {"contents": "read"}
    assert _documented_actions() == needed
