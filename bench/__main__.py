"""Benchmarks, printed as figures and as ratios against a baseline measured in the same run.

    make bench          (python -m bench)

1. Batch concurrency: a worker batch of ten jobs that each wait 200 ms on I/O, processed with the
   configured concurrency versus one at a time (WORKER_CONCURRENCY=1, the baseline). Target: about
   200 ms for the batch, not 2 s.
2. Submit latency: POST /jobs through the api handler (conditional PutItem + SendMessage) compared with
   the same PutItem + SendMessage issued directly (the floor).

AWS is moto's server in a child process on loopback, so the handlers' AWS calls are real HTTP I/O, as in
Lambda (moto in-process would hold the GIL for the "network" time and serialise the threads).
"""

import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import boto3
from pydantic import BaseModel

from lambdas import config
from lambdas.jobs import registry
from lambdas.jobs.base import JobContext, JobType
from local_runtime.context import LambdaContext

IO_WAIT_SECONDS = 0.2
BATCH = 10
REPEATS = 5
SUBMITS = 200


class _Wait(BaseModel):
    seconds: float


def _io_bound(payload: _Wait, _context: JobContext) -> None:
    time.sleep(payload.seconds)  # stands in for an HTTP call or an SES request


def _reset() -> None:
    from lambdas.handlers import api, worker
    from lambdas.models import settings
    from lambdas.store import clients

    clients.reset()
    settings.reset()
    api._services.cache_clear()
    worker._worker.cache_clear()


def _batch(queue_url: str, wait: float) -> list[dict[str, Any]]:
    from lambdas.handlers import api

    sqs = boto3.client("sqs")
    for _ in range(BATCH):
        event = _api_event({"type": "bench_io", "payload": {"seconds": wait}})
        assert api.handler(event, LambdaContext(function_name="api"))["statusCode"] == 202
    records: list[dict[str, Any]] = []
    while len(records) < BATCH:
        for m in sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", []):
            records.append(
                {"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"]}
            )
    return records


def _time_batches(queue_url: str, concurrency: int, wait: float) -> float:
    """Median seconds for the worker to process one batch of BATCH jobs."""
    from lambdas.handlers import worker

    os.environ[config.ENV_WORKER_CONCURRENCY] = str(concurrency)
    _reset()
    timings = []
    for _ in range(REPEATS):
        records = _batch(queue_url, wait)
        started = time.perf_counter()
        response = worker.handler({"Records": records}, LambdaContext(function_name="worker"))
        timings.append(time.perf_counter() - started)
        assert response == {"batchItemFailures": []}, response
    return statistics.median(timings)


def _api_event(body: dict[str, Any]) -> dict[str, Any]:
    event = json.loads((_EVENTS / "api_post_job.json").read_text())
    event["body"] = json.dumps(body)
    return dict(event)


def _submit_latencies() -> tuple[list[float], list[float]]:
    from lambdas.handlers import api

    _reset()
    through_api = []
    for _ in range(SUBMITS):
        event = _api_event({"type": "bench_io", "payload": {"seconds": 0}})
        started = time.perf_counter()
        api.handler(event, LambdaContext(function_name="api"))
        through_api.append(time.perf_counter() - started)
    ddb, sqs = boto3.client("dynamodb"), boto3.client("sqs")
    table, queue = os.environ[config.ENV_JOBS_TABLE], os.environ[config.ENV_QUEUE_URL]
    floor = []
    for i in range(SUBMITS):
        started = time.perf_counter()
        ddb.put_item(
            TableName=table,
            Item={"jobId": {"S": f"floor-{i}"}, "status": {"S": "pending"}},
            ConditionExpression="attribute_not_exists(jobId)",
        )
        sqs.send_message(QueueUrl=queue, MessageBody=json.dumps({"jobId": f"floor-{i}"}))
        floor.append(time.perf_counter() - started)
    return through_api, floor


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:7.1f} ms"


def main() -> None:
    from infra.synth import synthesize
    from local_runtime.moto_server import MotoServer
    from local_runtime.template import provision

    os.environ.update(
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_DEFAULT_REGION="us-east-1",
        POWERTOOLS_TRACE_DISABLED="true",
        POWERTOOLS_LOG_LEVEL="ERROR",
        POWERTOOLS_METRICS_DISABLED="true",
    )
    template = synthesize()
    registry.register(JobType("bench_io", _Wait, _io_bound))
    server = MotoServer().start()
    os.environ["AWS_ENDPOINT_URL"] = server.url
    try:
        _run(provision(template, endpoint_url=server.url))
    finally:
        server.stop()


def _run(provisioned: Any) -> None:
    if True:
        for handler in ("lambdas.handlers.api.handler", "lambdas.handlers.worker.handler"):
            os.environ.update(provisioned.function_env(handler))
        queue_url = provisioned.outputs["QueueUrl"]

        threads = config.WORKER_CONCURRENCY
        rows = {
            (mode, wait): _time_batches(queue_url, n, wait)
            for mode, n in (("one at a time", 1), (f"{threads} threads", threads))
            for wait in (0.0, IO_WAIT_SECONDS)
        }
        print(f"batch of {BATCH} jobs ({REPEATS} runs, median); AWS calls go to moto's server on loopback")
        for mode in ("one at a time", f"{threads} threads"):
            idle, busy = rows[(mode, 0.0)], rows[(mode, IO_WAIT_SECONDS)]
            print(
                f"  {mode:>14}: {_ms(busy)} with {IO_WAIT_SECONDS * 1000:.0f} ms I/O per job, "
                f"{_ms(idle)} with none -> {_ms(busy - idle)} spent waiting on job I/O"
            )
        sequential_wait = rows[("one at a time", IO_WAIT_SECONDS)] - rows[("one at a time", 0.0)]
        concurrent_wait = rows[(f"{threads} threads", IO_WAIT_SECONDS)] - rows[(f"{threads} threads", 0.0)]
        print(f"  job I/O time, concurrent vs one at a time: {concurrent_wait / sequential_wait:.2f}x")
        print(
            f"  target: ~{IO_WAIT_SECONDS * 1000:.0f} ms of I/O time per batch, not {BATCH * IO_WAIT_SECONDS:.0f} s"
        )

        through_api, floor = _submit_latencies()
        q = statistics.quantiles
        print(f"\nsubmit latency, {SUBMITS} requests (p50 / p95):")
        print(f"  PutItem + SendMessage alone (floor): {_ms(q(floor, n=20)[9])} / {_ms(q(floor, n=20)[18])}")
        print(
            f"  POST /jobs through the api handler:  {_ms(q(through_api, n=20)[9])} / {_ms(q(through_api, n=20)[18])}"
        )
        print(f"  handler overhead over the floor (p50): {q(through_api, n=20)[9] / q(floor, n=20)[9]:.2f}x")


_EVENTS = Path(__file__).resolve().parent.parent / "tests" / "events"

if __name__ == "__main__":
    main()
