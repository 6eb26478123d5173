"""Data access built from a function's settings, so the wiring is written once for every function."""

from lambdas.models.settings import JobsTableSettings
from lambdas.store.jobs import JobStore


def job_store(settings: JobsTableSettings) -> JobStore:
    return JobStore(settings.jobs_table, settings.status_shards, settings.finished_ttl_days)
