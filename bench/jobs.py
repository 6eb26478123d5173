"""Feeding the handlers in-process: submit through the api handler, hand queue records to the worker."""

import json
from typing import Any

import boto3

from bench.stack import Stack, api_event, context
from bench.waiting_type import NAME, install

__all__ = ["NAME", "install", "receive", "run_batch", "submit"]


def submit(body: dict[str, Any]) -> str:
    from lambdas.handlers import api

    response = api.handler(api_event(body), context("api"))
    assert response["statusCode"] == 202, response
    job_id: str = json.loads(response["body"])["jobId"]
    return job_id


def receive(stack: Stack, count: int, wait_seconds: int = 0) -> list[dict[str, Any]]:
    """Up to `count` records from the main queue, shaped as the event source mapping delivers them."""
    sqs = boto3.client("sqs")
    records: list[dict[str, Any]] = []
    while len(records) < count:
        batch = min(10, count - len(records))
        messages = sqs.receive_message(
            QueueUrl=stack.queue_url, MaxNumberOfMessages=batch, WaitTimeSeconds=wait_seconds
        ).get("Messages", [])
        if not messages:
            break
        records += [
            {"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"]}
            for m in messages
        ]
    return records


def run_batch(records: list[dict[str, Any]]) -> dict[str, Any]:
    from lambdas.handlers import worker

    response: dict[str, Any] = worker.handler({"Records": records}, context("worker"))
    return response
