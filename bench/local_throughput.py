"""The local runtime's throughput against moto's own floor, on the same server in the same run.

Runtime: jobs that do nothing (`bench_io` waiting 0 s) submitted over HTTP to the front door by a few
client threads, timed from the first submission until every one is `done`. Floor: PutItem (an item
copied from a job the runtime wrote, under a fresh id) + SendMessage pairs, from as many threads, into
a table and a queue of their own on the same moto server, so the runtime's pollers never see them.
The stack's defaults apply, except the usage plan's limits (bench.stack.CONTEXT).
"""

import json
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import requests

from bench.report import Figure, median
from bench.stack import API, CONTEXT, silenced_fds, template
from bench.waiting_type import NAME
from lambdas import config
from local_runtime.runtime import LocalRuntime, RuntimeSettings

JOBS = 200
THREADS = 8
ROUNDS = 3
TIMEOUT_SECONDS = 300


def _runtime_round(runtime: LocalRuntime, ddb: Any, table: str) -> float:
    headers = {"x-api-key": runtime.api_key}
    body = {"type": NAME, "payload": {"seconds": 0}}

    def post(_: int) -> str:
        response = requests.post(f"{runtime.url}jobs", json=body, headers=headers, timeout=30)
        assert response.status_code == 202, response.text
        job_id: str = response.json()["jobId"]
        return job_id

    started = time.perf_counter()
    with ThreadPoolExecutor(THREADS) as pool:
        pending = set(pool.map(post, range(JOBS)))
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while pending:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(pending)} of {JOBS} jobs not done within {TIMEOUT_SECONDS} s")
        time.sleep(0.05)
        keys = [{"jobId": {"S": job_id}} for job_id in list(pending)[:100]]
        found = ddb.batch_get_item(
            RequestItems={
                table: {
                    "Keys": keys,
                    "ProjectionExpression": "jobId, #s",
                    "ExpressionAttributeNames": {"#s": "status"},
                }
            }
        )
        pending -= {i["jobId"]["S"] for i in found["Responses"][table] if i["status"]["S"] == "done"}
    return JOBS / (time.perf_counter() - started)


def _floor_round(put: Callable[[], None]) -> float:
    started = time.perf_counter()
    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(lambda _: put(), range(JOBS)))
    return JOBS / (time.perf_counter() - started)


def _floor(runtime: LocalRuntime, sample_item: dict[str, Any]) -> Callable[[], None]:
    ddb, sqs = runtime.moto.client("dynamodb"), runtime.moto.client("sqs")
    ddb.create_table(
        TableName="bench-floor",
        KeySchema=[{"AttributeName": "jobId", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "jobId", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    queue_url = sqs.create_queue(QueueName="bench-floor")["QueueUrl"]
    old_id = sample_item["jobId"]["S"]
    text = json.dumps(sample_item)

    def put() -> None:
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
        _runtime_round(runtime, ddb, table)  # warm: the functions' cold starts are not throughput
        sample = ddb.scan(TableName=table, Limit=1)["Items"][0]
        put = _floor(runtime, sample)
        local, floor = [], []
        for _ in range(ROUNDS):
            floor.append(_floor_round(put))
            local.append(_runtime_round(runtime, ddb, table))
    finally:
        runtime.stop()
    value, base = median(local), median(floor)
    detail = f"runtime {value:.1f} jobs/s / moto PutItem+SendMessage {base:.1f} pairs/s, medians of {ROUNDS}"
    return [Figure("local runtime vs moto's floor", value / base, 0.35, detail, at_least=True)]
