"""Data access built from a function's settings, so the wiring is written once for every function."""

from typing import TYPE_CHECKING

from lambdas.store.jobs import JobStore

if TYPE_CHECKING:  # the settings load with a function's first call, not with this module
    from lambdas.models.settings import JobsTableSettings


def job_store(settings: "JobsTableSettings") -> JobStore:
    return JobStore(settings.jobs_table, settings.status_shards, settings.finished_ttl_days)
