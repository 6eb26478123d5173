"""The worker's side of a workflow job: hand the claimed job to its durable execution and start it.

The execution starts by an asynchronous invoke of the worker group's durable function (its alias),
named after the job (`execution_name`) with the job id as its only input: Lambda answers a second
invoke with that name and payload with the existing execution, never a second one, so an SQS
redelivery or a recovered job cannot run a workflow twice.

Order: the hand-over is written first (the execution's writes are fenced on it), then the invoke, then
the job's `dueAt` moves to the execution's deadline. When the invoke fails, the job keeps its attempt's
lease: the recovery sweep requeues it when the lease expires and the next claim invokes again.
"""

import json
from typing import Any, Protocol

from lambdas import config
from lambdas.models.job import Job
from lambdas.store import clients
from lambdas.store.workflows import WorkflowStore


def execution_name(job: Job) -> str:
    """The durable execution a workflow job runs in: one per job, and a new one after a caller's retry
    (the same name would find the ended one). A job id and the retry's time fit Lambda's name rule."""
    return job.job_id if not job.reopened_at else f"{job.job_id}-{job.reopened_at}"


def execution_input(job: Job) -> str:
    return json.dumps({"jobId": job.job_id})


class Starter(Protocol):
    def start(self, name: str, payload: str) -> str:
        """Start (or find) the execution `name` with `payload`; its ARN."""
        ...


class LambdaStarter:
    """Starts executions of the durable function alias `function` (Invoke, InvocationType Event)."""

    def __init__(self, function: str) -> None:
        self._function = function

    def start(self, name: str, payload: str) -> str:
        response: dict[str, Any] = clients.client("lambda").invoke(
            FunctionName=self._function,
            InvocationType="Event",
            DurableExecutionName=name,
            Payload=payload.encode(),
        )
        return str(response.get("DurableExecutionArn", ""))


def start_workflow(store: WorkflowStore, starter: Starter, job: Job) -> None:
    """StaleAttemptError when the attempt lost the job before its hand-over."""
    name = execution_name(job)
    store.hand_over(job, name)
    arn = starter.start(name, execution_input(job))
    store.started(job, name, arn, store.now() + config.WORKFLOW_EXECUTION_TIMEOUT_SECONDS)
