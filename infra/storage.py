"""The uploads bucket (client files and job results), its access-log bucket, and the webhook signing secret."""

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.access import Access, Resource, grant
from infra.nag import acknowledge
from infra.settings import (
    ACCESS_LOGS_EXPIRE_DAYS,
    INCOMPLETE_UPLOAD_DAYS,
    RESULTS_EXPIRE_DAYS,
    UPLOADS_EXPIRE_DAYS,
)
from lambdas import config


def _private_bucket(
    scope: Construct,
    construct_id: str,
    lifecycle_rules: list[s3.LifecycleRule],
    access_logs: s3.IBucket | None = None,
) -> s3.Bucket:
    return s3.Bucket(
        scope,
        construct_id,
        encryption=s3.BucketEncryption.S3_MANAGED,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        enforce_ssl=True,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        lifecycle_rules=lifecycle_rules,
        server_access_logs_bucket=access_logs,
        server_access_logs_prefix=f"{construct_id}/" if access_logs else None,
        removal_policy=RemovalPolicy.RETAIN,
    )


class Storage(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)

        self.access_logs = _private_bucket(
            self,
            "AccessLogsBucket",
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(ACCESS_LOGS_EXPIRE_DAYS))],
        )

        self.uploads = _private_bucket(
            self,
            "UploadsBucket",
            access_logs=self.access_logs,
            lifecycle_rules=[
                s3.LifecycleRule(
                    abort_incomplete_multipart_upload_after=Duration.days(INCOMPLETE_UPLOAD_DAYS)
                ),
                s3.LifecycleRule(prefix=config.UPLOADS_PREFIX, expiration=Duration.days(UPLOADS_EXPIRE_DAYS)),
                s3.LifecycleRule(prefix=config.RESULTS_PREFIX, expiration=Duration.days(RESULTS_EXPIRE_DAYS)),
            ],
        )

        self.webhook_secret = secretsmanager.Secret(
            self,
            "WebhookSigningSecret",
            description="Signs outgoing webhooks (Standard Webhooks); the worker adds the whsec_ prefix.",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                password_length=48, exclude_punctuation=True, include_space=False
            ),
        )
        acknowledge(
            self.webhook_secret,
            "AwsSolutions-SMG4",
            "Webhook receivers hold a copy of this secret, so rotating it needs a coordinated "
            "hand-over with them; rotation is manual and documented in docs/configuration.md.",
        )

    def grant_access(self, grantee: iam.IGrantable, access: Access) -> None:
        grant(
            grantee,
            access,
            {
                Resource.UPLOADS_BUCKET: self.uploads.bucket_arn,
                Resource.UPLOADED_FILES: self.uploads.arn_for_objects(f"{config.UPLOADS_PREFIX}*"),
                Resource.RESULT_FILES: self.uploads.arn_for_objects(f"{config.RESULTS_PREFIX}*"),
                Resource.SIGNING_SECRET: self.webhook_secret.secret_arn,
            },
        )
