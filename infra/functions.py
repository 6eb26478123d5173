"""The four functions: one factory for what they share, then each one's environment and permissions."""

from collections.abc import Mapping

from aws_cdk import CfnElement, Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from constructs import Construct, IConstruct

from infra.nag import acknowledge
from infra.queues import JobQueues
from infra.settings import (
    API_MEMORY_MB,
    API_TIMEOUT_SECONDS,
    DEAD_LETTER_TIMEOUT_SECONDS,
    LOG_LEVEL,
    SMALL_MEMORY_MB,
    WORKER_MEMORY_MB,
    Settings,
)
from infra.storage import Storage
from infra.tables import JobTables
from lambdas import config

RUNTIME = lambda_.Runtime.PYTHON_3_14
ARCHITECTURE = lambda_.Architecture.ARM_64
LOG_RETENTION = logs.RetentionDays.ONE_MONTH


class ServiceFunction(Construct):
    """A function of this service: its own role and log group, tracing on, Powertools configured."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        code: lambda_.Code,
        entry_point: str,
        description: str,
        environment: Mapping[str, str],
        timeout_seconds: int,
        memory_mb: int = SMALL_MEMORY_MB,
    ) -> None:
        super().__init__(scope, construct_id)
        # A role per function, and no managed policy: each one is granted exactly what it uses below.
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"offload {entry_point} function",
        )
        self.log_group = logs.LogGroup(
            self,
            "LogGroup",
            retention=LOG_RETENTION,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.log_group.grant_write(self.role)
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
            handler=f"lambdas.handlers.{entry_point}.handler",
            description=description,
            role=self.role,
            log_group=self.log_group,
            timeout=Duration.seconds(timeout_seconds),
            memory_size=memory_mb,
            tracing=lambda_.Tracing.ACTIVE,
            environment={
                "POWERTOOLS_SERVICE_NAME": config.SERVICE_NAME,
                "POWERTOOLS_METRICS_NAMESPACE": config.METRICS_NAMESPACE,
                "POWERTOOLS_LOG_LEVEL": LOG_LEVEL,
                **environment,
            },
        )


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
        alerts_topic: sns.ITopic,
    ) -> None:
        super().__init__(scope, construct_id)
        jobs_table_env = {
            config.ENV_JOBS_TABLE: tables.jobs.table_name,
            config.ENV_STATUS_SHARDS: str(config.STATUS_SHARDS),
            config.ENV_FINISHED_TTL_DAYS: str(config.FINISHED_TTL_DAYS),
        }
        uploads = storage.uploads

        self.api = ServiceFunction(
            self,
            "Api",
            code=code,
            entry_point="api",
            description="offload REST API: submits jobs, reports their status, hands out upload URLs",
            timeout_seconds=API_TIMEOUT_SECONDS,
            memory_mb=API_MEMORY_MB,
            environment={
                **jobs_table_env,
                config.ENV_QUEUE_URL: queues.main.queue_url,
                config.ENV_UPLOADS_BUCKET: uploads.bucket_name,
                # Submission applies the same webhook URL policy and file size limit as the worker.
                config.ENV_MAX_FILE_BYTES: str(config.MAX_FILE_BYTES),
                config.ENV_ALLOW_HTTP_WEBHOOKS: str(settings.allow_http_webhooks).lower(),
            },
        )
        tables.jobs.grant_read_write_data(self.api.role)
        queues.main.grant_send_messages(self.api.role)
        # Presigned PUT URLs carry the signer's permissions: the api may only let clients write uploads.
        # Reading them lets a submission be checked for a missing file (List* makes that a 404, not 403).
        uploads.grant_put(self.api.role, f"{config.UPLOADS_PREFIX}*")
        uploads.grant_read(self.api.role, f"{config.UPLOADS_PREFIX}*")
        _acknowledge_object_grants(
            self.api.role,
            uploads,
            [config.UPLOADS_PREFIX],
            ["s3:Abort*", "s3:GetBucket*", "s3:GetObject*", "s3:List*"],
        )

        self.worker = ServiceFunction(
            self,
            "Worker",
            code=code,
            entry_point="worker",
            description="offload worker: runs jobs from the main queue",
            timeout_seconds=config.WORKER_TIMEOUT_SECONDS,
            memory_mb=WORKER_MEMORY_MB,
            environment={
                **jobs_table_env,
                config.ENV_DELIVERIES_TABLE: tables.deliveries.table_name,
                config.ENV_QUEUE_URL: queues.main.queue_url,
                config.ENV_DLQ_URL: queues.dead_letter.queue_url,
                config.ENV_UPLOADS_BUCKET: uploads.bucket_name,
                config.ENV_WEBHOOK_SECRET_ARN: storage.webhook_secret.secret_arn,
                config.ENV_SENDER_EMAIL: settings.sender_email,
                config.ENV_BACKOFF_BASE_SECONDS: str(settings.backoff_base_seconds),
                config.ENV_BACKOFF_CAP_SECONDS: str(settings.backoff_cap_seconds),
                config.ENV_LEASE_SECONDS: str(config.LEASE_SECONDS),
                config.ENV_WORKER_CONCURRENCY: str(config.WORKER_CONCURRENCY),
                config.ENV_THUMBNAIL_SIZES: ",".join(str(size) for size in settings.thumbnail_sizes),
                config.ENV_MAX_FILE_BYTES: str(config.MAX_FILE_BYTES),
                config.ENV_ALLOW_HTTP_WEBHOOKS: str(settings.allow_http_webhooks).lower(),
            },
        )
        worker_role = self.worker.role
        tables.jobs.grant_read_write_data(worker_role)
        tables.deliveries.grant_write_data(worker_role)
        queues.main.grant_consume_messages(worker_role)  # includes ChangeMessageVisibility (backoff)
        queues.main.grant_send_messages(worker_role)  # child jobs of a fan-out
        queues.dead_letter.grant_send_messages(worker_role)
        uploads.grant_read(worker_role, f"{config.UPLOADS_PREFIX}*")
        uploads.grant_read_write(worker_role, f"{config.RESULTS_PREFIX}*")
        _acknowledge_object_grants(
            worker_role,
            uploads,
            [config.UPLOADS_PREFIX, config.RESULTS_PREFIX],
            ["s3:Abort*", "s3:DeleteObject*", "s3:GetBucket*", "s3:GetObject*", "s3:List*"],
        )
        acknowledge(
            worker_role,
            "AwsSolutions-IAM5",
            "grant_write_data on the delivery log also covers its byEndpoint index; nothing outside "
            "that one table.",
            findings=[f"Resource::{_arn_of(tables.deliveries)}/index/*"],
        )
        storage.webhook_secret.grant_read(worker_role)
        worker_role.add_to_principal_policy(_send_email_as(self, settings))

        self.dead_letter = ServiceFunction(
            self,
            "DeadLetter",
            code=code,
            entry_point="dead_letter",
            description="offload dead-letter consumer: marks jobs dead and raises an alert",
            timeout_seconds=DEAD_LETTER_TIMEOUT_SECONDS,
            environment={**jobs_table_env, config.ENV_ALERTS_TOPIC_ARN: alerts_topic.topic_arn},
        )
        tables.jobs.grant_read_write_data(self.dead_letter.role)
        queues.dead_letter.grant_consume_messages(self.dead_letter.role)
        alerts_topic.grant_publish(self.dead_letter.role)
        acknowledge(
            self.dead_letter.role,
            "AwsSolutions-IAM5",
            "Publishing to the encrypted alerts topic needs data keys from its one KMS key; CDK's "
            "grant_publish names that key and the GenerateDataKey* family it needs.",
            findings=["Action::kms:GenerateDataKey*"],
        )

        self.recovery = ServiceFunction(
            self,
            "Recovery",
            code=code,
            entry_point="recovery",
            description="offload recovery sweep: re-sends jobs whose message or worker was lost",
            timeout_seconds=config.RECOVERY_TIMEOUT_SECONDS,
            environment={
                **jobs_table_env,
                config.ENV_QUEUE_URL: queues.main.queue_url,
                config.ENV_RECOVERY_GRACE_SECONDS: str(config.RECOVERY_GRACE_SECONDS),
            },
        )
        tables.jobs.grant_read_write_data(self.recovery.role)
        queues.main.grant_send_messages(self.recovery.role)

        for function in (self.api, self.worker, self.dead_letter, self.recovery):
            acknowledge(
                function.role,
                "AwsSolutions-IAM5",
                "grant_read_write_data on the jobs table also covers its indexes: the functions query "
                "byStatus. Nothing outside that one table.",
                findings=[f"Resource::{_arn_of(tables.jobs)}/index/*"],
            )


def _arn_of(construct: IConstruct) -> str:
    """How cdk-nag names a resource's ARN in a finding: `<LogicalId.Arn>`."""
    resource = construct.node.default_child
    assert isinstance(resource, CfnElement)
    return f"<{Stack.of(construct).resolve(resource.logical_id)}.Arn>"


def _acknowledge_object_grants(
    role: iam.IRole, bucket: s3.IBucket, prefixes: list[str], action_groups: list[str]
) -> None:
    acknowledge(
        role,
        "AwsSolutions-IAM5",
        "CDK's bucket grants (read, put, read-write), each scoped to the objects under one key prefix of "
        "the uploads bucket: uploads/ to presign and read, results/ to write. The wildcards are CDK's "
        "action groups for those grants.",
        findings=[
            *(f"Action::{action}" for action in action_groups),
            *(f"Resource::{_arn_of(bucket)}/{prefix}*" for prefix in prefixes),
        ],
    )


def _send_email_as(scope: Construct, settings: Settings) -> iam.PolicyStatement:
    """SES authorizes a send against the identity that verified the From address: the address itself, or
    its domain when the domain is verified. Either is allowed here, and only with that From address."""
    stack = Stack.of(scope)
    identities = [settings.sender_email, settings.sender_domain]
    return iam.PolicyStatement(
        actions=["ses:SendEmail"],
        resources=[
            stack.format_arn(service="ses", resource="identity", resource_name=name) for name in identities
        ],
        conditions={"StringEquals": {"ses:FromAddress": settings.sender_email}},
    )
