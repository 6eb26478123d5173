"""AWS calls per delivered endpoint of a webhook fan-out, and per plain job, counted by a botocore hook.

The pipeline runs in-process: the api handler submits, and the worker handler is fed what the main queue
holds, batch by batch, as the event source mapping would, until the parent job is finished. Every call
the functions' clients make is counted (the event source mapping's own polling is not a function call;
docs/performance.md prices it separately). Endpoints are a loopback receiver that answers 204.
"""

import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench import jobs
from bench.report import Figure
from bench.stack import API, WORKER, CallLog, Stack, api_event, context, counting_calls, reset_handlers
from lambdas import config

FAN_OUTS = (3, 100)
PLAIN_JOBS = 10
TIMEOUT_SECONDS = 120


class _Receiver(BaseHTTPRequestHandler):
    deliveries = 0

    def do_POST(self) -> None:
        _Receiver.deliveries += 1
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *_args: Any) -> None:
        pass


@contextmanager
def receiver() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _finished(job_ids: list[str]) -> bool:
    from lambdas.handlers.rest.services import services

    store = services().store
    return all(job is not None and job.status.finished for job in map(store.get, job_ids))


def _drive(stack: Stack, log: CallLog, job_ids: list[str]) -> None:
    """Feed the worker until the jobs are finished; the driver's own calls are not counted."""
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        with log.paused():
            records = jobs.receive(stack, 10, wait_seconds=1)
        if records:
            jobs.run_batch(records)
            continue
        with log.paused():
            if _finished(job_ids):
                return
    raise TimeoutError(f"jobs {job_ids[:3]}... did not finish within {TIMEOUT_SECONDS} s")


def _counted_run(stack: Stack, bodies: list[dict[str, Any]]) -> Counter[str]:
    stack.drain()
    reset_handlers()
    with counting_calls() as log:
        job_ids = [jobs.submit(body) for body in bodies]
        _drive(stack, log, job_ids)
    return log.calls


def _fan_out_body(url: str, endpoints: int) -> dict[str, Any]:
    return {
        "type": "webhook_fanout",
        "payload": {
            "eventType": "invoice.paid",
            "data": {"invoice": "in_1", "amount": 4200},
            "endpoints": [{"id": f"ep{i}", "url": f"{url}/hook/{i}"} for i in range(endpoints)],
        },
    }


def _read_webhook_secret() -> None:
    """The submitting client's `GET /webhook-secret`, before anything is counted: a client reads its
    secret (made on that first read) to configure its receivers before it sends them events."""
    from lambdas.handlers import api

    event = api_event({})
    event.update(httpMethod="GET", path="/webhook-secret", resource="/webhook-secret", body=None)
    event["requestContext"].update(httpMethod="GET", resourcePath="/webhook-secret")
    response = api.handler(event, context("api"))
    assert response["statusCode"] == 200, response


def _figure(name: str, calls: Counter[str], units: int, limit: float) -> Figure:
    by_operation = ", ".join(f"{op.split('.')[1]} {n}" for op, n in calls.most_common())
    detail = f"{sum(calls.values())} calls / {units}: {by_operation}"
    return Figure(name, sum(calls.values()) / units, limit, detail, unit=" calls")


def measure(stack: Stack) -> list[Figure]:
    stack.use(API, WORKER)
    os.environ[config.ENV_WEBHOOK_ALLOW_LOOPBACK] = "true"  # the receiver is on loopback, as in `make run`
    jobs.install()
    figures = [
        _figure(
            "AWS calls per plain job",
            _counted_run(stack, [{"type": jobs.NAME, "payload": {"seconds": 0}}] * PLAIN_JOBS),
            PLAIN_JOBS,
            4,
        )
    ]
    _read_webhook_secret()
    with receiver() as url:
        for endpoints in FAN_OUTS:
            _Receiver.deliveries = 0
            calls = _counted_run(stack, [_fan_out_body(url, endpoints)])
            assert _Receiver.deliveries == endpoints, f"{_Receiver.deliveries} of {endpoints} delivered"
            figures.append(_figure(f"AWS calls per delivered endpoint ({endpoints})", calls, endpoints, 5))
    return figures
