"""Alerting: the encrypted SNS topic, and the alarms that publish to it."""

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from infra.queues import JobQueues
from infra.settings import Settings
from lambdas import config

_PERIOD = Duration.minutes(5)


class Alerts(Construct):
    """The topic every alarm and the dead-letter function publish to."""

    def __init__(self, scope: Construct, construct_id: str, *, alert_email: str | None) -> None:
        super().__init__(scope, construct_id)

        # A customer managed key, because CloudWatch alarms cannot publish to a topic encrypted with
        # the AWS managed SNS key: its policy cannot be extended to the CloudWatch service.
        self.key = kms.Key(
            self,
            "AlertsKey",
            description="Encrypts the offload alerts topic",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.DESTROY,
            pending_window=Duration.days(7),
        )
        self.key.grant(
            iam.ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey*"
        )

        self.topic = sns.Topic(self, "AlertsTopic", master_key=self.key, enforce_ssl=True)
        if alert_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(alert_email))


class Alarms(Construct):
    """Alarms on the signals that mean jobs are being lost or delayed."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        topic: sns.ITopic,
        queues: JobQueues,
        worker: lambda_.IFunction,
        settings: Settings,
    ) -> None:
        super().__init__(scope, construct_id)
        self._action = cloudwatch_actions.SnsAction(topic)

        # The dead-letter function drains this queue within a minute; a message that stays for two
        # whole periods means that function is failing or cannot keep up.
        self._alarm(
            "DeadLetterQueueNotDrained",
            queues.dead_letter.metric_approximate_number_of_messages_visible(
                period=_PERIOD, statistic=cloudwatch.Stats.MINIMUM
            ),
            threshold=0,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=2,
            description="Messages stay on the dead-letter queue: the dead-letter function is failing or behind.",
        )
        # SQS does not count redriven messages in the DLQ's NumberOfMessagesSent, so jobs given up on are
        # counted by the functions themselves (EMF metric).
        self._alarm(
            "JobsDead",
            cloudwatch.Metric(
                namespace=config.METRICS_NAMESPACE,
                metric_name=config.METRIC_DEAD,
                dimensions_map={"service": config.SERVICE_NAME},
                statistic=cloudwatch.Stats.SUM,
                period=_PERIOD,
            ),
            threshold=1,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            description="At least one job exhausted its attempts and is dead.",
        )
        self._alarm(
            "QueueBacklogAge",
            queues.main.metric_approximate_age_of_oldest_message(
                period=_PERIOD, statistic=cloudwatch.Stats.MAXIMUM
            ),
            threshold=settings.longest_retry_span_seconds,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=2,
            description="A job message is older than the longest legitimate delay-plus-retry schedule: "
            "the worker is not keeping up.",
        )
        self._alarm(
            "WorkerErrors",
            worker.metric_errors(period=_PERIOD, statistic=cloudwatch.Stats.SUM),
            threshold=1,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            description="Worker invocations failed as a whole (crash or timeout), not single jobs.",
        )
        self._alarm(
            "WorkerThrottles",
            worker.metric_throttles(period=_PERIOD, statistic=cloudwatch.Stats.SUM),
            threshold=1,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            description="Worker invocations were throttled: account concurrency is short.",
        )

    def _alarm(
        self,
        construct_id: str,
        metric: cloudwatch.IMetric,
        *,
        threshold: float,
        comparison: cloudwatch.ComparisonOperator,
        description: str,
        evaluation_periods: int = 1,
    ) -> cloudwatch.Alarm:
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            metric=metric,
            threshold=threshold,
            comparison_operator=comparison,
            evaluation_periods=evaluation_periods,
            datapoints_to_alarm=evaluation_periods,
            # No data means no messages or no invocations: nothing is wrong.
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        alarm.add_alarm_action(self._action)
        alarm.add_ok_action(self._action)
        return alarm
