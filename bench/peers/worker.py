"""A job worker: Powertools' BatchProcessor over SQS (partial batch failures), a pydantic message
model, a conditional UpdateItem claim, then the job's outcome in a second UpdateItem."""

import os
import time
from typing import Any

import boto3
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from botocore.exceptions import ClientError
from pydantic import BaseModel

processor = BatchProcessor(event_type=EventType.SQS)
_clients: dict[str, Any] = {}


def client(service: str) -> Any:
    if service not in _clients:
        _clients[service] = boto3.client(service)
    return _clients[service]


class JobMessage(BaseModel):
    jobId: str


def run(job_id: str) -> None:
    """The job's work: nothing here, the floor is the claim and the outcome around it."""


def record_handler(record: SQSRecord) -> None:
    message = JobMessage.model_validate_json(record.body)
    table, key = os.environ["JOBS_TABLE_NAME"], {"jobId": {"S": message.jobId}}
    now = str(int(time.time() * 1000))
    try:
        client("dynamodb").update_item(
            TableName=table,
            Key=key,
            UpdateExpression="SET #s = :processing, claimedAt = :now",
            ConditionExpression="attribute_exists(jobId) AND #s = :pending",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={
                ":processing": {"S": "processing"},
                ":pending": {"S": "pending"},
                ":now": {"N": now},
            },
        )
    except ClientError as error:
        if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
            return  # a duplicate delivery, or a job that is gone: nothing to do
        raise
    run(message.jobId)
    client("dynamodb").update_item(
        TableName=table,
        Key=key,
        UpdateExpression="SET #s = :done",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":done": {"S": "done"}},
    )


def handler(event: dict[str, Any], context: Any) -> PartialItemFailureResponse:
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
