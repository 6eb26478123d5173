"""Each role's grants read back from the synthesized template, as rows of the access table
(`infra/access.py`): each granted resource recognised by what it is, so a grant on anything else fails."""

import re
from typing import Any

from infra.access import ACCESS, Need, Resource
from lambdas.jobs.base import Capability
from tests.infra.cfn import function, grants, role_statements

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


_HASH = 8  # the hex digits CDK appends to a logical id


def _resource(rendered: str, own: dict[str, str]) -> Resource:
    """`own`: the function's log group, job queue and DLQ (from its environment), by what they are."""
    if rendered == f"Arn({own['log group']})":
        return Resource.LOG_GROUP
    if re.fullmatch(r"Arn\(Queues(High)?Queue\w+\)", rendered):
        # A group's high queue is its queue's logical id with "High" in front (its hash aside).
        queue = own.get("queue", "")
        own_high = queue.replace("QueuesQueue", "QueuesHighQueue", 1)[:-_HASH]
        if rendered == f"Arn({queue})" or (
            queue and re.fullmatch(rf"Arn\({own_high}[0-9A-F]{{{_HASH}}}\)", rendered)
        ):
            return Resource.MAIN_QUEUE
        return Resource.OTHER_JOB_QUEUES
    if re.fullmatch(r"Arn\(QueuesDeadLetterQueue\w+\)", rendered):
        # The dead-letter function has no DLQ of its own: it polls every worker's.
        return Resource.DEAD_LETTER_QUEUE if "dlq" in own else Resource.EVERY_DEAD_LETTER_QUEUE
    if re.fullmatch(r"Ref\(JobSecrets\w+\)", rendered):
        return Resource.JOB_SECRETS
    if re.fullmatch(r"Ref\(FunctionsWorkflow\w*Alias\w+\)", rendered):
        return Resource.WORKFLOW_ALIAS
    if re.fullmatch(r"Arn\(FunctionsWorkflow\w+\):\*", rendered):
        return Resource.OWN_EXECUTIONS if own["entry point"] == "workflow" else Resource.WORKFLOW_EXECUTIONS
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
    own = {"log group": props["LoggingConfig"]["LogGroup"]["Ref"], "entry point": entry_point}
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


# Only a stack with workflow types has them (tests/infra/test_workflows.py holds those roles to their rows).
WORKFLOW_ONLY = (Resource.WORKFLOW_ALIAS, Resource.WORKFLOW_EXECUTIONS)


def expected_row(entry_point: str, without: tuple[Resource, ...] = WORKFLOW_ONLY) -> dict[Resource, set[str]]:
    expected = {resource: set(actions) for resource, actions in ACCESS[entry_point].items()}
    # No built-in type declares a secret (tests/infra/test_job_packages.py grants a package's).
    for resource in (Resource.JOB_SECRETS, *without):
        expected.pop(resource, None)
    return expected


# What the shared worker's built-in types declare (send_email: email and a limit; webhook_delivery:
# signing, the delivery log and a limit; webhook_fanout: children), and the ops jobs it runs.
SHARED_BUILT_IN_NEEDS: tuple[Capability | Need, ...] = (
    Capability.EMAIL,
    Capability.WEBHOOK_SIGNING,
    Capability.DELIVERY_LOG,
    Capability.CHILDREN,
    Need.LIMITS,
    Need.OPS,
)
