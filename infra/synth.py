"""Builds the app the way `cdk synth` does, in-process: for app.py, the tests and the local runtime.

The CDK context starts from cdk.json's, so an in-process synth sees the same feature flags as the CLI.
"""

import json
import re
import tempfile
from typing import Any, Final

from aws_cdk import App, Validations
from cdk_nag import AwsSolutionsChecks

from infra.bundling import REPO_ROOT
from infra.stack import OffloadStack
from lambdas import config

CDK_JSON: Final = REPO_ROOT / "cdk.json"
# Context that makes CDK stage no assets at all: bundling is the slow part of a synth.
SKIP_BUNDLING: Final[dict[str, list[str]]] = {"aws:cdk:bundling-stacks": []}


def project_context() -> dict[str, Any]:
    context: dict[str, Any] = json.loads(CDK_JSON.read_text())["context"]
    return context


def build_app(
    context: dict[str, Any] | None = None, *, outdir: str | None = None, checks: bool = True
) -> tuple[App, OffloadStack]:
    """The app with its one stack. With `checks` (as `cdk synth` runs it), synthesis also validates the
    template (CDK's built-in CloudFormation rules) and runs the cdk-nag AwsSolutions pack; without, it
    skips both, and the stack traces they report with, which makes it several times faster."""
    app = App(
        # cdk.json's context first, then what the CLI passes (-c ...), then the caller's, which wins.
        context=project_context(),
        post_cli_context=context or None,
        outdir=outdir,
        analytics_reporting=False,
        builtin_cloud_formation_validation=checks,
        stack_traces=checks,
        tree_metadata=checks,
    )
    stage = _stage(app.node.try_get_context(config.CONTEXT_STAGE))
    stack = OffloadStack(
        app,
        config.stack_name(stage),
        description=f"offload{f' ({stage})' if stage else ''}: async jobs over API Gateway, SQS and Lambda",
    )
    if checks:
        Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app, stack


def synthesize(context: dict[str, Any] | None = None, bundle: bool = False, *, checks: bool = False) -> dict:
    """The stack's CloudFormation template as a dict. Without `bundle`, no asset is built or copied."""
    merged = dict(context or {})
    if not bundle:
        merged.update(SKIP_BUNDLING)
    with tempfile.TemporaryDirectory(prefix="offload-synth-") as outdir:
        app, stack = build_app(merged, outdir=outdir, checks=checks)
        template: dict = app.synth().get_stack_by_name(stack.stack_name).template
        return template


def _stage(raw: Any) -> str | None:
    """CDK context `stage`: none (today's names) or a short lower-case name (dev, staging, prod)."""
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str) or not re.fullmatch(config.STAGE_PATTERN, raw):
        raise ValueError(f"stage must match {config.STAGE_PATTERN} (dev, staging, prod), not {raw!r}")
    return raw
