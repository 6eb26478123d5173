"""Each function's environment, declared once and validated at cold start.

A missing resource name is an error when the function starts, never a silent default.
"""

import os
from collections.abc import Mapping
from typing import Self

from pydantic import BaseModel, ConfigDict, Field

from lambdas import config


class _Environment(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None) -> Self:
        return cls.model_validate(dict(os.environ if environ is None else environ))


class JobsTableSettings(_Environment):
    jobs_table: str = Field(alias=config.ENV_JOBS_TABLE, min_length=1)
    status_shards: int = Field(alias=config.ENV_STATUS_SHARDS, default=config.STATUS_SHARDS, ge=1, le=64)
    finished_ttl_days: int = Field(alias=config.ENV_FINISHED_TTL_DAYS, default=config.FINISHED_TTL_DAYS, ge=1)


class ApiSettings(JobsTableSettings):
    queue_url: str = Field(alias=config.ENV_QUEUE_URL, min_length=1)


class WorkerSettings(JobsTableSettings):
    queue_url: str = Field(alias=config.ENV_QUEUE_URL, min_length=1)
    dlq_url: str = Field(alias=config.ENV_DLQ_URL, min_length=1)
    backoff_base_seconds: float = Field(
        alias=config.ENV_BACKOFF_BASE_SECONDS, default=config.BACKOFF_BASE_SECONDS, gt=0
    )
    backoff_cap_seconds: float = Field(
        alias=config.ENV_BACKOFF_CAP_SECONDS, default=config.BACKOFF_CAP_SECONDS, gt=0
    )
    lease_seconds: int = Field(alias=config.ENV_LEASE_SECONDS, default=config.LEASE_SECONDS, gt=0)
    concurrency: int = Field(
        alias=config.ENV_WORKER_CONCURRENCY, default=config.WORKER_CONCURRENCY, ge=1, le=100
    )


class DeadLetterSettings(JobsTableSettings):
    alerts_topic_arn: str = Field(alias=config.ENV_ALERTS_TOPIC_ARN, min_length=1)


class RecoverySettings(JobsTableSettings):
    queue_url: str = Field(alias=config.ENV_QUEUE_URL, min_length=1)
    grace_seconds: int = Field(
        alias=config.ENV_RECOVERY_GRACE_SECONDS, default=config.RECOVERY_GRACE_SECONDS, ge=0
    )
