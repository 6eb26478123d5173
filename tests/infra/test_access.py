"""Least privilege: each role holds exactly its row of the access table, which docs/design.md shows.

The actions are read back from the synthesized template (every policy attached to the role), and each
resource is recognised by what it is; a grant on anything else, or one action more or less, fails.
"""

import re
from pathlib import Path
from typing import Any

import pytest

from infra.access import ACCESS, CAPABILITIES, Need, Resource, markdown_table, worker_access
from infra.bundling import REPO_ROOT
from infra.synth import synthesize
from lambdas.jobs.base import Capability
from tests.infra.cfn import function, functions, grants, role_statements
from tests.support.user_package import type_module, write_package

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
    """The api without the stack-wide signing secret: seen to fail with `Need.SHARED_SIGNING_SECRET`
    granted whatever the upgrade flag (`_access`'s `if spec is API and shared_secret`)."""
    expected = {resource: set(actions) for resource, actions in ACCESS[entry_point].items()}
    assert role_access(template, entry_point) == expected


def _holds(*needs: Capability | Need) -> dict[Resource, set[str]]:
    return {resource: set(actions) for resource, actions in worker_access(needs).items()}


def test_the_shared_worker_holds_what_its_built_in_types_declare(template: dict[str, Any]) -> None:
    """send_email (email, a limit), webhook_delivery (signing, the delivery log, a limit), webhook_fanout
    (children), and the ops jobs; nothing of uploads, results or any secret. Seen to fail with
    webhook_fanout's `uses` emptied (no BatchWriteItem, no other queues)."""
    expected = _holds(
        Capability.EMAIL,
        Capability.WEBHOOK_SIGNING,
        Capability.DELIVERY_LOG,
        Capability.CHILDREN,
        Need.LIMITS,
        Need.OPS,
    )
    assert role_access(template, "worker") == expected


def test_process_files_worker_reads_uploads_and_writes_results_and_nothing_else(
    template: dict[str, Any],
) -> None:
    """The worker that decodes untrusted images: no signing secrets, no mail, no delivery log, no
    BatchWriteItem. Seen to fail with every group granted the shared worker's needs."""
    groups = [props for lid, props in functions(template, "worker") if lid != function(template, "worker")[0]]
    assert len(groups) == 1
    assert role_access(template, "worker", groups[0]["Properties"]) == _holds(
        Capability.UPLOADS, Capability.RESULTS
    )


def test_no_action_is_a_wildcard() -> None:
    rows = [*ACCESS.values(), *CAPABILITIES.values()]
    actions = [action for access in rows for group in access.values() for action in group]
    assert not [action for action in actions if "*" in action]


def test_design_doc_shows_the_access_table() -> None:
    assert markdown_table() in Path(DESIGN_DOC).read_text(), (
        "docs/design.md's access table differs from infra/access.py: paste markdown_table()'s output"
    )


@pytest.fixture(scope="module")
def declared_template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A user's package of three types, each in a worker function of its own: one declaring nothing,
    one sending email, one with a secret."""
    package = write_package(
        tmp_path_factory.mktemp("declared"),
        {
            "plain": type_module("plain", 31),
            "mailer": type_module("mailer", 32, "Capability.EMAIL"),
            "tokened": type_module("tokened", 33, secrets=("api_token",)),
        },
    )
    return synthesize({"jobPackages": [str(package)]})


@pytest.mark.parametrize(
    ("job_type", "needs"),
    [("plain", ()), ("mailer", (Capability.EMAIL,)), ("tokened", (Need.SECRETS,))],
)
def test_a_user_types_worker_holds_what_it_declares_and_nothing_more(
    declared_template: dict[str, Any], job_type: str, needs: tuple[Capability | Need, ...]
) -> None:
    """A type that declares nothing runs in a function that can only claim and end its jobs and use its
    queue. Seen to fail on the worker row every group held before declarations (signing secrets, mail,
    uploads, results, BatchWriteItem on the jobs table)."""
    (props,) = [
        props["Properties"]
        for _, props in functions(declared_template, "worker")
        if props["Properties"]["Description"].endswith(f"runs {job_type} from its own queue")
    ]
    assert role_access(declared_template, "worker", props) == _holds(*needs)


@pytest.fixture(scope="module")
def upgraded_template() -> dict[str, Any]:
    return synthesize({"clientKeys": "alpha,beta", "webhookSecretsStartShared": "alpha"})


def test_only_while_clients_share_may_the_api_and_the_signing_worker_read_the_stack_wide_secret(
    template: dict[str, Any], upgraded_template: dict[str, Any]
) -> None:
    """Without the upgrade list no role reads it (the exact rows above); with it, the api and the worker
    that signs, and no other. Seen to fail with `shared_secret` granted whatever the list."""
    api = role_access(upgraded_template, "api")
    assert api == {**_row("api"), Resource.SIGNING_SECRET: {"secretsmanager:GetSecretValue"}}
    assert Resource.SIGNING_SECRET in role_access(upgraded_template, "worker")
    (group,) = [
        p
        for lid, p in functions(upgraded_template, "worker")
        if lid != function(upgraded_template, "worker")[0]
    ]
    assert Resource.SIGNING_SECRET not in role_access(upgraded_template, "worker", group["Properties"])
    # the functions are told the owner ids of the named clients: alpha's key id, not beta's
    env = function(upgraded_template, "api")[1]["Properties"]["Environment"]["Variables"]
    (alpha,) = [lid for lid in upgraded_template["Resources"] if lid.startswith("ApiKeysClientAlpha")]
    assert env["WEBHOOK_SECRETS_START_SHARED"] == {"Ref": alpha}


def _row(entry_point: str) -> dict[Resource, set[str]]:
    return {resource: set(actions) for resource, actions in ACCESS[entry_point].items()}
