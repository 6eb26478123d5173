"""Least privilege: each role holds exactly its row of the access table, which docs/design.md shows.

The actions are read back from the synthesized template (every policy attached to the role), and each
resource is recognised by what it is; a grant on anything else, or one action more or less, fails.
"""

from pathlib import Path
from typing import Any

import pytest

from infra.access import ACCESS, markdown_table
from infra.bundling import REPO_ROOT
from tests.infra.access_rows import expected_row, role_access
from tests.infra.cfn import function, functions

pytestmark = pytest.mark.xdist_group("infra-template")

DESIGN_DOC = REPO_ROOT / "docs" / "design.md"


@pytest.mark.parametrize("entry_point", [entry for entry in ACCESS if entry != "workflow"])
def test_each_role_holds_exactly_its_row_of_the_access_table(
    template: dict[str, Any], entry_point: str
) -> None:
    assert role_access(template, entry_point) == expected_row(entry_point)


def test_each_group_worker_holds_the_workers_row(template: dict[str, Any]) -> None:
    """process_file's worker: its own queue and DLQ are its MAIN_QUEUE and DEAD_LETTER_QUEUE, the
    shared queue one of the others'."""
    expected = expected_row("worker")
    groups = [props for lid, props in functions(template, "worker") if lid != function(template, "worker")[0]]
    assert groups
    for props in groups:
        assert role_access(template, "worker", props["Properties"]) == expected


def test_no_action_is_a_wildcard() -> None:
    actions = [action for access in ACCESS.values() for group in access.values() for action in group]
    assert not [action for action in actions if "*" in action]


def test_design_doc_shows_the_access_table() -> None:
    assert markdown_table() in Path(DESIGN_DOC).read_text(), (
        "docs/design.md's access table differs from infra/access.py: paste markdown_table()'s output"
    )
