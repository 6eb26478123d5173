"""A dead-letter consumer: Powertools' BatchProcessor over the DLQ, a pydantic message model, the job
marked dead by a conditional UpdateItem, one SNS alert per letter (a letter without a job alerted as
such)."""

import json
import os
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


def record_handler(record: SQSRecord) -> None:
    message = JobMessage.model_validate_json(record.body)
    try:
        client("dynamodb").update_item(
            TableName=os.environ["JOBS_TABLE_NAME"],
            Key={"jobId": {"S": message.jobId}},
            UpdateExpression="SET #s = :dead",
            ConditionExpression="attribute_exists(jobId) AND NOT #s IN (:done, :dead)",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":dead": {"S": "dead"}, ":done": {"S": "done"}},
        )
        reason = f"job {message.jobId} is dead"
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        reason = f"no live job {message.jobId}"
    client("sns").publish(
        TopicArn=os.environ["ALERTS_TOPIC_ARN"],
        Subject="dead letter",
        Message=json.dumps({"reason": reason, "messageId": record.message_id}),
    )


def handler(event: dict[str, Any], context: Any) -> PartialItemFailureResponse:
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
