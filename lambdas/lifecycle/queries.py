"""Reading jobs back: what `GET /jobs/{jobId}` asks of the lifecycle."""

from lambdas.lifecycle.errors import JobNotFoundError
from lambdas.models.job import Job
from lambdas.store.jobs import JobStore


def find_job(store: JobStore, job_id: str) -> Job:
    job = store.get(job_id)
    if job is None:
        raise JobNotFoundError(f"no job {job_id}")
    return job
