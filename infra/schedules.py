"""The recurring schedules' timer on AWS: one EventBridge Scheduler schedule, in a schedule group of the
stack, that invokes the `schedules` function every minute with `{"tick": <its scheduled time>}`.

The function fires every stored schedule due in that minute (the table is the source of truth; the API
never creates AWS schedules, so it needs no `iam:PassRole` at all). The target retries a failed tick and
then puts it on a dead-letter queue, which is alarmed (infra/monitoring.py): a failed firing is never
silent. A tick retried or delivered twice creates no second job (the job id comes from the schedule and
its time).
"""

import json

from aws_cdk import Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.nag import acknowledge
from lambdas import config
from lambdas.handlers.schedules import TICK, TICK_SECONDS

TICK_RETRIES = 5
TICK_MAX_AGE_SECONDS = 10 * 60  # a tick older than this is past: later ticks fire their own minutes


class ScheduleTick(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, function: lambda_.IFunction) -> None:
        super().__init__(scope, construct_id)
        self.group = scheduler.CfnScheduleGroup(self, "Group")
        self.dead_letter = sqs.Queue(
            self,
            "FailedTicks",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(config.DLQ_RETENTION_DAYS),
        )
        acknowledge(
            self.dead_letter,
            "AwsSolutions-SQS3",
            "This queue is the dead-letter queue of the schedules tick's target (EventBridge Scheduler "
            "writes to it); nothing consumes it, its depth is alarmed.",
        )
        stack = Stack.of(self)
        # The scheduler's own role: invoke this one function and dead-letter to this one queue, only for
        # the schedules of this stack's group (aws:SourceArn, the schedule group's ARN as EventBridge
        # Scheduler's confused-deputy guidance names it) in this account: another schedule of the
        # account, or another account's, cannot make Scheduler act with it.
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal(
                "scheduler.amazonaws.com",
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account, "aws:SourceArn": self.group.attr_arn}
                },
            ),
            description="offload: EventBridge Scheduler invokes the schedules function",
        )
        self.role.add_to_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[function.function_arn])
        )
        self.role.add_to_policy(
            iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[self.dead_letter.queue_arn])
        )
        self.schedule = scheduler.CfnSchedule(
            self,
            "Tick",
            description="Fires offload's recurring schedules due in the minute before",
            group_name=self.group.ref,
            schedule_expression=f"rate({TICK_SECONDS // 60} minute)",
            flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(mode="OFF"),
            target=scheduler.CfnSchedule.TargetProperty(
                arn=function.function_arn,
                role_arn=self.role.role_arn,
                input=json.dumps({TICK: "<aws.scheduler.scheduled-time>"}),
                retry_policy=scheduler.CfnSchedule.RetryPolicyProperty(
                    maximum_retry_attempts=TICK_RETRIES, maximum_event_age_in_seconds=TICK_MAX_AGE_SECONDS
                ),
                dead_letter_config=scheduler.CfnSchedule.DeadLetterConfigProperty(
                    arn=self.dead_letter.queue_arn
                ),
            ),
        )
