"""Contexts for calling a job type directly, built the way the worker and the API build them.

They read the function's settings from the environment at each call (the stack's, as the `stack` fixture
sets it, plus whatever a test changed), and act on the moto resources through the real capabilities.
"""

from collections.abc import Mapping

from lambdas.jobs.base import JobContext, SubmissionContext
from lambdas.lifecycle.attempt import capabilities
from lambdas.models.job import Job, JobStatus
from lambdas.models.settings import ApiSettings, WorkerSettings
from lambdas.store.factory import job_store
from lambdas.store.queue import JobQueue


def job_context(
    job_id: str = "job-1",
    job_type: str = "test",
    *,
    attempt: int = 1,
    max_attempts: int = 5,
    parent_id: str | None = None,
    remaining_ms: int = 60_000,
    owner: str = "",
) -> JobContext:
    worker = WorkerSettings.load()
    services = capabilities.WorkerCapabilities(worker, job_store(worker), JobQueue(worker.queue_url))
    # A claimed job as the worker holds it (attemptTotal 0: not its first run, as it cannot know).
    job = Job(
        job_id=job_id,
        job_type=job_type,
        status=JobStatus.PROCESSING,
        payload={},
        attempts=attempt,
        max_attempts=max_attempts,
        created_at="",
        updated_at="",
        due_at=0,
        parent_id=parent_id,
        owner=owner,
    )
    return services.context(job, lambda: remaining_ms)


def submission_context(environ: Mapping[str, str] | None = None, caller: str = "") -> SubmissionContext:
    """The API's for `caller`, from `environ` (a unit test's: nothing is called until a check uses the
    bucket)."""
    return capabilities.submission_context_for(ApiSettings.load(environ), caller)
