"""A submission API: one pydantic-validated POST route, a conditional PutItem, a SendMessage."""

import json
import os
import time
import uuid
from typing import Any

import boto3
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from pydantic import BaseModel, Field

app = APIGatewayRestResolver(enable_validation=True)
_clients: dict[str, Any] = {}


def client(service: str) -> Any:
    if service not in _clients:
        _clients[service] = boto3.client(service)
    return _clients[service]


class SubmitJob(BaseModel):
    type: str = Field(min_length=1, max_length=64)
    payload: dict[str, Any] = Field(default_factory=dict)


@app.post("/jobs")
def submit(job: SubmitJob) -> Response[dict[str, str]]:
    job_id = str(uuid.uuid4())
    now = str(int(time.time() * 1000))
    client("dynamodb").put_item(
        TableName=os.environ["JOBS_TABLE_NAME"],
        Item={
            "jobId": {"S": job_id},
            "jobType": {"S": job.type},
            "payload": {"S": json.dumps(job.payload)},
            "status": {"S": "pending"},
            "createdAt": {"N": now},
        },
        ConditionExpression="attribute_not_exists(jobId)",
    )
    client("sqs").send_message(QueueUrl=os.environ["QUEUE_URL"], MessageBody=json.dumps({"jobId": job_id}))
    return Response(202, "application/json", {"jobId": job_id, "status": "pending"})


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
