"""cdk-nag (AwsSolutions pack) over the stack: nothing unacknowledged, every acknowledgment reasoned and needed."""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aws_cdk
import pytest

from infra.synth import SKIP_BUNDLING, build_app
from lambdas import config

pytestmark = pytest.mark.xdist_group("infra-nag")

PACK = "AwsSolutions"


def _synth_with_checks(outdir: Path) -> dict[str, Any]:
    """Synthesize with the pack and return the validation report (CDK writes it even when synth fails)."""
    app, _ = build_app(dict(SKIP_BUNDLING), outdir=str(outdir), checks=True)
    failure = None
    try:
        app.synth()
    except RuntimeError as error:  # the report read below says which findings failed it
        failure = str(error)
    assert failure is None or failure.startswith("ValidationFailed"), failure
    report: dict[str, Any] = json.loads((outdir / "validation-report.json").read_text())
    return report


def _findings(report: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(rule, severity, construct path) of every unacknowledged finding of the pack."""
    for plugin in report["pluginReports"]:
        if plugin["pluginName"] != PACK:
            continue
        for violation in plugin["violations"]:
            for construct in violation["violatingConstructs"]:
                yield violation["ruleName"], violation["severity"], construct["constructPath"]


def _acknowledgments(outdir: Path) -> list[tuple[str, str, str]]:
    """(rule, reason, construct path) of every acknowledgment recorded in the assembly."""
    metadata = json.loads((outdir / f"{config.STACK_ID}.metadata.json").read_text())
    found = []
    for path, entries in metadata.items():
        for entry in entries:
            if entry["type"] == aws_cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                for rule, reason in entry["data"].items():
                    found.append((rule.removeprefix("Annotation::"), reason, path.lstrip("/")))
    return found


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    outdir = tmp_path_factory.mktemp("nag")
    return _synth_with_checks(outdir), outdir


@pytest.fixture(scope="module")
def unacknowledged(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str, str]]:
    """Every finding the pack raises when nothing is acknowledged."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(aws_cdk.Validations, "acknowledge", lambda *_args: None)
        report = _synth_with_checks(tmp_path_factory.mktemp("nag-bare"))
    return list(_findings(report))


def test_no_unacknowledged_errors_or_warnings(checked: tuple[dict[str, Any], Path]) -> None:
    report, _ = checked
    assert list(_findings(report)) == []


def test_every_acknowledgment_names_a_rule_of_the_pack_and_a_reason(
    checked: tuple[dict[str, Any], Path],
) -> None:
    _, outdir = checked
    acknowledgments = _acknowledgments(outdir)
    assert acknowledgments
    for rule, reason, path in acknowledgments:
        assert rule.startswith(f"{PACK}-"), f"{path}: {rule}"
        assert len(reason.split()) >= 8, f"{path}: {rule} needs a real reason, got {reason!r}"


def test_the_pack_runs_and_every_acknowledgment_is_needed(
    checked: tuple[dict[str, Any], Path], unacknowledged: list[tuple[str, str, str]]
) -> None:
    _, outdir = checked
    assert unacknowledged, "without acknowledgments the pack must report findings"
    for rule, _, path in _acknowledgments(outdir):
        covered = [
            finding
            for finding, _, finding_path in unacknowledged
            if finding == rule and (finding_path == path or finding_path.startswith(f"{path}/"))
        ]
        assert covered, f"{rule} acknowledged on {path} matches no finding: drop it"
