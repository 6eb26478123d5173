"""The main job queue and its dead-letter queue."""

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.access import Access, Resource, grant
from infra.settings import DEAD_LETTER_TIMEOUT_SECONDS
from lambdas import config


class JobQueues(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)

        self.dead_letter = sqs.Queue(
            self,
            "DeadLetterQueue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(config.DLQ_RETENTION_DAYS),
            # The dead-letter function's source queue: the same six-times rule as the main queue.
            visibility_timeout=Duration.seconds(6 * DEAD_LETTER_TIMEOUT_SECONDS),
        )
        # The DLQ has no redrive of its own (cdk-nag's SQS3 knows it for a DLQ): a message its function
        # cannot handle is retried here until retention ends, and the DLQ alarm fires meanwhile.

        self.main = sqs.Queue(
            self,
            "Queue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(config.MAIN_QUEUE_RETENTION_DAYS),
            visibility_timeout=Duration.seconds(config.VISIBILITY_TIMEOUT_SECONDS),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dead_letter, max_receive_count=config.MAX_RECEIVE_COUNT
            ),
        )

    def grant_access(self, grantee: iam.IGrantable, access: Access) -> None:
        grant(
            grantee,
            access,
            {
                Resource.MAIN_QUEUE: self.main.queue_arn,
                Resource.DEAD_LETTER_QUEUE: self.dead_letter.queue_arn,
            },
        )
