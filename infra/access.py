"""What each function may do: one table of function -> resource -> IAM actions.

The actions are the API calls each function's code makes (boto3 in `lambdas/`, plus what Lambda does on
the function's behalf: the queue pollers, logs, traces), nothing more. A worker group's function holds
`WORKER` (running its own jobs) and, for each capability its types declare (`JobType.uses`, their
`secrets` and `limits`), that capability's row of `CAPABILITIES`: a type that declares nothing runs in a
function that can only claim and end its jobs. The table is the one source for:
- the grants: each construct that owns a resource grants from it (`grant_access` on JobTables,
  JobQueues, Storage, Alerts), so no construct uses CDK's broad grant families;
- docs/internals/security.md, whose table `markdown_table()` renders (a test checks the doc shows it);
- tests/infra, which reads each role's actions back from the synthesized template and compares.
"""

from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Any, Final

from aws_cdk import aws_iam as iam

from lambdas.jobs.base import Capability


class Resource(StrEnum):
    JOBS_TABLE = "jobs table"
    STATUS_INDEX = "jobs table, byStatus index"
    LIST_INDEXES = "jobs table, byStatusTime, byOwnerStatus, byOwner, byCreated indexes"
    DELIVERIES_TABLE = "deliveries table"
    WEBHOOK_SECRETS_TABLE = "webhook secrets table"
    LIMITS_TABLE = "limits table"
    SCHEDULES_TABLE = "schedules table"
    MAIN_QUEUE = "main queue"  # a worker's own job queues (the shared ones, or its group's): the queue and its high queue
    DEAD_LETTER_QUEUE = "dead-letter queue"  # likewise, its own
    OTHER_JOB_QUEUES = "the other workers' job queues"
    EVERY_DEAD_LETTER_QUEUE = "every worker's dead-letter queue"
    JOB_SECRETS = "the secrets its job types declare"
    UPLOADS_BUCKET = "uploads bucket"
    UPLOADED_FILES = "uploads bucket, uploads/*"
    RESULT_FILES = "uploads bucket, results/*"
    SIGNING_SECRET = "webhook signing secret"  # noqa: S105 (a resource's name, not a password)
    ALERTS_TOPIC = "alerts topic"
    ALERTS_KEY = "alerts topic's KMS key"
    SENDER_IDENTITY = "SES identities of senderEmail (FromAddress must be senderEmail)"
    LOG_GROUP = "the function's own log group"
    TRACES = "X-Ray (no resource-level permissions: *)"
    WORKFLOW_ALIAS = "its group's workflow function, alias live"
    OWN_EXECUTIONS = "its own durable executions (function:*)"
    WORKFLOW_EXECUTIONS = "every workflow function's durable executions (function:*)"


Access = Mapping[Resource, tuple[str, ...]]

# Granted to every function by ServiceFunction: its logs and its active-tracing segments.
_EVERY_FUNCTION: Final[Access] = {
    Resource.LOG_GROUP: ("logs:CreateLogStream", "logs:PutLogEvents"),
    Resource.TRACES: ("xray:PutTelemetryRecords", "xray:PutTraceSegments"),
}

# Lambda's SQS poller receives and deletes on the function's role; GetQueueAttributes is how it checks
# the queue when the mapping is created.
_POLLED: Final = ("sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage")

ACCESS: Final[Mapping[str, Access]] = {
    # submit: PutItem (conditional), GetItem (an idempotent repeat, GET /jobs/{id}); SendMessage;
    # lists: Query on the list indexes, then BatchGetItem for the page's items (children are read the
    # same way); retry and cancel: UpdateItem, with a fan-out's parent in TransactWriteItems, then
    # SendMessage (a bulk action is a job: PutItem, SendMessage); deliveries: Query on the log table.
    # POST /uploads presigns a PutObject; process_file's submission check is a HeadObject (GetObject),
    # and ListBucket turns HeadObject's answer for a missing key from 403 into 404. GET /jobs/{id} presigns
    # a GetObject for each file a done job wrote.
    "api": {
        Resource.JOBS_TABLE: (
            "dynamodb:BatchGetItem",
            "dynamodb:GetItem",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
        ),
        Resource.LIST_INDEXES: ("dynamodb:Query",),
        Resource.DELIVERIES_TABLE: ("dynamodb:Query",),
        # GET /webhook-secret reads a client's item (GetItem) and makes it on first use (PutItem, as
        # does a rotation, conditional on the version read); on an upgraded stack a first secret is the
        # stack-wide one (`Need.SHARED_SIGNING_SECRET`, granted only then).
        Resource.WEBHOOK_SECRETS_TABLE: ("dynamodb:GetItem", "dynamodb:PutItem"),
        # GET /limits lists each limited type's keys.
        Resource.LIMITS_TABLE: ("dynamodb:Query",),
        # GET /stats reads both queues' approximate depths.
        Resource.MAIN_QUEUE: ("sqs:GetQueueAttributes", "sqs:SendMessage"),
        Resource.DEAD_LETTER_QUEUE: ("sqs:GetQueueAttributes",),
        # a job of a type that runs in a function of its own goes to that function's queue.
        Resource.OTHER_JOB_QUEUES: ("sqs:SendMessage",),
        Resource.UPLOADS_BUCKET: ("s3:ListBucket",),
        Resource.UPLOADED_FILES: ("s3:GetObject", "s3:PutObject"),
        Resource.RESULT_FILES: ("s3:GetObject",),
        # /schedules: a create puts the schedule and counts it (TransactWriteItems: PutItem, UpdateItem), a
        # delete deletes it, its fired item and uncounts it (DeleteItem, UpdateItem); reads are Query (a
        # schedule with its fired item; a client's page) and Scan (the operator's page of every client's),
        # a change a conditional PutItem, a run now records its job (UpdateItem).
        Resource.SCHEDULES_TABLE: (
            "dynamodb:DeleteItem",
            "dynamodb:PutItem",
            "dynamodb:Query",
            "dynamodb:Scan",
            "dynamodb:UpdateItem",
        ),
        # POST /jobs/{jobId}/events completes a waiting workflow's callback; a cancel stops its execution.
        Resource.WORKFLOW_EXECUTIONS: (
            "lambda:SendDurableExecutionCallbackSuccess",
            "lambda:StopDurableExecution",
        ),
        **_EVERY_FUNCTION,
    },
    # A worker group's row is `worker_access(...)`: WORKER below, and what its types declare; its
    # durable function's (workflow types) is `workflow_access(...)`: WORKFLOW below, and the same.
    # mark dead (UpdateItem, with a parent in a transaction), read the job and its parent (GetItem), read
    # a finished fan-out's children for its alert (BatchGetItem), claim and record the alert (UpdateItem);
    # publishing to an encrypted topic needs a data key from the topic's key.
    "dead_letter": {
        Resource.JOBS_TABLE: ("dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:UpdateItem"),
        Resource.EVERY_DEAD_LETTER_QUEUE: _POLLED,
        Resource.ALERTS_TOPIC: ("sns:Publish",),
        Resource.ALERTS_KEY: ("kms:Decrypt", "kms:GenerateDataKey"),
        **_EVERY_FUNCTION,
    },
    # query byStatus (keys only) for overdue jobs and read them back (BatchGetItem), requeue/settle them
    # (UpdateItem; GetItem reads a parent), re-send; a workflow past its deadline ends dead and its letter
    # goes to its group's DLQ (SendMessage), for its alert.
    "recovery": {
        Resource.JOBS_TABLE: ("dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:UpdateItem"),
        Resource.STATUS_INDEX: ("dynamodb:Query",),
        Resource.MAIN_QUEUE: ("sqs:SendMessage",),
        Resource.OTHER_JOB_QUEUES: ("sqs:SendMessage",),
        Resource.EVERY_DEAD_LETTER_QUEUE: ("sqs:SendMessage",),
        **_EVERY_FUNCTION,
    },
    # a tick reads every schedule's timing (Scan), a due schedule with its fired item (Query) and the
    # schedule's last job (GetItem), puts the job (conditional PutItem) and sends it, and records the firing,
    # its owner's day count or its error on small items of their own (UpdateItem).
    "schedules": {
        Resource.JOBS_TABLE: ("dynamodb:GetItem", "dynamodb:PutItem"),
        Resource.SCHEDULES_TABLE: ("dynamodb:Query", "dynamodb:Scan", "dynamodb:UpdateItem"),
        Resource.MAIN_QUEUE: ("sqs:SendMessage",),
        Resource.OTHER_JOB_QUEUES: ("sqs:SendMessage",),
        **_EVERY_FUNCTION,
    },
}


# Every worker: claim, end and retry its own jobs (UpdateItem; a child's parent in TransactWriteItems,
# authorised per item as UpdateItem), read a job back or a child's parent (GetItem); poll its queue, send
# a job again to it (a continuation, a wait), change a message's visibility (a retry), forward a dead
# job to its DLQ.
WORKER: Final[Access] = {
    Resource.JOBS_TABLE: ("dynamodb:GetItem", "dynamodb:UpdateItem"),
    Resource.MAIN_QUEUE: tuple(sorted((*_POLLED, "sqs:ChangeMessageVisibility", "sqs:SendMessage"))),
    Resource.DEAD_LETTER_QUEUE: ("sqs:SendMessage",),
    **_EVERY_FUNCTION,
}


# A group's durable function, for its workflow types: writes the job's steps, waits and end (UpdateItem,
# GetItem), sends it on (SendMessage), forwards a dead one to its DLQ, and checkpoints its own executions
# (what the durable SDK calls). No queue poller: the worker invokes it.
WORKFLOW: Final[Access] = {
    Resource.JOBS_TABLE: ("dynamodb:GetItem", "dynamodb:UpdateItem"),
    Resource.MAIN_QUEUE: ("sqs:SendMessage",),
    Resource.DEAD_LETTER_QUEUE: ("sqs:SendMessage",),
    Resource.OWN_EXECUTIONS: ("lambda:CheckpointDurableExecution", "lambda:GetDurableExecutionState"),
    **_EVERY_FUNCTION,
}


class Need(StrEnum):
    """What a worker group's types need beyond `Capability`: their declared secrets and limits, the
    lifecycle's own ops jobs (the shared worker's), and the stack-wide signing secret (upgraded stacks)."""

    SECRETS = "secrets"
    LIMITS = "limits"
    OPS = "ops"
    SHARED_SIGNING_SECRET = "shared signing secret"  # noqa: S105 (a need's name, not a password)
    WORKFLOWS = "workflows"  # the group runs workflow types: its worker starts their executions


CAPABILITIES: Final[Mapping[Capability | Need, Access]] = {
    Capability.UPLOADS: {Resource.UPLOADED_FILES: ("s3:GetObject",)},
    Capability.RESULTS: {Resource.RESULT_FILES: ("s3:PutObject",)},
    # Children are read (BatchGetItem: those a repeated attempt wrote), written (BatchWriteItem) and
    # sent to their types' queues (SendMessageBatch is sqs:SendMessage).
    Capability.CHILDREN: {
        Resource.JOBS_TABLE: ("dynamodb:BatchGetItem", "dynamodb:BatchWriteItem"),
        Resource.MAIN_QUEUE: ("sqs:SendMessage",),
        Resource.OTHER_JOB_QUEUES: ("sqs:SendMessage",),
    },
    Capability.EMAIL: {Resource.SENDER_IDENTITY: ("ses:SendEmail",)},
    # A client's signing secrets are read (GetItem) and made on first use (PutItem).
    Capability.WEBHOOK_SIGNING: {Resource.WEBHOOK_SECRETS_TABLE: ("dynamodb:GetItem", "dynamodb:PutItem")},
    # A delivery's line is only ever put (in the attempt's transaction).
    Capability.DELIVERY_LOG: {Resource.DELIVERIES_TABLE: ("dynamodb:PutItem",)},
    # `context.secret(name)`: only the secrets the types of this worker declared.
    Need.SECRETS: {Resource.JOB_SECRETS: ("secretsmanager:GetSecretValue",)},
    # flow control: take and give back a start (UpdateItem; a refusal returns the item it saw), a key's
    # first use (PutItem).
    Need.LIMITS: {Resource.LIMITS_TABLE: ("dynamodb:PutItem", "dynamodb:UpdateItem")},
    # `bulk_action`: page the list indexes (Query, then BatchGetItem), retry or cancel each job
    # (UpdateItem, a fan-out's parent in a transaction) and send the retried to their types' queues.
    Need.OPS: {
        Resource.JOBS_TABLE: ("dynamodb:BatchGetItem",),
        Resource.LIST_INDEXES: ("dynamodb:Query",),
        Resource.OTHER_JOB_QUEUES: ("sqs:SendMessage",),
    },
    # Upgraded stacks (webhookSecretsStartShared): the first secret of the clients it names is the stack-wide one.
    Need.SHARED_SIGNING_SECRET: {Resource.SIGNING_SECRET: ("secretsmanager:GetSecretValue",)},
    # a workflow job's execution starts by an asynchronous Invoke of its group's alias, nothing else.
    Need.WORKFLOWS: {Resource.WORKFLOW_ALIAS: ("lambda:InvokeFunction",)},
}


def merged(*rows: Access) -> dict[Resource, tuple[str, ...]]:
    """The union of `rows`, each resource's actions sorted."""
    union: dict[Resource, set[str]] = {}
    for row in rows:
        for resource, actions in row.items():
            union.setdefault(resource, set()).update(actions)
    return {resource: tuple(sorted(actions)) for resource, actions in union.items()}


def worker_access(needs: Iterable[Capability | Need]) -> dict[Resource, tuple[str, ...]]:
    """A worker group's row: running its jobs, and what its types' declarations need."""
    return merged(WORKER, *(CAPABILITIES[need] for need in needs))


def workflow_access(needs: Iterable[Capability | Need]) -> dict[Resource, tuple[str, ...]]:
    """A group's durable function's row: running its workflow jobs, and what its types' declarations
    need (the ops jobs' and the alias' excepted: those are the worker's)."""
    return merged(WORKFLOW, *(CAPABILITIES[n] for n in needs if n not in (Need.OPS, Need.WORKFLOWS)))


def grant(
    grantee: iam.IGrantable,
    access: Access,
    arns: Mapping[Resource, str | Sequence[str]],
    conditions: Mapping[Resource, Mapping[str, Any]] | None = None,
) -> None:
    """Grant `grantee` the actions `access` lists for each of the resources in `arns` (an owner's)."""
    for resource, arn in arns.items():
        actions = access.get(resource)
        if actions:
            grantee.grant_principal.add_to_principal_policy(
                iam.PolicyStatement(
                    actions=list(actions),
                    resources=[arn] if isinstance(arn, str) else list(arn),
                    conditions=(conditions or {}).get(resource),
                )
            )


def markdown_table() -> str:
    """The tables as docs/internals/security.md shows them: one row per function and resource (a worker's: what every
    group holds), one per capability a worker's types may declare, and what each built-in type declares."""
    from infra.job_types import JobTypeCatalog  # imports every built-in type, for the doc only

    rows = ["| function | resource | actions |", "|---|---|---|"]
    every: list[tuple[str, Access]] = [
        *((f"`{f}`", a) for f, a in ACCESS.items()),
        ("`worker`, every group", WORKER),
        ("`workflow`, every group's", WORKFLOW),
    ]
    for function, access in every:
        for resource, actions in access.items():
            rows.append(f"| {function} | {resource} | {_actions(actions)} |")
    rows += ["", "| a worker whose types declare or need | resource | actions |", "|---|---|---|"]
    for need, access in CAPABILITIES.items():
        for resource, actions in access.items():
            rows.append(f"| `{need}` | {resource} | {_actions(actions)} |")
    rows += ["", "| built-in type | declares |", "|---|---|"]
    for declared in JobTypeCatalog.load().types:
        needs = [*sorted(declared.uses), *([Need.LIMITS] if declared.limited else [])]
        rows.append(f"| `{declared.name}` | {', '.join(f'`{n}`' for n in needs) or 'nothing'} |")
    return "\n".join(rows)


def _actions(actions: Iterable[str]) -> str:
    return ", ".join(f"`{a}`" for a in actions)
