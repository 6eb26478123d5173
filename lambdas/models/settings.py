"""Each function's environment, declared once and validated at cold start.

One model per function (`ApiSettings`, `WorkerSettings`, `DeadLetterSettings`, `RecoverySettings`),
holding everything that function reads, the settings of the job types it runs or checks included. The
stack builds each function's environment from its model's aliases (the `ENV_*` names of
`lambdas.config`), so a name the code reads is a name the stack sets.

A handler loads its model on its first invocation through the cached loaders below (`api()`,
`worker()`, ...); nothing reads the environment at import time. A missing resource name is an error
when the function starts, never a silent default. Tests call `reset()` between cases.
"""

import functools
import json
import os
from collections.abc import Callable, Mapping
from typing import Any, Protocol, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from lambdas import config
from lambdas.models.iam import IamCallers


class Environment(BaseModel):
    """The base of every function's settings: read from a mapping of environment variables."""

    # defer_build: a function validates one of these models, so the others' validators are never built.
    model_config = ConfigDict(
        frozen=True, populate_by_name=True, extra="ignore", validate_default=True, defer_build=True
    )

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None) -> Self:
        return cls.model_validate(dict(os.environ if environ is None else environ))


class JobsTableSettings(Environment):
    jobs_table: str = Field(alias=config.ENV_JOBS_TABLE, min_length=1)
    status_shards: int = Field(
        alias=config.ENV_STATUS_SHARDS, default=config.STATUS_SHARDS, ge=1, le=config.MAX_STATUS_SHARDS
    )
    finished_ttl_days: int = Field(alias=config.ENV_FINISHED_TTL_DAYS, default=config.FINISHED_TTL_DAYS, ge=1)


class WebhookPolicySettings(Environment):
    """Where webhooks may go: the API checks fan-outs at submission, the worker every delivery."""

    allow_http_webhooks: bool = Field(alias=config.ENV_ALLOW_HTTP_WEBHOOKS, default=False)
    # Local runtime and tests only: 127.0.0.0/8 and ::1 become reachable.
    allow_loopback_webhooks: bool = Field(alias=config.ENV_WEBHOOK_ALLOW_LOOPBACK, default=False)


class UploadsSettings(Environment):
    """The uploads bucket: the API presigns and checks uploads, the worker reads them and writes results."""

    uploads_bucket: str = Field(alias=config.ENV_UPLOADS_BUCKET, min_length=1)
    max_file_bytes: int = Field(alias=config.ENV_MAX_FILE_BYTES, default=config.MAX_FILE_BYTES, gt=0)


class WebhookSecretsSettings(Environment):
    """Where each client's webhook signing secrets live: the API hands them out and rotates them, the
    worker signs with them. `webhook_secrets_start_shared` (an upgraded stack): a client's first secret
    is the stack-wide one its receivers already hold, until the operator rotates it."""

    webhook_secrets_table: str = Field(alias=config.ENV_WEBHOOK_SECRETS_TABLE, min_length=1)
    webhook_secret_arn: str = Field(alias=config.ENV_WEBHOOK_SECRET_ARN, min_length=1)
    webhook_secrets_start_shared: bool = Field(alias=config.ENV_WEBHOOK_SECRETS_START_SHARED, default=False)


class LimitsSettings(Environment):
    """Flow control: where limits are held, and the stack's overrides of each job type's limit (the
    worker applies them, GET /limits shows them)."""

    limits_table: str = Field(alias=config.ENV_LIMITS_TABLE, min_length=1)
    job_limits: dict[str, dict[str, Any]] = Field(alias=config.ENV_JOB_LIMITS, default_factory=dict)

    @field_validator("job_limits", mode="before")
    @classmethod
    def _parse_job_limits(cls, value: Any) -> Any:  # its own name: a subclass's `_parse` would hide it
        from lambdas.models.limits import parse_overrides

        return parse_overrides(json.loads(value) if isinstance(value, str) and value else value)


class HorizonSettings(Environment):
    """How far ahead a job with a start time is handed to SQS (nearer: `pending`; further: `scheduled`)."""

    schedule_horizon_seconds: int = Field(
        alias=config.ENV_SCHEDULE_HORIZON_SECONDS,
        default=config.SCHEDULE_HORIZON_SECONDS,
        ge=1,
        le=config.MAX_DELAY_SECONDS,
    )


class ScheduleSettings(HorizonSettings):
    """The recurring schedules' table, and how many schedules one client may keep."""

    schedules_table: str = Field(alias=config.ENV_SCHEDULES_TABLE, min_length=1)
    max_schedules_per_client: int = Field(
        alias=config.ENV_MAX_SCHEDULES_PER_CLIENT, default=config.MAX_SCHEDULES_PER_CLIENT, ge=1
    )


class JobTypesSettings(Environment):
    """The job types a function knows beyond the built-in ones (lambdas/jobs/packages.py), where each
    type's jobs are queued when not on the shared queue, and, in a worker, its types' settings and
    secrets (infra/job_types.py writes them)."""

    job_packages: tuple[str, ...] = Field(alias=config.ENV_JOB_PACKAGES, default=())
    job_queue_urls: dict[str, str] = Field(alias=config.ENV_JOB_QUEUE_URLS, default_factory=dict)
    job_settings: dict[str, dict[str, Any]] = Field(alias=config.ENV_JOB_SETTINGS, default_factory=dict)
    job_secrets: dict[str, str] = Field(alias=config.ENV_JOB_SECRETS, default_factory=dict)

    @field_validator("job_packages", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        if isinstance(value, str):  # "crm_jobs,billing_jobs" in the environment
            return tuple(part for part in value.replace(" ", "").split(",") if part)
        return value

    @field_validator("job_queue_urls", "job_settings", "job_secrets", mode="before")
    @classmethod
    def _json(cls, value: Any) -> Any:
        return json.loads(value) if isinstance(value, str) else value


class ApiSettings(
    JobsTableSettings,
    WebhookPolicySettings,
    UploadsSettings,
    WebhookSecretsSettings,
    LimitsSettings,
    ScheduleSettings,
    JobTypesSettings,
):
    queue_url: str = Field(alias=config.ENV_QUEUE_URL, min_length=1)
    # GET /jobs/{jobId}/deliveries reads the webhook delivery log.
    deliveries_table: str = Field(alias=config.ENV_DELIVERIES_TABLE, min_length=1)
    # Who the callers are, one of the two (CDK context `auth`): with API keys, the key id API Gateway
    # reports for the operator key (never its value), the caller that sees every job; with IAM, the
    # roles of the clients and operators.
    operator_key_id: str | None = Field(alias=config.ENV_OPERATOR_KEY_ID, default=None, min_length=1)
    iam_callers: IamCallers | None = Field(alias=config.ENV_IAM_CALLERS, default=None)
    dlq_url: str = Field(alias=config.ENV_DLQ_URL, min_length=1)  # GET /stats reads its depth

    @field_validator("iam_callers", mode="before")
    @classmethod
    def _parse(cls, value: Any) -> Any:
        return IamCallers.model_validate_json(value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_way_in(self) -> Self:
        if (self.operator_key_id is None) == (self.iam_callers is None):
            raise ValueError(f"set one of {config.ENV_OPERATOR_KEY_ID} and {config.ENV_IAM_CALLERS}")
        return self


class WorkerSettings(
    JobsTableSettings,
    WebhookPolicySettings,
    UploadsSettings,
    WebhookSecretsSettings,
    LimitsSettings,
    JobTypesSettings,
):
    queue_url: str = Field(alias=config.ENV_QUEUE_URL, min_length=1)
    dlq_url: str = Field(alias=config.ENV_DLQ_URL, min_length=1)
    backoff_base_seconds: float = Field(
        alias=config.ENV_BACKOFF_BASE_SECONDS,
        default=config.BACKOFF_BASE_SECONDS,
        ge=config.MIN_BACKOFF_SECONDS,
    )
    backoff_cap_seconds: float = Field(
        alias=config.ENV_BACKOFF_CAP_SECONDS,
        default=config.BACKOFF_CAP_SECONDS,
        ge=config.MIN_BACKOFF_SECONDS,
        le=config.SQS_MAX_VISIBILITY_SECONDS,
    )
    lease_seconds: int = Field(alias=config.ENV_LEASE_SECONDS, default=config.LEASE_SECONDS, gt=0)
    limit_max_wait_seconds: int = Field(
        alias=config.ENV_LIMIT_MAX_WAIT_SECONDS, default=config.LIMIT_MAX_WAIT_SECONDS, gt=0
    )
    concurrency: int = Field(
        alias=config.ENV_WORKER_CONCURRENCY, default=config.WORKER_CONCURRENCY, ge=1, le=100
    )
    # Job types: webhook deliveries log each attempt and sign with their client's secrets; email goes
    # out as the stack's sender only (a payload cannot choose it); process_file's thumbnail sizes.
    deliveries_table: str = Field(alias=config.ENV_DELIVERIES_TABLE, min_length=1)
    sender_email: str = Field(alias=config.ENV_SENDER_EMAIL, min_length=3)
    thumbnail_sizes: tuple[int, ...] = Field(alias=config.ENV_THUMBNAIL_SIZES, default=config.THUMBNAIL_SIZES)
    # What Lambda gives the function; process_file sizes its image decoding by it.
    memory_mb: int = Field(
        alias=config.ENV_FUNCTION_MEMORY_MB, default=config.WORKER_MEMORY_MB, gt=config.DECODE_RESERVED_MB
    )

    @field_validator("thumbnail_sizes", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):  # "128,512" in the environment
            return tuple(int(part) for part in value.replace(" ", "").split(",") if part)
        return value

    @field_validator("thumbnail_sizes")
    @classmethod
    def _sensible(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if not value or not all(thumbnail_size_allowed(size) for size in value):
            raise ValueError(THUMBNAIL_SIZES_RULE)
        return tuple(sorted(set(value), reverse=True))


THUMBNAIL_SIZES_RULE = (
    f"thumbnail sizes must be {config.MIN_THUMBNAIL_PIXELS}..{config.MAX_THUMBNAIL_PIXELS} pixels"
)


def thumbnail_size_allowed(size: int) -> bool:
    return config.MIN_THUMBNAIL_PIXELS <= size <= config.MAX_THUMBNAIL_PIXELS


class DeadLetterSettings(JobsTableSettings):
    alerts_topic_arn: str = Field(alias=config.ENV_ALERTS_TOPIC_ARN, min_length=1)


class RecoverySettings(JobsTableSettings, HorizonSettings, JobTypesSettings):
    queue_url: str = Field(alias=config.ENV_QUEUE_URL, min_length=1)
    grace_seconds: int = Field(
        alias=config.ENV_RECOVERY_GRACE_SECONDS, default=config.RECOVERY_GRACE_SECONDS, ge=0
    )


class _Clearable(Protocol):
    def cache_clear(self) -> None: ...


E = TypeVar("E", bound=Environment)

_caches: list[_Clearable] = []


def cached(model: type[E]) -> Callable[[], E]:
    """A loader that reads `model` from the environment on its first call and keeps it until `reset()`."""

    @functools.cache
    def load() -> E:
        return model.load()

    _caches.append(load)
    return load


def forget_on_reset(cache: _Clearable) -> None:
    """Have `reset()` also clear another per-process cache (anything with `cache_clear`), once."""
    if cache not in _caches:
        _caches.append(cache)


def reset() -> None:
    """Forget every loaded setting and registered cache (tests call it between cases)."""
    for cache in _caches:
        cache.cache_clear()


api = cached(ApiSettings)
worker = cached(WorkerSettings)
dead_letter = cached(DeadLetterSettings)
recovery = cached(RecoverySettings)


class FiringSettings(JobsTableSettings, ScheduleSettings, JobTypesSettings):
    """The `schedules` function: EventBridge Scheduler's target, which creates one job per firing."""

    queue_url: str = Field(alias=config.ENV_QUEUE_URL, min_length=1)


firing = cached(FiringSettings)
