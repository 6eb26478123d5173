"""The DynamoDB tables: job records, the webhook delivery log, each client's webhook signing secrets, the
recurring schedules and the flow-control limits (key names from lambdas.store.schema). Every table is
encrypted at rest (AWS managed KMS key)."""

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.access import Access, Resource, grant
from lambdas.store import schema

_S = dynamodb.AttributeType.STRING
_N = dynamodb.AttributeType.NUMBER


def _table(
    scope: Construct,
    construct_id: str,
    partition_key: str,
    *,
    deletion_protection: bool,
    sort_key: str | None = None,
) -> dynamodb.Table:
    return dynamodb.Table(
        scope,
        construct_id,
        partition_key=dynamodb.Attribute(name=partition_key, type=_S),
        sort_key=dynamodb.Attribute(name=sort_key, type=_S) if sort_key else None,
        # Finished jobs and delivery records expire after FINISHED_TTL_DAYS (webhook secrets carry no TTL).
        time_to_live_attribute=schema.TTL_ATTRIBUTE,
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        encryption=dynamodb.TableEncryption.AWS_MANAGED,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        # Job history outlives a stack deletion, and a table cannot be deleted by a stray call either
        # (context deletionProtection=false turns that off for development stacks).
        removal_policy=RemovalPolicy.RETAIN,
        deletion_protection=deletion_protection,
    )


class JobTables(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, deletion_protection: bool = True) -> None:
        super().__init__(scope, construct_id)

        self.jobs = _table(self, "JobsTable", schema.JOBS_PK, deletion_protection=deletion_protection)
        for index in schema.JOB_INDEXES:
            # Keys only, or INCLUDE of attributes that never change: a write that moves none of an
            # index's keys costs that index nothing (docs/internals/capacity.md).
            self.jobs.add_global_secondary_index(
                index_name=index.name,
                partition_key=dynamodb.Attribute(name=index.partition_key, type=_S),
                sort_key=dynamodb.Attribute(name=index.sort_key, type=_N if index.numeric_sort_key else _S),
                projection_type=dynamodb.ProjectionType.INCLUDE
                if index.include
                else dynamodb.ProjectionType.KEYS_ONLY,
                non_key_attributes=list(index.include) or None,
            )
        self.deliveries = _table(
            self,
            "DeliveriesTable",
            schema.DELIVERIES_PK,
            sort_key=schema.DELIVERIES_SK,
            deletion_protection=deletion_protection,
        )
        # One item per client, made on first use: a client added later needs no redeploy.
        self.webhook_secrets = _table(
            self, "WebhookSecretsTable", schema.WEBHOOK_SECRETS_PK, deletion_protection=deletion_protection
        )

        # Flow control: one item per job type's limit and key, made on first use (lambdas/store/limits.py).
        self.limits = _table(
            self,
            "LimitsTable",
            schema.LIMITS_PK,
            sort_key=schema.LIMITS_SK,
            deletion_protection=deletion_protection,
        )

        # Recurring schedules under their owner, and each owner's count (docs/internals/scheduling.md).
        self.schedules = _table(
            self,
            "SchedulesTable",
            schema.SCHEDULES_PK,
            sort_key=schema.SCHEDULES_SK,
            deletion_protection=deletion_protection,
        )

    def grant_access(self, grantee: iam.IGrantable, access: Access) -> None:
        grant(
            grantee,
            access,
            {
                Resource.JOBS_TABLE: self.jobs.table_arn,
                Resource.STATUS_INDEX: f"{self.jobs.table_arn}/index/{schema.STATUS_INDEX.name}",
                Resource.LIST_INDEXES: [
                    f"{self.jobs.table_arn}/index/{index.name}"
                    for index in schema.JOB_INDEXES
                    if index is not schema.STATUS_INDEX
                ],
                Resource.DELIVERIES_TABLE: self.deliveries.table_arn,
                Resource.WEBHOOK_SECRETS_TABLE: self.webhook_secrets.table_arn,
                Resource.LIMITS_TABLE: self.limits.table_arn,
                Resource.SCHEDULES_TABLE: self.schedules.table_arn,
            },
        )
