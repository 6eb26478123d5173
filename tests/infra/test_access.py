"""Least privilege: each role holds exactly its row of the access table, which docs/design.md shows.

The actions are read back from the synthesized template (every policy attached to the role), and each
resource is recognised by what it is; a grant on anything else, or one action more or less, fails.
"""

import re
from pathlib import Path
from typing import Any

import pytest

from infra.access import ACCESS, Resource, markdown_table
from infra.bundling import REPO_ROOT
from tests.infra.cfn import function, grants, role_statements

pytestmark = pytest.mark.xdist_group("infra-template")

DESIGN_DOC = REPO_ROOT / "docs" / "design.md"

# How a rendered resource (tests.infra.cfn.render) names each kind of resource.
_PATTERNS: tuple[tuple[Resource, str], ...] = (
    (Resource.JOBS_TABLE, r"Arn\(TablesJobsTable\w+\)"),
    (Resource.STATUS_INDEX, r"Arn\(TablesJobsTable\w+\)/index/byStatus"),
    (
        Resource.LIST_INDEXES,
        r"Arn\(TablesJobsTable\w+\)/index/(byStatusTime|byOwnerStatus|byOwner|byCreated)",
    ),
    (Resource.DELIVERIES_TABLE, r"Arn\(TablesDeliveriesTable\w+\)"),
    (Resource.WEBHOOK_SECRETS_TABLE, r"Arn\(TablesWebhookSecretsTable\w+\)"),
    (Resource.LIMITS_TABLE, r"Arn\(TablesLimitsTable\w+\)"),
    (Resource.MAIN_QUEUE, r"Arn\(QueuesQueue\w+\)"),
    (Resource.DEAD_LETTER_QUEUE, r"Arn\(QueuesDeadLetterQueue\w+\)"),
    (Resource.UPLOADS_BUCKET, r"Arn\(StorageUploadsBucket\w+\)"),
    (Resource.UPLOADED_FILES, r"Arn\(StorageUploadsBucket\w+\)/uploads/\*"),
    (Resource.RESULT_FILES, r"Arn\(StorageUploadsBucket\w+\)/results/\*"),
    (Resource.SIGNING_SECRET, r"Ref\(StorageWebhookSigningSecret\w+\)"),
    (Resource.ALERTS_TOPIC, r"Ref\(AlertsAlertsTopic\w+\)"),
    (Resource.ALERTS_KEY, r"Arn\(AlertsAlertsKey\w+\)"),
    (
        Resource.SENDER_IDENTITY,
        r"arn:Ref\(AWS::Partition\):ses:Ref\(AWS::Region\):Ref\(AWS::AccountId\):identity/.+",
    ),
    (Resource.TRACES, r"\*"),
)


def _resource(rendered: str, own_log_group: str) -> Resource:
    if rendered == f"Arn({own_log_group})":
        return Resource.LOG_GROUP
    matching = [resource for resource, pattern in _PATTERNS if re.fullmatch(pattern, rendered)]
    assert len(matching) == 1, f"a grant on {rendered}, which the access table does not know"
    return matching[0]


def role_access(template: dict[str, Any], entry_point: str) -> dict[Resource, set[str]]:
    """What the function's role may do, as the access table writes it."""
    props = function(template, entry_point)[1]["Properties"]
    own_log_group = props["LoggingConfig"]["LogGroup"]["Ref"]
    found: dict[Resource, set[str]] = {}
    for action, rendered in grants(role_statements(template, props["Role"])):
        found.setdefault(_resource(rendered, own_log_group), set()).add(action)
    return found


@pytest.mark.parametrize("entry_point", list(ACCESS))
def test_each_role_holds_exactly_its_row_of_the_access_table(
    template: dict[str, Any], entry_point: str
) -> None:
    expected = {resource: set(actions) for resource, actions in ACCESS[entry_point].items()}
    assert role_access(template, entry_point) == expected


def test_no_action_is_a_wildcard() -> None:
    actions = [action for access in ACCESS.values() for group in access.values() for action in group]
    assert not [action for action in actions if "*" in action]


def test_design_doc_shows_the_access_table() -> None:
    assert markdown_table() in Path(DESIGN_DOC).read_text(), (
        "docs/design.md's access table differs from infra/access.py: paste markdown_table()'s output"
    )
