"""A recovery sweep on a schedule: for each status a lost job can be stuck in, every shard of the
status index is queried for jobs due before now, and each found is sent to the queue again."""

import json
import os
import time
from typing import Any

import boto3

STUCK = ("scheduled", "pending", "processing", "waiting")
_clients: dict[str, Any] = {}


def client(service: str) -> Any:
    if service not in _clients:
        _clients[service] = boto3.client(service)
    return _clients[service]


def stuck(status: str, shard: int, now: int) -> list[dict[str, Any]]:
    found = client("dynamodb").query(
        TableName=os.environ["JOBS_TABLE_NAME"],
        IndexName="byStatus",
        KeyConditionExpression="statusShard = :k AND dueAt < :now",
        ExpressionAttributeValues={":k": {"S": f"{status}#{shard}"}, ":now": {"N": str(now)}},
        Limit=100,
    )
    items: list[dict[str, Any]] = found["Items"]
    return items


def handler(_event: dict[str, Any], _context: Any) -> dict[str, int]:
    now, resent = int(time.time() * 1000), 0
    for status in STUCK:
        for shard in range(int(os.environ["STATUS_SHARDS"])):
            for item in stuck(status, shard, now):
                body = json.dumps({"jobId": item["jobId"]["S"]})
                client("sqs").send_message(QueueUrl=os.environ["QUEUE_URL"], MessageBody=body)
                resent += 1
    return {"resent": resent}
