"""Reading jobs back: `GET /jobs/{jobId}` asks `find_job`, scoped by the caller (see `operations`)."""

from lambdas.lifecycle.reads import find_job

__all__ = ["find_job"]
