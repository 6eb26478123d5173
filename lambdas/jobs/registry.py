"""The job-type registry: the API validates against it, the worker dispatches through it."""

from collections.abc import Iterator
from typing import Any

from lambdas.jobs.base import JobType

_types: dict[str, JobType[Any]] = {}


class UnknownJobTypeError(LookupError):
    pass


def register(job_type: JobType[Any]) -> JobType[Any]:
    if job_type.name in _types and _types[job_type.name] is not job_type:
        raise ValueError(f"job type {job_type.name!r} is already registered")
    _types[job_type.name] = job_type
    return job_type


def unregister(name: str) -> None:
    _types.pop(name, None)


def get(name: str) -> JobType[Any]:
    try:
        return _types[name]
    except KeyError:
        raise UnknownJobTypeError(name) from None


def public_types() -> Iterator[JobType[Any]]:
    return (t for t in _types.values() if t.public)


def names() -> list[str]:
    return sorted(_types)
