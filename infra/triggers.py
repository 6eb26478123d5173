"""What invokes the functions: the two queues and the recovery schedule."""

from collections.abc import Mapping

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.queues import JobQueues
from infra.settings import Settings
from lambdas import config


class Triggers(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: Settings,
        queues: JobQueues,
        workers: Mapping[str, lambda_.IFunction],  # a SnapStart worker's alias
        dead_letter: lambda_.Function,
        recovery: lambda_.Function,
    ) -> None:
        super().__init__(scope, construct_id)
        # Mappings rather than SqsEventSource, which would also grant the function CDK's whole consume
        # family; what the pollers need is in the access table (infra/access.py), granted with the rest.
        # Partial batch responses: one failing job must not send its whole batch around again.
        # Each worker drains its own queue; the one dead-letter function drains every worker's DLQ.
        # A group's high queue has a mapping of its own: Lambda polls each mapping apart, each within its
        # own maximum concurrency, so `high` jobs never wait behind the queue's backlog. It takes no
        # batching window: a `high` job is invoked as soon as it is received.
        for suffix, pair in queues.pairs.items():
            workers[suffix].add_event_source_mapping(
                f"QueueSource{suffix}",
                event_source_arn=pair.queue.queue_arn,
                batch_size=settings.worker_batch_size,
                max_batching_window=Duration.seconds(settings.worker_batching_window_seconds),
                max_concurrency=pair.group.max_concurrency or settings.worker_max_concurrency,
                report_batch_item_failures=True,
            )
            workers[suffix].add_event_source_mapping(
                f"HighQueueSource{suffix}",
                event_source_arn=pair.high.queue_arn,
                batch_size=config.HIGH_QUEUE_BATCH_SIZE,
                max_concurrency=config.HIGH_QUEUE_MAX_CONCURRENCY,
                report_batch_item_failures=True,
            )
            dead_letter.add_event_source_mapping(
                f"DeadLetterQueueSource{suffix}",
                event_source_arn=pair.dead_letter.queue_arn,
                batch_size=config.DLQ_BATCH_SIZE,
                max_batching_window=Duration.seconds(config.DLQ_BATCHING_WINDOW_SECONDS),
                report_batch_item_failures=True,
            )
        self.recovery_schedule = events.Rule(
            self,
            "RecoverySchedule",
            description="Runs the offload recovery sweep",
            schedule=events.Schedule.rate(Duration.minutes(settings.recovery_rate_minutes)),
            # A missed sweep is harmless: the next one covers the same jobs.
            targets=[targets.LambdaFunction(recovery, retry_attempts=0)],
        )
