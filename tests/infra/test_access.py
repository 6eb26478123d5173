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
from tests.infra.cfn import function, functions, grants, role_statements

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
    (Resource.SCHEDULES_TABLE, r"Arn\(TablesSchedulesTable\w+\)"),
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


def _resource(rendered: str, own: dict[str, str]) -> Resource:
    """`own`: the function's log group, job queue and DLQ (from its environment), by what they are."""
    if rendered == f"Arn({own['log group']})":
        return Resource.LOG_GROUP
    if re.fullmatch(r"Arn\(QueuesQueue\w+\)", rendered):
        return Resource.MAIN_QUEUE if rendered == f"Arn({own.get('queue')})" else Resource.OTHER_JOB_QUEUES
    if re.fullmatch(r"Arn\(QueuesDeadLetterQueue\w+\)", rendered):
        # The dead-letter function has no DLQ of its own: it polls every worker's.
        return Resource.DEAD_LETTER_QUEUE if "dlq" in own else Resource.EVERY_DEAD_LETTER_QUEUE
    if re.fullmatch(r"Ref\(JobSecrets\w+\)", rendered):
        return Resource.JOB_SECRETS
    matching = [resource for resource, pattern in _PATTERNS if re.fullmatch(pattern, rendered)]
    assert len(matching) == 1, f"a grant on {rendered}, which the access table does not know"
    return matching[0]


def role_access(
    template: dict[str, Any], entry_point: str, props: dict[str, Any] | None = None
) -> dict[Resource, set[str]]:
    """What the function's role may do, as the access table writes it (`props`: of one of several
    functions of the entry point, a group's worker)."""
    props = props or function(template, entry_point)[1]["Properties"]
    variables = props.get("Environment", {}).get("Variables", {})
    own = {"log group": props["LoggingConfig"]["LogGroup"]["Ref"]}
    for name, key in (("queue", "QUEUE_URL"), ("dlq", "DLQ_URL")):
        if key in variables:
            own[name] = variables[key]["Ref"]
    found: dict[Resource, set[str]] = {}
    for action, rendered in grants(role_statements(template, props["Role"])):
        resource = _resource(rendered, own)
        if resource is Resource.DEAD_LETTER_QUEUE and rendered != f"Arn({own['dlq']})":
            resource = Resource.EVERY_DEAD_LETTER_QUEUE  # another worker's DLQ: not its own
        found.setdefault(resource, set()).add(action)
    return found


@pytest.mark.parametrize("entry_point", list(ACCESS))
def test_each_role_holds_exactly_its_row_of_the_access_table(
    template: dict[str, Any], entry_point: str
) -> None:
    expected = {resource: set(actions) for resource, actions in ACCESS[entry_point].items()}
    # No built-in type declares a secret (tests/infra/test_job_packages.py grants a package's).
    expected.pop(Resource.JOB_SECRETS, None)
    assert role_access(template, entry_point) == expected


def test_each_group_worker_holds_the_workers_row(template: dict[str, Any]) -> None:
    """process_file's worker: its own queue and DLQ are its MAIN_QUEUE and DEAD_LETTER_QUEUE, the
    shared queue one of the others'."""
    expected = {resource: set(actions) for resource, actions in ACCESS["worker"].items()}
    expected.pop(Resource.JOB_SECRETS)
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
