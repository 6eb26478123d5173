"""POST /jobs through the api handler versus a bare function making the same AWS calls.

The floor replays the very calls the handler made (captured by a botocore hook), with a fresh job id,
so it writes an item of the same size and shape and sends the same message. The two alternate request
by request against one queue, drained for both at the same points.
"""

import json
import time
import uuid
from typing import Any

from bench import jobs
from bench.report import Figure, ratio_figure
from bench.stack import API, Stack, counting_calls, reset_handlers
from lambdas.store import clients

REQUESTS = 200
DRAIN_EVERY = 50
_BODY = {"type": jobs.NAME, "payload": {"seconds": 0}}


def captured_calls(body: dict[str, Any]) -> tuple[str, list[tuple[str, str, dict[str, Any]]]]:
    """The AWS calls one POST /jobs with this body makes, and the job id they carry."""
    with counting_calls() as log:
        job_id = jobs.submit(body)
    return job_id, log.params


def _replay(calls: list[tuple[str, str, dict[str, Any]]], old_id: str) -> None:
    new_id = str(uuid.uuid4())
    for service, operation, params in calls:
        fresh = json.loads(json.dumps(params).replace(old_id, new_id))
        clients.client(service)._make_api_call(operation, fresh)


def measure(stack: Stack) -> list[Figure]:
    stack.use(API)
    jobs.install()
    reset_handlers()
    job_id, calls = captured_calls(_BODY)
    operations = "+".join(operation for _, operation, _ in calls)
    _replay(calls, job_id)  # the floor's clients exist before timing, as the handler's do
    through_api, floor = [], []
    for i in range(REQUESTS):
        if i % DRAIN_EVERY == 0:
            stack.drain()
        started = time.perf_counter()
        jobs.submit(_BODY)
        through_api.append(time.perf_counter() - started)
        started = time.perf_counter()
        _replay(calls, job_id)
        floor.append(time.perf_counter() - started)
    return [
        ratio_figure("POST /jobs vs the same calls bare", ("handler", through_api), (operations, floor), 1.5)
    ]
