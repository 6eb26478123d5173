"""Domain exceptions raised by the store; the only place that speaks DynamoDB/SQS error codes."""

from lambdas.models.job import Job


class StoreError(Exception):
    pass


class JobExistsError(StoreError):
    """A job with this id already exists (an idempotent replay, or a duplicate child)."""

    def __init__(self, existing: Job) -> None:
        super().__init__(existing.job_id)
        self.existing = existing


class StaleAttemptError(StoreError):
    """The write belongs to an attempt that no longer owns the job (its lease expired, a newer one runs)."""


class NotClaimableError(StoreError):
    """The job cannot be claimed now. `job` is its current state, or None when no such job exists."""

    def __init__(self, job_id: str, job: Job | None) -> None:
        super().__init__(job_id)
        self.job = job
