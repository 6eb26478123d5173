"""The stack the in-process benchmarks run against: the synthesized template on moto's server.

AWS is moto's server in a child process on loopback, so the handlers' AWS calls are real HTTP I/O as in
Lambda (moto in-process would hold the GIL for the "network" time and serialise the job threads).
"""

import copy
import json
import logging
import os
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import boto3

from lambdas.store import clients
from local_runtime.context import LambdaContext
from local_runtime.moto_server import MotoServer
from local_runtime.template import Provisioned, provision

EVENTS = Path(__file__).resolve().parent.parent / "tests" / "events"
API = "lambdas.handlers.api.handler"
WORKER = "lambdas.handlers.worker.handler"
# The usage plan's limits are raised so the front door never throttles a benchmark.
CONTEXT = {"apiRateLimit": 10_000, "apiBurstLimit": 5_000, "apiQuotaPerDay": 100_000_000}
QUIET = {
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_LOG_LEVEL": "CRITICAL",
    "POWERTOOLS_METRICS_DISABLED": "true",
}


@cache
def template() -> dict[str, Any]:
    """The local stack's template; synth's warnings (printed by the CDK's Node process) go nowhere."""
    from local_runtime.runtime import local_template

    with silenced_fds():
        return local_template(CONTEXT)


@contextmanager
def silenced_fds() -> Iterator[None]:
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 1)
        os.dup2(devnull.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def quiet() -> None:
    """No log lines or metric blobs: applied after every function environment, which sets INFO."""
    os.environ.update(QUIET)
    from lambdas.observability import logger

    logger.setLevel(logging.CRITICAL)


@contextmanager
def in_process_stack() -> Iterator[Provisioned]:
    """The synthesized stack provisioned in an in-process moto (no server, no network)."""
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1"
    )
    os.environ.pop("AWS_ENDPOINT_URL", None)
    with silenced_fds():
        synthesized = template()
    from moto import mock_aws

    with mock_aws():
        clients.reset()
        yield provision(synthesized)


@contextmanager
def in_process_moto(function: str = WORKER) -> Iterator[dict[str, str]]:
    """`function`'s environment in `in_process_stack`, for counting what the store writes rather than
    timing it."""
    with in_process_stack() as provisioned:
        yield provisioned.function_env(function)


@dataclass
class Stack:
    server: MotoServer
    provisioned: Provisioned

    def use(self, *handlers: str) -> None:
        """This process's environment as the functions with these handlers see it."""
        for handler in handlers:
            os.environ.update(self.provisioned.function_env(handler))
        os.environ["AWS_ENDPOINT_URL"] = self.server.url
        quiet()
        reset_handlers()

    def env(self, handler: str) -> dict[str, str]:
        return {**self.provisioned.function_env(handler), **self.server.environment(), **QUIET}

    @property
    def queue_url(self) -> str:
        return self.provisioned.outputs["QueueUrl"]

    def drain(self) -> None:
        """Empty the main queue by receiving and deleting (PurgeQueue is allowed once a minute)."""
        sqs = boto3.client("sqs")
        while messages := sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10).get(
            "Messages"
        ):
            entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)]
            sqs.delete_message_batch(QueueUrl=self.queue_url, Entries=entries)


@contextmanager
def running_stack() -> Iterator[Stack]:
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1"
    )
    server = MotoServer().start()
    try:
        os.environ["AWS_ENDPOINT_URL"] = server.url
        yield Stack(server, provision(template(), endpoint_url=server.url))
    finally:
        server.stop()


def reset_handlers() -> None:
    from lambdas.handlers import worker
    from lambdas.models import settings

    clients.reset()
    settings.reset()  # the api's services too (lambdas.handlers.rest.services)
    worker._worker.cache_clear()


def api_event(body: dict[str, Any]) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((EVENTS / "api_post_job.json").read_text())
    event["body"] = json.dumps(body)
    return event


def context(name: str) -> LambdaContext:
    return LambdaContext(function_name=name)


@dataclass
class CallLog:
    """Every AWS API call the process's botocore clients make, by `service.Operation`."""

    calls: Counter[str] = field(default_factory=Counter)
    params: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    _paused: threading.local = field(default_factory=threading.local)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Calls this thread makes meanwhile are not counted (a benchmark's own driving)."""
        self._paused.on = True
        try:
            yield
        finally:
            self._paused.on = False

    def hook(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        if getattr(self._paused, "on", False):
            return
        service = model.service_model.service_name
        self.calls[f"{service}.{model.name}"] += 1
        self.params.append((service, model.name, copy.deepcopy(params)))

    @property
    def total(self) -> int:
        return sum(self.calls.values())


@contextmanager
def counting_calls() -> Iterator[CallLog]:
    """Counts calls through `provide-client-params`, fired once per API call on every client created."""
    log = CallLog()
    registered: list[Any] = []
    original = boto3.session.Session.client

    def client(self: Any, *args: Any, **kwargs: Any) -> Any:
        made = original(self, *args, **kwargs)
        made.meta.events.register("provide-client-params", log.hook)
        registered.append(made)
        return made

    boto3.session.Session.client = client
    clients.reset()
    try:
        yield log
    finally:
        boto3.session.Session.client = original
        for made in registered:
            made.meta.events.unregister("provide-client-params", log.hook)
        clients.reset()
