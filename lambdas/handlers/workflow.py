"""The `workflow` function: a worker group's durable function, which runs its workflow types.

Its executions are started by the group's worker (`lambdas/lifecycle/workflows/start.py`), one per job; the SDK's
`durable_execution` replays `run(payload, flow)` on each invocation from its checkpoints.
"""

from functools import cache
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution

from lambdas.jobs.packages import register_job_types
from lambdas.lifecycle.attempt.capabilities import WorkerCapabilities
from lambdas.lifecycle.workflows.execution import run_workflow
from lambdas.lifecycle.workflows.runtime import StoreRuntime
from lambdas.models import settings
from lambdas.store.factory import job_store
from lambdas.store.queue import JobQueue


@cache
def _runtime() -> StoreRuntime:
    worker = settings.worker()
    register_job_types(worker.job_packages)
    store = job_store(worker)
    queue = JobQueue(worker.queue_url, worker.job_queue_urls, worker.high_queue_urls)
    capabilities = WorkerCapabilities(worker, store, queue)
    return StoreRuntime(worker, store.workflows(), capabilities, JobQueue(worker.dlq_url))


@durable_execution
def handler(event: dict[str, Any], context: DurableContext) -> Any:
    return run_workflow(event, context, _runtime())
