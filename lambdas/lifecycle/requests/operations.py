"""The caller's operations on jobs, as the API calls them: reads (`reads`), retry and cancel (`retry_cancel`),
bulk actions (`bulk`). Every one is scoped by the caller; see each module for its rules."""

from lambdas.lifecycle.ops_jobs.bulk import start_bulk
from lambdas.lifecycle.requests.reads import find_job, list_children, list_deliveries, list_jobs
from lambdas.lifecycle.requests.retry_cancel import Deferred, allowed_actions, cancel_job, retry_job

__all__ = [
    "Deferred",
    "allowed_actions",
    "cancel_job",
    "find_job",
    "list_children",
    "list_deliveries",
    "list_jobs",
    "retry_job",
    "start_bulk",
]
