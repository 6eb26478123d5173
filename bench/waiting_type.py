"""A job type that only waits, standing in for an HTTP call or an SES request.

Importing this module registers it: the local runtime imports it in every function process
(`extra_modules`), the in-process benchmarks through `bench.jobs`.
"""

import time

from pydantic import BaseModel

from lambdas.jobs import registry
from lambdas.jobs.base import JobContext, JobType

NAME = "bench_io"


class Wait(BaseModel):
    seconds: float


def _wait(payload: Wait, _context: JobContext) -> None:
    time.sleep(payload.seconds)


def install() -> None:
    if NAME not in registry.names():
        registry.register(JobType(NAME, Wait, _wait))


install()
