"""Every alarm of the template names its runbook: a section of docs/runbooks.md that says what the alarm
means, how to look and what to do."""

import re
from pathlib import Path
from typing import Any

from infra.monitoring import RUNBOOKS, Runbook

ROOT = Path(__file__).resolve().parents[2]
_NAMED = re.compile(rf"Runbook: {re.escape(RUNBOOKS)}#([a-z0-9-]+)$")
_PARTS = ("**What it means.**", "**How to look.**", "**What to do.**")


def _sections() -> dict[str, str]:
    """docs/runbooks.md's `## ` sections by their anchor (GitHub's: lower case, spaces as dashes)."""
    text = (ROOT / RUNBOOKS).read_text()
    found = {}
    for block in text.split("\n## ")[1:]:
        title, _, body = block.partition("\n")
        found[re.sub(r"[^a-z0-9 -]", "", title.strip().lower()).replace(" ", "-")] = body
    return found


def _alarms(template: dict[str, Any]) -> dict[str, str]:
    return {
        logical_id: resource["Properties"]["AlarmDescription"]
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::CloudWatch::Alarm"
    }


def test_every_alarm_names_a_runbook_section_that_exists_and_answers_three_questions(
    template: dict[str, Any], custom_template: dict[str, Any]
) -> None:
    """Seen to fail with an alarm's runbook dropped from its description, and with a section's heading
    renamed in docs/runbooks.md."""
    sections = _sections()
    alarms = {**_alarms(template), **_alarms(custom_template)}  # the second one has worker groups
    assert len(alarms) >= 14
    for logical_id, description in alarms.items():
        named = _NAMED.search(description)
        assert named, f"{logical_id}'s description names no runbook: {description!r}"
        section = sections.get(named.group(1))
        assert section is not None, f"{logical_id} names #{named.group(1)}, not a section of {RUNBOOKS}"
        assert all(part in section for part in _PARTS), f"#{named.group(1)} lacks one of {_PARTS}"
    assert {s.value for s in Runbook} <= set(sections)
