"""Alerting: the encrypted SNS topic, and the alarms that publish to it."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from aws_cdk import ArnFormat, Duration, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.access import Access, Resource, grant
from infra.queues import JobQueues
from infra.settings import Settings
from lambdas import config

_PERIOD = Duration.minutes(5)
# CloudWatch evaluates an alarm over at most one day.
_LONGEST_PERIOD_MINUTES: Final = 24 * 60
# A 5xx is always a bug (every input gets a 2xx or a 4xx), but single ones are not worth a page.
API_5XX_RATE: Final = 0.01


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
        self.topic = sns.Topic(self, "AlertsTopic", master_key=self.key, enforce_ssl=True)
        if alert_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(alert_email))

    def allow_alarms(self, alarm_arns: Sequence[str]) -> None:
        """Let CloudWatch use the key, and only for these alarms of this account (confused deputy)."""
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],  # in a key policy, "*" is this key
                conditions={
                    "StringEquals": {"aws:SourceAccount": Stack.of(self).account},
                    "ArnEquals": {"aws:SourceArn": list(alarm_arns)},
                },
            )
        )

    def grant_access(self, grantee: iam.IGrantable, access: Access) -> None:
        grant(
            grantee,
            access,
            {Resource.ALERTS_TOPIC: self.topic.topic_arn, Resource.ALERTS_KEY: self.key.key_arn},
        )


@dataclass(frozen=True)
class WatchedFunctions:
    worker: lambda_.IFunction
    dead_letter: lambda_.IFunction
    recovery: lambda_.IFunction
    group_workers: Mapping[str, lambda_.IFunction]  # by group suffix: the workers besides the shared one


RUNBOOKS = "docs/runbooks.md"


class Runbook(StrEnum):
    """The sections of docs/runbooks.md an alarm's description names (a worker group's alarm shares its
    family's)."""

    JOBS_DEAD = "jobs-dead"
    WORKER_ERRORS = "worker-errors"
    WORKER_THROTTLES = "worker-throttles"
    DEAD_LETTER_ERRORS = "dead-letter-errors"
    DEAD_LETTER_QUEUE_NOT_DRAINED = "dead-letter-queue-not-drained"
    QUEUE_BACKLOG_AGE = "queue-backlog-age"
    HIGH_QUEUE_BACKLOG_AGE = "high-queue-backlog-age"
    RECOVERY_ERRORS = "recovery-errors"
    RECOVERY_SWEEPS_MISSING = "recovery-sweeps-missing"
    SCHEDULE_TICKS_FAILED = "schedule-ticks-failed"
    API_SERVER_ERROR_RATE = "api-server-error-rate"


class Alarms(Construct):
    """Alarms on every path where a job could be lost or stuck, each publishing to the alerts topic and
    naming its runbook."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        alerts: Alerts,
        queues: JobQueues,
        functions: WatchedFunctions,
        api_stage: apigateway.Stage,
        settings: Settings,
        schedule_dead_letters: sqs.IQueue,
    ) -> None:
        super().__init__(scope, construct_id)
        self._action = cloudwatch_actions.SnsAction(alerts.topic)
        self._arns: list[str] = []
        self.alarms: list[cloudwatch.Alarm] = []
        self._queue_alarms(queues, settings)
        # SQS does not count redriven messages in the DLQ's NumberOfMessagesSent, so jobs given up on are
        # counted by the functions themselves (EMF metric).
        self._any(
            "JobsDead",
            service_metric(self, config.METRIC_DEAD, _PERIOD),
            "At least one job exhausted its attempts and is dead.",
            Runbook.JOBS_DEAD,
        )
        for name, function, description, runbook in (
            (
                "WorkerErrors",
                functions.worker,
                "Worker invocations failed as a whole (crash or timeout).",
                Runbook.WORKER_ERRORS,
            ),
            (
                "DeadLetterErrors",
                functions.dead_letter,
                "The dead-letter consumer crashed or timed out: dead jobs may go unmarked and unalerted.",
                Runbook.DEAD_LETTER_ERRORS,
            ),
            (
                "RecoveryErrors",
                functions.recovery,
                "The recovery sweep failed: lost messages and crashed workers are not being repaired.",
                Runbook.RECOVERY_ERRORS,
            ),
        ):
            self._any(
                name,
                function.metric_errors(period=_PERIOD, statistic=cloudwatch.Stats.SUM),
                description,
                runbook,
            )
        self._any(
            "WorkerThrottles",
            functions.worker.metric_throttles(period=_PERIOD, statistic=cloudwatch.Stats.SUM),
            "Worker invocations were throttled: account concurrency is short.",
            Runbook.WORKER_THROTTLES,
        )
        for suffix, worker in functions.group_workers.items():
            self._any(
                f"WorkerErrors{suffix}",
                worker.metric_errors(period=_PERIOD, statistic=cloudwatch.Stats.SUM),
                f"Worker {suffix} invocations failed as a whole (crash or timeout).",
                Runbook.WORKER_ERRORS,
            )
            self._any(
                f"WorkerThrottles{suffix}",
                worker.metric_throttles(period=_PERIOD, statistic=cloudwatch.Stats.SUM),
                f"Worker {suffix} invocations were throttled: account concurrency is short.",
                Runbook.WORKER_THROTTLES,
            )
        self._sweep_alarm(settings)
        self._any(
            "ScheduleTicksFailed",
            # EventBridge Scheduler's dead letters are sent (not redriven), so SQS counts them here.
            schedule_dead_letters.metric_number_of_messages_sent(
                period=_PERIOD, statistic=cloudwatch.Stats.SUM
            ),
            "A tick of the recurring schedules failed after its retries: their firings of that minute made no job.",
            Runbook.SCHEDULE_TICKS_FAILED,
        )
        self._alarm(
            "ApiServerErrorRate",
            api_stage.metric_server_error(period=_PERIOD, statistic=cloudwatch.Stats.AVERAGE),
            threshold=API_5XX_RATE,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            description=f"At least {API_5XX_RATE:.0%} of API requests answered 5xx: submissions may be failing.",
            runbook=Runbook.API_SERVER_ERROR_RATE,
        )
        alerts.allow_alarms(self._arns)

    def _queue_alarms(self, queues: JobQueues, settings: Settings) -> None:
        for suffix, pair in queues.pairs.items():
            # The dead-letter function drains this queue within a minute; a message that stays for two
            # whole periods means that function is failing or cannot keep up.
            self._alarm(
                f"DeadLetterQueueNotDrained{suffix}",
                pair.dead_letter.metric_approximate_number_of_messages_visible(
                    period=_PERIOD, statistic=cloudwatch.Stats.MINIMUM
                ),
                threshold=0,
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                evaluation_periods=2,
                description="Messages stay on the dead-letter queue: the dead-letter function is failing or behind.",
                runbook=Runbook.DEAD_LETTER_QUEUE_NOT_DRAINED,
            )
            # `high` jobs wait and retry on their own queue by the same rules, so the same span applies.
            span = settings.retry_span_seconds(pair.group.timeout_seconds)
            for name, queue, what, runbook in (
                ("QueueBacklogAge", pair.queue, "A job message", Runbook.QUEUE_BACKLOG_AGE),
                ("HighQueueBacklogAge", pair.high, "A high job's message", Runbook.HIGH_QUEUE_BACKLOG_AGE),
            ):
                self._alarm(
                    f"{name}{suffix}",
                    queue.metric_approximate_age_of_oldest_message(
                        period=_PERIOD, statistic=cloudwatch.Stats.MAXIMUM
                    ),
                    threshold=span,
                    comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                    evaluation_periods=2,
                    description=f"{what} is older than the longest legitimate delay-plus-retry schedule "
                    "(every retry waiting out the largest Retry-After honoured): the worker is not keeping up.",
                    runbook=runbook,
                )

    def _sweep_alarm(self, settings: Settings) -> None:
        """No finished sweep in three scheduled periods: the recovery function counts each sweep it
        finishes, so a schedule that stopped and a function that crashes or times out every time both
        show as missing data, which breaches here."""
        window = Duration.minutes(min(3 * settings.recovery_rate_minutes, _LONGEST_PERIOD_MINUTES))
        self._alarm(
            "RecoverySweepsMissing",
            service_metric(self, config.METRIC_SWEEPS, window),
            threshold=1,
            comparison=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            missing=cloudwatch.TreatMissingData.BREACHING,
            description="No recovery sweep finished in three scheduled periods: nothing repairs lost jobs.",
            runbook=Runbook.RECOVERY_SWEEPS_MISSING,
        )

    def _any(self, construct_id: str, metric: cloudwatch.IMetric, description: str, runbook: Runbook) -> None:
        self._alarm(
            construct_id,
            metric,
            threshold=1,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            description=description,
            runbook=runbook,
        )

    def _alarm(
        self,
        construct_id: str,
        metric: cloudwatch.IMetric,
        *,
        threshold: float,
        comparison: cloudwatch.ComparisonOperator,
        description: str,
        runbook: Runbook,
        evaluation_periods: int = 1,
        # No data mostly means no messages or no invocations: nothing is wrong.
        missing: cloudwatch.TreatMissingData = cloudwatch.TreatMissingData.NOT_BREACHING,
    ) -> None:
        # Named, so the alerts key can name the alarms that may use it without depending on them.
        name = f"{Stack.of(self).stack_name}-{construct_id}"
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            alarm_name=name,
            metric=metric,
            threshold=threshold,
            comparison_operator=comparison,
            evaluation_periods=evaluation_periods,
            datapoints_to_alarm=evaluation_periods,
            treat_missing_data=missing,
            alarm_description=f"{description} Runbook: {RUNBOOKS}#{runbook}",
        )
        alarm.add_alarm_action(self._action)
        alarm.add_ok_action(self._action)
        self.alarms.append(alarm)
        self._arns.append(
            Stack.of(self).format_arn(
                service="cloudwatch",
                resource="alarm",
                resource_name=name,
                arn_format=ArnFormat.COLON_RESOURCE_NAME,
            )
        )


def metrics_namespace(scope: Construct) -> str:
    """The functions' metrics namespace: the stack's name, so that each stage's alarms count its own."""
    return Stack.of(scope).stack_name


def service_metric(scope: Construct, name: str, period: Duration) -> cloudwatch.Metric:
    """A count the functions emit (EMF, the stack's namespace and lambdas.config's service dimension)."""
    return cloudwatch.Metric(
        namespace=metrics_namespace(scope),
        metric_name=name,
        dimensions_map={"service": config.SERVICE_NAME},
        statistic=cloudwatch.Stats.SUM,
        period=period,
    )
