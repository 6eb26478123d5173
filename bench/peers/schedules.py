"""A recurring-jobs tick: every minute, the schedules table is scanned for enabled schedules, and each
due one gets its job (a conditional PutItem keyed by schedule and minute, so a repeated tick makes no
second job) and its message."""

import json
import os
from typing import Any

import boto3

_clients: dict[str, Any] = {}


def client(service: str) -> Any:
    if service not in _clients:
        _clients[service] = boto3.client(service)
    return _clients[service]


def handler(event: dict[str, Any], _context: Any) -> dict[str, int]:
    tick, fired = event["tick"], 0
    pages = (
        client("dynamodb")
        .get_paginator("scan")
        .paginate(
            TableName=os.environ["SCHEDULES_TABLE_NAME"],
            FilterExpression="attribute_exists(#e)",
            ExpressionAttributeNames={"#e": "expression"},
        )
    )
    for page in pages:
        for schedule in page["Items"]:
            if (
                schedule.get("state", {}).get("S") != "enabled"
                or schedule.get("nextAt", {}).get("S", "") > tick
            ):
                continue
            job_id = f"{schedule['scheduleId']['S']}#{tick}"
            client("dynamodb").put_item(
                TableName=os.environ["JOBS_TABLE_NAME"],
                Item={"jobId": {"S": job_id}, "status": {"S": "pending"}, "jobType": schedule["jobType"]},
                ConditionExpression="attribute_not_exists(jobId)",
            )
            client("sqs").send_message(
                QueueUrl=os.environ["QUEUE_URL"], MessageBody=json.dumps({"jobId": job_id})
            )
            fired += 1
    return {"fired": fired}
