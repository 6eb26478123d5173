"""The functions: api, one worker per worker group (infra/job_types.py), dead_letter and recovery; one
spec each, one factory for what they share.

Each function's environment comes from its settings model (infra/environment.py) and its permissions
from the access table (infra/access.py), granted by the constructs that own the resources. A worker
group's function is the worker's spec with the group's timeout and memory, its own queue and DLQ,
and only its own types' settings and secrets.
"""

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from aws_cdk import Annotations, Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.access import (
    ACCESS,
    CAPABILITIES,
    Access,
    Need,
    Resource,
    grant,
    merged,
    worker_access,
    workflow_access,
)
from infra.access import WORKER as WORKER_ACCESS
from infra.access import WORKFLOW as WORKFLOW_ACCESS
from infra.environment import environment_for
from infra.job_secrets import JobSecrets
from infra.job_types import JobTypeCatalog, WorkerGroup
from infra.keys import ApiKeys
from infra.monitoring import Alerts, WatchedFunctions, metrics_namespace
from infra.nag import acknowledge, arn_of
from infra.queues import JobQueues
from infra.settings import (
    API_MEMORY_MB,
    API_TIMEOUT_SECONDS,
    DEAD_LETTER_TIMEOUT_SECONDS,
    LOG_LEVEL,
    SMALL_MEMORY_MB,
    WORKER_MEMORY_MB,
    Settings,
    SnapStart,
)
from infra.storage import Storage
from infra.tables import JobTables
from lambdas import config
from lambdas.jobs.base import Capability
from lambdas.models.settings import (
    ApiSettings,
    DeadLetterSettings,
    Environment,
    FiringSettings,
    RecoverySettings,
    WorkerSettings,
)

RUNTIME = lambda_.Runtime.PYTHON_3_14
ARCHITECTURE = lambda_.Architecture.ARM_64
LOG_RETENTION = logs.RetentionDays.ONE_MONTH


@dataclass(frozen=True)
class FunctionSpec:
    construct_id: str
    entry_point: str  # lambdas.handlers.<entry_point>, and its row in the access table
    description: str
    settings: tuple[type[Environment], ...]  # every settings class the function loads its environment into
    timeout_seconds: int
    memory_mb: int = SMALL_MEMORY_MB

    @property
    def access(self) -> Access:
        """Its row of the access table; a worker's and a durable function's: what every group's holds."""
        return ACCESS.get(self.entry_point) or {"workflow": WORKFLOW_ACCESS}.get(
            self.entry_point, WORKER_ACCESS
        )


API: Final = FunctionSpec(
    "Api",
    "api",
    "offload REST API: submits jobs, reports their status, hands out upload URLs",
    (ApiSettings,),
    API_TIMEOUT_SECONDS,
    API_MEMORY_MB,
)
WORKER: Final = FunctionSpec(
    "Worker",
    "worker",
    "offload worker: runs jobs from the main queue",
    (WorkerSettings,),
    config.WORKER_TIMEOUT_SECONDS,
    WORKER_MEMORY_MB,
)
DEAD_LETTER: Final = FunctionSpec(
    "DeadLetter",
    "dead_letter",
    "offload dead-letter consumer: marks jobs dead and raises an alert",
    (DeadLetterSettings,),
    DEAD_LETTER_TIMEOUT_SECONDS,
)
RECOVERY: Final = FunctionSpec(
    "Recovery",
    "recovery",
    "offload recovery sweep: re-sends jobs whose message or worker was lost",
    (RecoverySettings,),
    config.RECOVERY_TIMEOUT_SECONDS,
)
SCHEDULES: Final = FunctionSpec(
    "Schedules",
    "schedules",
    "offload schedules: EventBridge Scheduler's target, creates one job per firing of a recurring schedule",
    (FiringSettings,),
    config.SCHEDULES_TIMEOUT_SECONDS,
)
SPECS: Final = (API, WORKER, DEAD_LETTER, RECOVERY, SCHEDULES)
# A worker group's durable function, for its workflow types: an invocation runs until the workflow's
# next sleep or wait (or its end), so it has the group worker's timeout and memory (`workflow_spec`).
WORKFLOW: Final = FunctionSpec(
    "Workflow",
    "workflow",
    "offload workflows: runs the workflow types' durable executions",
    (WorkerSettings,),
    config.WORKER_TIMEOUT_SECONDS,
    WORKER_MEMORY_MB,
)
# The alias what invokes a function calls when it runs a published version: a workflow function's
# (durable executions need one) and a SnapStart function's (snapshots are taken of versions only).
LIVE_ALIAS: Final = "live"
WORKFLOW_ALIAS: Final = LIVE_ALIAS


class ResourceOwner(Protocol):
    def grant_access(self, grantee: iam.IGrantable, access: Access) -> None: ...


class ServiceFunction(Construct):
    """A function of this service: its own role and log group, tracing on, Powertools configured."""

    def __init__(
        self,
        scope: Construct,
        spec: FunctionSpec,
        *,
        code: lambda_.Code,
        environment: Mapping[str, str],
        durable: lambda_.DurableConfig | None = None,
        snap_start: bool = False,
    ) -> None:
        super().__init__(scope, spec.construct_id)
        # A role per function, and no managed policy: each one holds exactly its row of the access table.
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"offload {spec.entry_point} function",
        )
        self.log_group = logs.LogGroup(
            self, "LogGroup", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY
        )
        grant(self.role, spec.access, {Resource.LOG_GROUP: self.log_group.log_group_arn})
        acknowledge(
            self.role,
            "AwsSolutions-IAM5",
            "Active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords have no resource-level "
            "permissions, so they can only be granted on *.",
            findings=["Resource::*"],
        )
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            code=code,
            handler=f"lambdas.handlers.{spec.entry_point}.handler",
            description=spec.description,
            role=self.role,
            log_group=self.log_group,
            timeout=Duration.seconds(spec.timeout_seconds),
            memory_size=spec.memory_mb,
            tracing=lambda_.Tracing.ACTIVE,
            durable_config=durable,
            snap_start=lambda_.SnapStartConf.ON_PUBLISHED_VERSIONS if snap_start else None,
            environment={
                "POWERTOOLS_SERVICE_NAME": config.SERVICE_NAME,
                "POWERTOOLS_METRICS_NAMESPACE": metrics_namespace(self),
                "POWERTOOLS_LOG_LEVEL": LOG_LEVEL,
                **environment,
            },
        )
        # What its trigger invokes: with SnapStart the published version's alias, else the function.
        self.target: lambda_.IFunction = self.function
        if snap_start:
            self.target = lambda_.Alias(
                self, "Alias", alias_name=LIVE_ALIAS, version=self.function.current_version
            )
            # CDK warns that SnapStart needs a published version: the alias above is on one.
            Annotations.of(self.function).acknowledge_warning("@aws-cdk/aws-lambda:snapStartRequirePublish")


class Functions(Construct):
    """The api, worker, dead_letter and recovery functions, wired to the resources they use."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: Settings,
        code: lambda_.Code,
        tables: JobTables,
        queues: JobQueues,
        storage: Storage,
        alerts: Alerts,
        keys: ApiKeys | None,
        catalog: JobTypeCatalog,
        groups: Sequence[WorkerGroup],
        secrets: JobSecrets,
    ) -> None:
        super().__init__(scope, construct_id)
        offered = {
            **stack_environment(settings, tables, queues, storage, alerts, keys),
            **job_types_environment(self, catalog, queues),
        }
        shared: tuple[ResourceOwner, ...] = (tables, storage, alerts, SenderIdentity(self, settings))
        built: dict[str, ServiceFunction] = {}
        self.workers: dict[str, ServiceFunction] = {}  # by group suffix, the shared worker's ""
        self.workflows: dict[str, ServiceFunction] = {}  # the groups' with workflow types, by suffix
        for spec in SPECS:
            for group in groups if spec is WORKER else (None,):
                own = worker_spec(group) if group is not None else spec
                environment = {
                    **offered,
                    **(group_environment(self, group, catalog, queues, secrets) if group else {}),
                }
                function = ServiceFunction(
                    self,
                    own,
                    code=code,
                    environment=environment_for(own.settings, environment),
                    snap_start=_snap_start(spec, settings),
                )
                names = catalog.secrets_of(group.types) if group is not None else ()
                access = _access(own, group, catalog, settings)
                needs = _needs(group, catalog, settings) if group is not None else []
                for owner in (*shared, queues.of(group.suffix if group else ""), secrets.of(names)):
                    owner.grant_access(function.role, access)
                built[own.construct_id] = function
                if group is not None:
                    self.workers[group.suffix] = function
                    if catalog.workflows_of(group.types):
                        self.workflows[group.suffix] = self._workflow_function(
                            group,
                            function,
                            code,
                            environment,
                            (*shared, queues.of(group.suffix)),
                            secrets,
                            catalog,
                            (access, workflow_access(needs)),
                        )
        self.api = built[API.construct_id]
        if self.workflows:
            executions = [f"{f.function.function_arn}:*" for f in self.workflows.values()]
            grant(self.api.role, API.access, {Resource.WORKFLOW_EXECUTIONS: executions})
        self.worker = self.workers[""]
        self.dead_letter = built[DEAD_LETTER.construct_id]
        self.recovery = built[RECOVERY.construct_id]
        self.schedules = built[SCHEDULES.construct_id]
        # Every function by its name on the dashboard, in SPECS order: for what watches all of them.
        self.by_entry_point: dict[str, lambda_.IFunction] = {
            _dashboard_name(construct_id): f.function for construct_id, f in built.items()
        }
        acknowledge(
            self,
            "AwsSolutions-IAM5",
            "Object grants are scoped to one key prefix of the uploads bucket each: uploads/ (clients' files, "
            "read and presigned) and results/ (what jobs write). Object keys are generated per upload and job.",
            findings=[
                f"Resource::{arn_of(storage.uploads)}/{prefix}*"
                for prefix in (config.UPLOADS_PREFIX, config.RESULTS_PREFIX)
            ],
        )
        self.watched = WatchedFunctions(
            self.worker.function,
            self.dead_letter.function,
            self.recovery.function,
            {suffix: f.function for suffix, f in self.workers.items() if suffix},
        )

    def _workflow_function(
        self,
        group: WorkerGroup,
        worker: ServiceFunction,
        code: lambda_.Code,
        environment: Mapping[str, str],
        owners: Sequence[ResourceOwner],
        secrets: JobSecrets,
        catalog: JobTypeCatalog,
        access: tuple[Access, Access],
    ) -> ServiceFunction:
        """The group's durable function and its alias; the group's worker may invoke that alias only.
        `access`: the worker's and the durable function's, both from the group's types' declarations."""
        worker_access_, own_access = access
        spec = workflow_spec(group)
        durable = lambda_.DurableConfig(
            execution_timeout=Duration.seconds(config.WORKFLOW_EXECUTION_TIMEOUT_SECONDS),
            retention_period=Duration.days(config.WORKFLOW_RETENTION_DAYS),
        )
        function = ServiceFunction(
            self, spec, code=code, environment=environment_for(spec.settings, environment), durable=durable
        )
        for owner in (*owners, secrets.of(catalog.secrets_of(group.types))):
            owner.grant_access(function.role, own_access)
        grant(function.role, own_access, {Resource.OWN_EXECUTIONS: f"{function.function.function_arn}:*"})
        alias = lambda_.Alias(
            function, "Alias", alias_name=WORKFLOW_ALIAS, version=function.function.current_version
        )
        grant(worker.role, worker_access_, {Resource.WORKFLOW_ALIAS: alias.function_arn})
        worker.function.add_environment(config.ENV_WORKFLOW_FUNCTION, alias.function_arn)
        return function


def _snap_start(spec: FunctionSpec, settings: Settings) -> bool:
    """Whether the context's `snapStart` names this function (a worker: every group's)."""
    if spec is API:
        return SnapStart.API in settings.snap_start
    return spec is WORKER and SnapStart.WORKER in settings.snap_start


def _access(
    spec: FunctionSpec, group: WorkerGroup | None, catalog: JobTypeCatalog, settings: Settings
) -> Access:
    """What the function may do: its row of the access table; a worker's from its types' declarations."""
    if group is None:
        if spec is API and settings.webhook_secrets_start_shared:
            return merged(spec.access, CAPABILITIES[Need.SHARED_SIGNING_SECRET])
        return spec.access
    return worker_access(_needs(group, catalog, settings))


def _needs(group: WorkerGroup, catalog: JobTypeCatalog, settings: Settings) -> list[Capability | Need]:
    """What a group's types declare (`uses`, `secrets`, `limits`, `workflow`), and the shared group's ops
    jobs: the capabilities of the access table its functions hold."""
    uses = catalog.uses_of(group.types)
    needs: list[Capability | Need] = [*uses]
    if catalog.secrets_of(group.types):
        needs.append(Need.SECRETS)
    if catalog.limited_of(group.types, settings.limit_overrides):
        needs.append(Need.LIMITS)
    if group.shared:
        needs.append(Need.OPS)  # bulk_action, the lifecycle's own type, runs from the shared queue
    if catalog.workflows_of(group.types):
        needs.append(Need.WORKFLOWS)
    if Capability.WEBHOOK_SIGNING in uses and settings.webhook_secrets_start_shared:
        needs.append(Need.SHARED_SIGNING_SECRET)
    return needs


def _dashboard_name(construct_id: str) -> str:
    """`Worker` -> `worker`, `DeadLetter` -> `dead_letter`, `Worker180s1024MB` -> `worker-180s1024MB`."""
    for spec in SPECS:
        if construct_id == spec.construct_id:
            return spec.entry_point
    return f"{WORKER.entry_point}-{construct_id.removeprefix(WORKER.construct_id)}"


def worker_spec(group: WorkerGroup) -> FunctionSpec:
    """The worker's spec for a group: the shared worker's as it is, the others' with their own needs."""
    if group.shared:
        return WORKER
    return dataclasses.replace(
        WORKER,
        construct_id=f"{WORKER.construct_id}{group.suffix}",
        description=f"offload worker: runs {', '.join(group.types)} from its own queue",
        timeout_seconds=group.timeout_seconds,
        memory_mb=group.memory_mb,
    )


def workflow_spec(group: WorkerGroup) -> FunctionSpec:
    return dataclasses.replace(
        WORKFLOW,
        construct_id=f"{WORKFLOW.construct_id}{group.suffix}",
        timeout_seconds=group.timeout_seconds,
        memory_mb=group.memory_mb,
    )


def job_types_environment(scope: Construct, catalog: JobTypeCatalog, queues: JobQueues) -> dict[str, str]:
    """What every function may know of the job types: the user's packages, and each type's queue."""
    stack = Stack.of(scope)
    offered = {
        config.ENV_JOB_QUEUE_URLS: stack.to_json_string(queues.routes()),
        config.ENV_HIGH_QUEUE_URLS: stack.to_json_string(queues.high_routes()),
        config.ENV_DEAD_LETTER_QUEUE_URLS: stack.to_json_string(queues.dead_letter_routes()),
    }
    if catalog.packages:
        offered[config.ENV_JOB_PACKAGES] = ",".join(catalog.package_names)
    return offered


def group_environment(
    scope: Construct, group: WorkerGroup, catalog: JobTypeCatalog, queues: JobQueues, secrets: JobSecrets
) -> dict[str, str]:
    """A worker's own values: its queues, a lease that outlives its timeout, its types' settings and
    the ARNs of their secrets (no other worker's)."""
    stack = Stack.of(scope)
    pair = queues.pairs[group.suffix]
    environment = {
        config.ENV_QUEUE_URL: pair.queue.queue_url,
        config.ENV_DLQ_URL: pair.dead_letter.queue_url,
        config.ENV_LEASE_SECONDS: str(group.lease_seconds),
    }
    type_settings = catalog.settings_of(group.types)
    if type_settings:
        environment[config.ENV_JOB_SETTINGS] = stack.to_json_string(type_settings)
    declared = catalog.secrets_of(group.types)
    if declared:
        environment[config.ENV_JOB_SECRETS] = stack.to_json_string(secrets.arns(declared))
    return environment


def stack_environment(
    settings: Settings,
    tables: JobTables,
    queues: JobQueues,
    storage: Storage,
    alerts: Alerts,
    keys: ApiKeys | None,
) -> dict[str, str]:
    """Every environment value the stack knows, by variable name; each function takes what its model
    declares. The submission checks and the worker read the same values, so they cannot disagree."""
    return {
        config.ENV_JOBS_TABLE: tables.jobs.table_name,
        config.ENV_DELIVERIES_TABLE: tables.deliveries.table_name,
        config.ENV_STATUS_SHARDS: str(settings.status_shards),
        config.ENV_FINISHED_TTL_DAYS: str(config.FINISHED_TTL_DAYS),
        config.ENV_QUEUE_URL: queues.main.queue_url,
        config.ENV_DLQ_URL: queues.dead_letter.queue_url,
        config.ENV_ALERTS_TOPIC_ARN: alerts.topic.topic_arn,
        config.ENV_UPLOADS_BUCKET: storage.uploads.bucket_name,
        config.ENV_WEBHOOK_SECRET_ARN: storage.webhook_secret.secret_arn,
        config.ENV_WEBHOOK_SECRETS_TABLE: tables.webhook_secrets.table_name,
        config.ENV_WEBHOOK_SECRETS_START_SHARED: ",".join(shared_clients(settings, keys)),
        config.ENV_SENDER_EMAIL: settings.sender_email,
        config.ENV_BACKOFF_BASE_SECONDS: str(settings.backoff_base_seconds),
        config.ENV_BACKOFF_CAP_SECONDS: str(settings.backoff_cap_seconds),
        config.ENV_RETRY_POLICIES: json.dumps(
            settings.retry_overrides, separators=(",", ":"), sort_keys=True
        ),
        config.ENV_RECOVERY_GRACE_SECONDS: str(config.RECOVERY_GRACE_SECONDS),
        config.ENV_ALERT_WINDOW_SECONDS: str(settings.alert_window_seconds),
        config.ENV_WORKER_CONCURRENCY: str(config.WORKER_CONCURRENCY),
        config.ENV_THUMBNAIL_SIZES: ",".join(str(size) for size in settings.thumbnail_sizes),
        config.ENV_MAX_FILE_BYTES: str(config.MAX_FILE_BYTES),
        config.ENV_ALLOW_HTTP_WEBHOOKS: str(settings.allow_http_webhooks).lower(),
        **callers_environment(settings, keys),
        config.ENV_LIMITS_TABLE: tables.limits.table_name,
        config.ENV_JOB_LIMITS: json.dumps(settings.limit_overrides, separators=(",", ":"), sort_keys=True),
        config.ENV_LIMIT_MAX_WAIT_SECONDS: str(config.LIMIT_MAX_WAIT_SECONDS),
        config.ENV_SCHEDULE_HORIZON_SECONDS: str(settings.schedule_horizon_seconds),
        config.ENV_SCHEDULES_TABLE: tables.schedules.table_name,
        config.ENV_MAX_SCHEDULES_PER_CLIENT: str(settings.max_schedules_per_client),
        config.ENV_MAX_FIRINGS_PER_CLIENT_DAY: str(settings.max_firings_per_client_day),
    }


def shared_clients(settings: Settings, keys: ApiKeys | None) -> list[str]:
    """The owners (API key ids, or IAM client names) of the clients `webhookSecretsStartShared` names."""
    names = settings.webhook_secrets_start_shared
    return list(names) if keys is None else [keys.clients[name].key_id for name in names]


def callers_environment(settings: Settings, keys: ApiKeys | None) -> dict[str, str]:
    """How the api function tells its callers apart: the operator key's id, or (auth=iam) the roles."""
    if keys is None:
        return {config.ENV_IAM_CALLERS: settings.iam_callers.model_dump_json()}
    return {config.ENV_OPERATOR_KEY_ID: keys.operator.key_id}


class SenderIdentity:
    """The SES identity email jobs send as. It lives outside the stack (verified by hand), so no
    construct owns it: this grants sending on it, and only with senderEmail as the From address."""

    def __init__(self, scope: Construct, settings: Settings) -> None:
        stack = Stack.of(scope)
        # SES authorizes a send against the identity that verified the From address: the address itself,
        # or its domain when the domain is verified. Either may be the one.
        self._identities = [
            stack.format_arn(service="ses", resource="identity", resource_name=name)
            for name in (settings.sender_email, settings.sender_domain)
        ]
        self._from = settings.sender_email

    def grant_access(self, grantee: iam.IGrantable, access: Access) -> None:
        conditions = {"StringEquals": {"ses:FromAddress": self._from}}
        grant(
            grantee,
            access,
            {Resource.SENDER_IDENTITY: self._identities},
            {Resource.SENDER_IDENTITY: conditions},
        )
