"""The DynamoDB tables: job records and the webhook delivery log (key names from lambdas.store.schema)."""

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from lambdas.store import schema

_S = dynamodb.AttributeType.STRING
_N = dynamodb.AttributeType.NUMBER


def _table(
    scope: Construct,
    construct_id: str,
    partition_key: str,
    sort_key: str | None = None,
    time_to_live_attribute: str | None = None,
) -> dynamodb.Table:
    return dynamodb.Table(
        scope,
        construct_id,
        partition_key=dynamodb.Attribute(name=partition_key, type=_S),
        sort_key=dynamodb.Attribute(name=sort_key, type=_S) if sort_key else None,
        time_to_live_attribute=time_to_live_attribute,
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        encryption=dynamodb.TableEncryption.AWS_MANAGED,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        # Job history outlives a stack deletion; remove the tables by hand if that is really meant.
        removal_policy=RemovalPolicy.RETAIN,
    )


class JobTables(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)

        self.jobs = _table(self, "JobsTable", schema.JOBS_PK, time_to_live_attribute=schema.TTL_ATTRIBUTE)
        self.jobs.add_global_secondary_index(
            index_name=schema.STATUS_INDEX,
            partition_key=dynamodb.Attribute(name=schema.STATUS_INDEX_PK, type=_S),
            sort_key=dynamodb.Attribute(name=schema.STATUS_INDEX_SK, type=_N),
            projection_type=dynamodb.ProjectionType.ALL,
        )
        self.deliveries = _table(self, "DeliveriesTable", schema.DELIVERIES_PK, schema.DELIVERIES_SK)
        self.deliveries.add_global_secondary_index(
            index_name=schema.ENDPOINT_INDEX,
            partition_key=dynamodb.Attribute(name=schema.ENDPOINT_INDEX_PK, type=_S),
            sort_key=dynamodb.Attribute(name=schema.ENDPOINT_INDEX_SK, type=_S),
            projection_type=dynamodb.ProjectionType.ALL,
        )
