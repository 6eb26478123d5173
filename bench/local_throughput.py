"""The local runtime's throughput against moto's own floor, on the same server in the same run.

Runtime: jobs that do nothing (`bench_io` waiting 0 s) submitted over HTTP to the front door by
THREADS client threads without pause for SUBMIT_SECONDS; the figure is the rate at which jobs reach
`done` (each job's `updatedAt` as the worker wrote it) from SETTLE_SECONDS after the first submission
until the last one, so the pipeline is full while it is counted. SETTLE_SECONDS is the worker
mapping's default batching window: until it has passed, batches still wait for their window to close.
Floor: FLOOR_PAIRS of PutItem (an item copied from a job the runtime wrote, under a fresh id) +
SendMessage from as many threads, into a table and a fresh queue of their own on the same moto
server, so the runtime's pollers never see them. The stack's defaults apply, except the usage plan's limits
(bench.stack.CONTEXT).

Shown too, not a goal: a burst of BURST_JOBS from its first submission until the last is done. Its
last partial batches wait out the 5 s batching window (AWS's rule for a window), so that figure
measures the window as much as the runtime (docs/performance.md).
"""

import json
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

import requests

from bench import recorded
from bench.report import Figure, median
from bench.stack import API, CONTEXT, silenced_fds, template
from bench.waiting_type import NAME
from lambdas import config
from local_runtime.runtime import LocalRuntime, RuntimeSettings

THREADS = 8
ROUNDS = 3
SUBMIT_SECONDS = 12.0
SETTLE_SECONDS = float(config.WORKER_BATCHING_WINDOW_SECONDS)
FLOOR_PAIRS = 200
BURST_JOBS = 200
TIMEOUT_SECONDS = 300
GOAL = recorded.floor_of(recorded.LOCAL_RUNTIME_RATIO)  # no more than 10 % below the recorded figure
POLL_SECONDS = 0.5  # how often the drain looks; the done times come from the items, not the polls


_clients = threading.local()


def _session() -> requests.Session:
    """The calling thread's HTTP session: a client keeps its connection, as the floor's boto3 clients do
    (a new connection per job would time the benchmark's connects and the front door's new threads)."""
    session: requests.Session | None = getattr(_clients, "session", None)
    if session is None:
        session = _clients.session = requests.Session()
    return session


def _post(runtime: LocalRuntime) -> str:
    response = _session().post(
        f"{runtime.url}jobs",
        json={"type": NAME, "payload": {"seconds": 0}},
        headers={"x-api-key": runtime.api_key},
        timeout=30,
    )
    assert response.status_code == 202, response.text
    job_id: str = response.json()["jobId"]
    return job_id


def _submit_for(runtime: LocalRuntime, seconds: float) -> tuple[list[str], float, float]:
    """Submit from THREADS threads until `seconds` have passed: the ids, the first and last moment."""
    ids: list[str] = []
    lock = threading.Lock()
    started = time.time()
    deadline = started + seconds

    def client(_: int) -> float:
        last = started
        while time.time() < deadline:
            job_id = _post(runtime)
            last = time.time()
            with lock:
                ids.append(job_id)
        return last

    with ThreadPoolExecutor(THREADS) as pool:
        ended = max(pool.map(client, range(THREADS)))
    return ids, started, ended


def _done_times(ddb: Any, table: str, ids: list[str]) -> list[float]:
    """When each job became `done` (epoch seconds), once every one of them is."""
    pending, done = set(ids), []
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while pending:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(pending)} of {len(ids)} jobs not done within {TIMEOUT_SECONDS} s")
        time.sleep(POLL_SECONDS)
        waiting = sorted(pending)
        for start in range(0, len(waiting), 100):
            keys = [{"jobId": {"S": job_id}} for job_id in waiting[start : start + 100]]
            found = ddb.batch_get_item(
                RequestItems={
                    table: {
                        "Keys": keys,
                        "ProjectionExpression": "jobId, #s, updatedAt",
                        "ExpressionAttributeNames": {"#s": "status"},
                    }
                }
            )
            for item in found["Responses"][table]:
                if item["status"]["S"] == "done":
                    pending.discard(item["jobId"]["S"])
                    done.append(datetime.fromisoformat(item["updatedAt"]["S"]).timestamp())
    return done


def _steady_round(runtime: LocalRuntime, ddb: Any, table: str) -> float:
    ids, started, ended = _submit_for(runtime, SUBMIT_SECONDS)
    counted_from = started + SETTLE_SECONDS
    done = _done_times(ddb, table, ids)
    return sum(counted_from <= t <= ended for t in done) / (ended - counted_from)


def _burst_round(runtime: LocalRuntime, ddb: Any, table: str) -> float:
    started = time.time()
    with ThreadPoolExecutor(THREADS) as pool:
        ids = list(pool.map(lambda _: _post(runtime), range(BURST_JOBS)))
    return BURST_JOBS / (max(_done_times(ddb, table, ids)) - started)


def _floor_round(put: Callable[[str], None], sqs: Any, index: int) -> float:
    # A fresh queue per round: moto's SendMessage slows down with every message its queue holds
    # (it counts them all), and the runtime's queue stays drained, so a floor queue that kept
    # filling would make the floor slower than moto is.
    queue_url = sqs.create_queue(QueueName=f"bench-floor-{index}")["QueueUrl"]
    started = time.perf_counter()
    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(lambda _: put(queue_url), range(FLOOR_PAIRS)))
    rate = FLOOR_PAIRS / (time.perf_counter() - started)
    sqs.delete_queue(QueueUrl=queue_url)
    return rate


def _floor(runtime: LocalRuntime, sample_item: dict[str, Any]) -> Callable[[str], None]:
    ddb, sqs = runtime.moto.client("dynamodb"), runtime.moto.client("sqs")
    ddb.create_table(
        TableName="bench-floor",
        KeySchema=[{"AttributeName": "jobId", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "jobId", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    old_id = sample_item["jobId"]["S"]
    text = json.dumps(sample_item)

    def put(queue_url: str) -> None:
        new_id = str(uuid.uuid4())
        item = json.loads(text.replace(old_id, new_id))
        ddb.put_item(TableName="bench-floor", Item=item, ConditionExpression="attribute_not_exists(jobId)")
        sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps({"jobId": new_id}))

    return put


def measure() -> list[Figure]:
    settings = RuntimeSettings(
        port=0,
        quiet=True,
        state_file=None,
        template=template(),
        context=dict(CONTEXT),
        extra_modules=("bench.waiting_type",),
    )
    with silenced_fds():
        runtime = LocalRuntime(settings).start()
    try:
        assert runtime.provisioned is not None
        table = runtime.provisioned.function_env(API)[config.ENV_JOBS_TABLE]
        ddb = runtime.moto.client("dynamodb")
        _burst_round(runtime, ddb, table)  # warm: the functions' cold starts are not throughput
        put = _floor(runtime, ddb.scan(TableName=table, Limit=1)["Items"][0])
        steady, burst, floor = [], [], []
        sqs = runtime.moto.client("sqs")
        for index in range(ROUNDS):
            floor.append(_floor_round(put, sqs, index))
            steady.append(_steady_round(runtime, ddb, table))
            burst.append(_burst_round(runtime, ddb, table))
    finally:
        runtime.stop()
    base = median(floor)
    pairs = f"moto PutItem+SendMessage {base:.1f} pairs/s, medians of {ROUNDS}; recorded {recorded.LOCAL_RUNTIME_RATIO:g} (bench/recorded.py)"
    return [
        Figure(
            "local runtime vs moto's floor",
            median(steady) / base,
            GOAL,
            f"runtime {median(steady):.1f} jobs/s sustained / {pairs}",
            at_least=True,
        ),
        Figure(
            f"local runtime, burst of {BURST_JOBS}, vs moto's floor",
            median(burst) / base,
            GOAL,
            f"runtime {median(burst):.1f} jobs/s incl. the batching window / {pairs}",
            at_least=True,
            checked=False,
        ),
    ]
