"""The offload stack: composes the constructs, exports what clients and tests need."""

from typing import Any

from aws_cdk import Annotations, CfnOutput, Stack
from constructs import Construct

from infra.api import JobsApi
from infra.bundling import function_code
from infra.dashboard import OperationsDashboard
from infra.functions import WORKER, Functions
from infra.job_secrets import JobSecrets
from infra.job_types import JobTypeCatalog
from infra.keys import ApiKeys
from infra.monitoring import Alarms, Alerts
from infra.queues import JobQueues
from infra.schedules import ScheduleTick
from infra.settings import Settings
from infra.storage import Storage
from infra.tables import JobTables
from infra.triggers import Triggers
from lambdas.config import AuthMode


class OffloadStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        settings = Settings.from_context(self.node)
        # The job types: imported and checked now, so a type that cannot run fails the synth.
        catalog = JobTypeCatalog.from_context(self.node)
        catalog.check_limited(settings.limit_overrides)
        catalog.check_retry_policies(settings.retry_overrides)
        groups = catalog.groups(WORKER.timeout_seconds, WORKER.memory_mb)
        for warning_id, message in settings.warnings().items():
            Annotations.of(self).add_warning_v2(warning_id, message)

        tables = JobTables(self, "Tables", deletion_protection=settings.deletion_protection)
        queues = JobQueues(self, "Queues", groups=groups)
        secrets = JobSecrets(
            self, "JobSecrets", declared=catalog.secrets, referenced=catalog.referenced_secrets
        )
        storage = Storage(self, "Storage")
        alerts = Alerts(self, "Alerts", alert_email=settings.alert_email)
        # With IAM callers there are no API keys: a caller's role is its identity.
        keys = ApiKeys(self, "ApiKeys", settings=settings) if settings.auth == AuthMode.API_KEY else None
        functions = Functions(
            self,
            "Functions",
            settings=settings,
            code=function_code(catalog.packages),
            tables=tables,
            queues=queues,
            storage=storage,
            alerts=alerts,
            keys=keys,
            catalog=catalog,
            groups=groups,
            secrets=secrets,
        )
        Triggers(
            self,
            "Triggers",
            settings=settings,
            queues=queues,
            workers={suffix: worker.target for suffix, worker in functions.workers.items()},
            dead_letter=functions.dead_letter.function,
            recovery=functions.recovery.function,
        )
        tick = ScheduleTick(self, "Schedules", function=functions.schedules.function)
        api = JobsApi(self, "Api", handler=functions.api.target, settings=settings, keys=keys)
        alarms = Alarms(
            self,
            "Alarms",
            alerts=alerts,
            queues=queues,
            functions=functions.watched,
            api_stage=api.rest_api.deployment_stage,
            settings=settings,
            schedule_dead_letters=tick.dead_letter,
        )
        dashboard = OperationsDashboard(
            self,
            "Dashboard",
            alarms=alarms.alarms,
            queues=queues,
            functions=functions.by_entry_point,
            api_stage=api.rest_api.deployment_stage,
        )

        self._outputs(api, keys, queues, tables, storage, alerts, dashboard)

    def _outputs(
        self,
        api: JobsApi,
        keys: ApiKeys | None,
        queues: JobQueues,
        tables: JobTables,
        storage: Storage,
        alerts: Alerts,
        dashboard: OperationsDashboard,
    ) -> None:
        for output_id, value in {
            "ApiUrl": api.rest_api.url,
            **(keys.outputs() if keys else {}),
            "QueueUrl": queues.main.queue_url,
            "DeadLetterQueueUrl": queues.dead_letter.queue_url,
            "JobsTableName": tables.jobs.table_name,
            "DeliveriesTableName": tables.deliveries.table_name,
            "WebhookSecretsTableName": tables.webhook_secrets.table_name,
            "LimitsTableName": tables.limits.table_name,
            "UploadsBucketName": storage.uploads.bucket_name,
            "AlertsTopicArn": alerts.topic.topic_arn,
            # The stack-wide secret of stacks deployed before per-client secrets: with context
            # webhookSecretsStartShared it is the first secret of the clients it names (their receivers hold it).
            "WebhookSigningSecretArn": storage.webhook_secret.secret_arn,
            "DashboardUrl": dashboard.url,
            # Each worker group's queues, by the group's suffix (the shared worker's are those above).
            **{
                f"{name}{suffix}": queue.queue_url
                for suffix, pair in queues.pairs.items()
                if suffix
                for name, queue in (("QueueUrl", pair.queue), ("DeadLetterQueueUrl", pair.dead_letter))
            },
        }.items():
            CfnOutput(self, output_id, value=value)
