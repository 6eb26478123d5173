"""AWS calls per delivered endpoint of a webhook fan-out, and per plain job, counted by a botocore hook
(flow control's calls on the limits table apart: `limiter calls`); and the DynamoDB write units per
delivered endpoint (`write_units`), with a small and a 100 KB event.

The pipeline runs in-process: the api handler submits, and the worker handler is fed what the main queue
holds, batch by batch, as the event source mapping would, until the parent job is finished. Every call
the functions' clients make is counted (the event source mapping's own polling is not a function call;
docs/performance.md prices it separately). Endpoints are a loopback receiver that answers 204.
"""

import json
import math
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench import jobs
from bench.report import Figure
from bench.stack import API, WORKER, CallLog, Stack, api_event, context, counting_calls, reset_handlers
from bench.write_units import WriteUnits, metering
from lambdas import config

# (endpoints, KB of event data): the last is a large event, whose parent item is about 100 KB, just under
# the fan-out volume bound (endpoints x event bytes <= 10 MB).
FAN_OUTS = ((3, 0), (100, 0), (100, 95))
# Write units a delivery may cost, whatever the event's size: its claim (the child, under 2 KB: up to
# 2 units) and one transaction of the child, the counters item and the log line (2 x (2 + 1 + 1)).
UNITS_PER_DELIVERY = 10
# What the fan-out writes once, per KB of its parent item: its put and claim (one each), its `waiting`
# write (two for a small parent: a transaction with the counters' arming), the last child's transaction
# (two), and its reopen by a retry; plus the counters item: its put and its arming (twice, transactional).
PARENT_WRITES_PER_KB = 7
COUNTERS_WRITES = 5
# AWS calls per delivered endpoint, flow control's apart (issue 25's goals).
FAN_OUT_GOALS = {3: 4.0, 100: 2.0}
# Flow control's calls per delivery to a host under its concurrency limit: its start and its release.
LIMITER_PER_DELIVERY = 2
BATCH = 10  # the worker's batch, and so the threads that may race for a limit key's first use
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


def receiver() -> AbstractContextManager[str]:
    return serving(_Receiver)


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """A loopback HTTP server answering with `handler`, for as long as the block runs; yields its URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
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


def _counted_run(stack: Stack, bodies: list[dict[str, Any]]) -> tuple[Counter[str], WriteUnits]:
    log, meter = _counted_log(stack, bodies)
    return log.calls, meter


def _counted_log(stack: Stack, bodies: list[dict[str, Any]]) -> tuple[CallLog, WriteUnits]:
    stack.drain()
    reset_handlers()
    with metering() as meter, counting_calls() as log:
        job_ids = [jobs.submit(body) for body in bodies]
        _drive(stack, log, job_ids)
    return log, meter


def _apart(log: CallLog) -> tuple[Counter[str], Counter[str]]:
    """The calls of the pipeline, and those of flow control (on the limits table: each delivery's start
    and release under its host's limit), counted apart."""
    limits_table = os.environ[config.ENV_LIMITS_TABLE]
    limiter: Counter[str] = Counter(
        f"{service}.{operation}"
        for service, operation, params in log.params
        if params.get("TableName") == limits_table
    )
    return log.calls - limiter, limiter


def _fan_out_body(url: str, endpoints: int, data_kb: int = 0) -> dict[str, Any]:
    return {
        "type": "webhook_fanout",
        "payload": {
            "eventType": "invoice.paid",
            "data": {"invoice": "in_1", "amount": 4200, "notes": "n" * (data_kb * 1024)},
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


def _units_figure(name: str, meter: WriteUnits, body: dict[str, Any]) -> Figure:
    """Per delivered endpoint, against the goal that a delivery's own writes do not grow with the event:
    only the fan-out's few writes of its parent do, spread over its endpoints."""
    endpoints = len(body["payload"]["endpoints"])
    parent_kb = math.ceil(len(json.dumps(body["payload"])) / 1024) + 1
    limit = UNITS_PER_DELIVERY + (PARENT_WRITES_PER_KB * parent_kb + COUNTERS_WRITES) / endpoints
    detail = f"{meter.units} write units / {endpoints}; the largest item written {meter.largest_kb} KB"
    return Figure(name, meter.units / endpoints, round(limit, 2), detail, unit=" WCU")


def measure(stack: Stack) -> list[Figure]:
    stack.use(API, WORKER)
    os.environ[config.ENV_WEBHOOK_ALLOW_LOOPBACK] = "true"  # the receiver is on loopback, as in `make run`
    jobs.install()
    calls, _ = _counted_run(stack, [{"type": jobs.NAME, "payload": {"seconds": 0}}] * PLAIN_JOBS)
    figures = [_figure("AWS calls per plain job", calls, PLAIN_JOBS, 4)]
    _read_webhook_secret()
    with receiver() as url:
        for endpoints, data_kb in FAN_OUTS:
            _Receiver.deliveries = 0
            body = _fan_out_body(url, endpoints, data_kb)
            log, meter = _counted_log(stack, [body])
            assert _Receiver.deliveries == endpoints, f"{_Receiver.deliveries} of {endpoints} delivered"
            shape = f"{endpoints}, {data_kb} KB event" if data_kb else f"{endpoints}"
            calls, limiter = _apart(log)
            limit = FAN_OUT_GOALS[endpoints]
            figures.append(_figure(f"AWS calls per delivered endpoint ({shape})", calls, endpoints, limit))
            # a start and a release per delivery; the key's first use (the first fan-out) adds its PutItem
            # and one more try for each other thread of the batch that raced it
            limiter_limit = round(LIMITER_PER_DELIVERY + min(endpoints, BATCH) / endpoints, 2)
            figures.append(
                _figure(f"limiter calls per delivered endpoint ({shape})", limiter, endpoints, limiter_limit)
            )
            figures.append(_units_figure(f"write units per delivered endpoint ({shape})", meter, body))
    return figures
