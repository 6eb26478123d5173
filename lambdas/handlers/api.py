"""The `api` function: POST /jobs, GET /jobs/{jobId}, behind API Gateway (REST, Lambda proxy).

Run as a module to print the OpenAPI document: `python -m lambdas.handlers.api > docs/openapi.json`.
"""

import json
from functools import cache
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.models import APIKey, APIKeyIn, Server
from aws_lambda_powertools.event_handler.openapi.params import Header, Path
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from lambdas import config
from lambdas.jobs.base import InvalidPayloadError
from lambdas.jobs.types import register_builtin_types
from lambdas.lifecycle.submit import (
    IdempotencyConflictError,
    UnknownJobTypeError,
    submit,
)
from lambdas.models import settings
from lambdas.models.api import (
    ChildrenView,
    ErrorDetail,
    ErrorResponse,
    JobView,
    SubmitJobRequest,
    SubmitJobResponse,
)
from lambdas.models.job import Job, JobStatus
from lambdas.models.uploads import CreateUploadRequest, CreateUploadResponse
from lambdas.observability import logger, metrics, tracer
from lambdas.store.factory import job_store
from lambdas.store.jobs import JobStore, iso_time
from lambdas.store.queue import JobQueue
from lambdas.store.uploads import Uploads


class PayloadTooLargeError(ValueError):
    pass


class MalformedJsonError(ValueError):
    pass


class JobNotFoundError(LookupError):
    pass


def _parse_body(body: str) -> Any:
    if len(body.encode()) > config.MAX_BODY_BYTES:
        raise PayloadTooLargeError(f"request body is larger than {config.MAX_BODY_BYTES} bytes")
    try:
        return json.loads(body)
    except ValueError as error:
        raise MalformedJsonError(f"request body is not valid JSON: {error}") from None


app = APIGatewayRestResolver(enable_validation=True, json_body_deserializer=_parse_body)
app.configure_openapi(
    title="offload",
    version="1.0.0",
    summary="Submit slow work and follow it to the end.",
    servers=[Server(url="/")],
    security_schemes={"apiKey": APIKey(name="x-api-key", in_=APIKeyIn.header)},
    security=[{"apiKey": []}],
)


def _error_doc(description: str) -> OpenAPIResponse:
    return {"description": description, "content": {"application/json": {"model": ErrorResponse}}}


_SUBMIT_ERRORS: dict[int, OpenAPIResponse] = {
    400: _error_doc("Malformed JSON, or a request that does not match the schema."),
    403: _error_doc("Missing or invalid API key (answered by API Gateway)."),
    409: _error_doc("The Idempotency-Key was used before with a different body."),
    413: _error_doc("The request body is over 256 KiB."),
    422: _error_doc("Unknown job type, or a payload that is invalid for its type."),
}


@cache
def _services() -> tuple[JobStore, JobQueue]:
    api = settings.api()
    register_builtin_types()
    return job_store(api), JobQueue(api.queue_url)


def _view(job: Job) -> JobView:
    children = None
    if job.children is not None:
        counts = job.children
        children = ChildrenView(
            total=counts.total, pending=counts.pending, delivered=counts.done, failed=counts.dead
        )
    return JobView(
        job_id=job.job_id,
        type=job.job_type,
        status=job.status.value,
        attempts=job.attempts,
        max_attempts=job.max_attempts,
        last_error=job.last_error,
        result=job.result,
        created_at=job.created_at,
        updated_at=job.updated_at,
        next_attempt_at=iso_time(job.due_at / 1000) if job.status is JobStatus.PENDING else None,
        parent_id=job.parent_id,
        children=children,
    )


@app.post(
    "/jobs",
    summary="Submit a job",
    description="Stores the job and queues it. Answers 202 at once; follow the job at its Location.",
    responses={
        202: {"description": "Accepted", "content": {"application/json": {"model": SubmitJobResponse}}},
        **_SUBMIT_ERRORS,
    },
)
def submit_job(
    request: SubmitJobRequest,
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="idempotency-key",
            min_length=1,
            max_length=255,
            description="Repeat a request safely: the same key and body return the same job.",
        ),
    ] = None,
) -> Response[SubmitJobResponse]:
    store, queue = _services()
    caller = app.current_event.request_context.identity.api_key_id or ""
    submitted = submit(request, store, queue, idempotency_key=idempotency_key, caller=caller)
    if submitted.created:
        metrics.add_metric(name=config.METRIC_SUBMITTED, unit=MetricUnit.Count, value=1)
    body = SubmitJobResponse(job_id=submitted.job.job_id, status=submitted.job.status.value)
    return Response(
        status_code=202,
        content_type=content_types.APPLICATION_JSON,
        body=body,
        headers={"Location": f"/jobs/{submitted.job.job_id}"},
    )


@app.get(
    "/jobs/<jobId>",
    summary="Get a job",
    responses={
        200: {"description": "The job", "content": {"application/json": {"model": JobView}}},
        400: _error_doc("The job id is not well formed."),
        403: _error_doc("Missing or invalid API key (answered by API Gateway)."),
        404: _error_doc("No such job."),
    },
)
def get_job(job_id: Annotated[str, Path(alias="jobId", min_length=1, max_length=64)]) -> JobView:
    store, _ = _services()
    job = store.get(job_id)
    if job is None:
        raise JobNotFoundError(f"no job {job_id}")
    return _view(job)


@app.post(
    "/uploads",
    summary="Get an upload URL",
    description=(
        "Returns a presigned URL to PUT one file to, and its key. Once the upload is done, submit a "
        '`process_file` job with `{"key": ...}`.'
    ),
    responses={
        201: {"description": "Created", "content": {"application/json": {"model": CreateUploadResponse}}},
        400: _error_doc("Malformed JSON, or a request that does not match the schema."),
        403: _error_doc("Missing or invalid API key (answered by API Gateway)."),
    },
)
def create_upload(request: CreateUploadRequest) -> Response[CreateUploadResponse]:
    api = settings.api()
    ticket = Uploads(api.uploads_bucket).presign_put(request.filename, request.content_type)
    body = CreateUploadResponse(
        key=ticket.key,
        url=ticket.url,
        headers=ticket.headers,
        expires_at=ticket.expires_at,
        max_bytes=api.max_file_bytes,
    )
    return Response(status_code=201, content_type=content_types.APPLICATION_JSON, body=body)


def _error(
    status: int, code: str, message: str, details: list[dict[str, Any]] | None = None
) -> Response[Any]:
    body = ErrorResponse(error=ErrorDetail(code=code, message=message, details=details))
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=body.model_dump_json(by_alias=True, exclude_none=True),
    )


@app.exception_handler(PayloadTooLargeError)
def _too_large(error: PayloadTooLargeError) -> Response[Any]:
    return _error(413, "payload_too_large", str(error))


@app.exception_handler(MalformedJsonError)
def _malformed(error: MalformedJsonError) -> Response[Any]:
    return _error(400, "malformed_json", str(error))


@app.exception_handler(RequestValidationError)
def _invalid_request(error: RequestValidationError) -> Response[Any]:
    details = [
        {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
        for e in error.errors()
    ]
    return _error(400, "invalid_request", "the request does not match the API's schema", details)


@app.exception_handler(UnknownJobTypeError)
def _unknown_type(error: UnknownJobTypeError) -> Response[Any]:
    return _error(422, "unknown_job_type", str(error))


@app.exception_handler(InvalidPayloadError)
def _invalid_payload(error: InvalidPayloadError) -> Response[Any]:
    return _error(422, "invalid_payload", str(error), error.details)


@app.exception_handler(IdempotencyConflictError)
def _conflict(error: IdempotencyConflictError) -> Response[Any]:
    return _error(409, "idempotency_conflict", str(error))


@app.exception_handler(JobNotFoundError)
def _not_found(error: JobNotFoundError) -> Response[Any]:
    return _error(404, "job_not_found", str(error))


@app.not_found
def _no_route(_: Exception) -> Response[Any]:
    return _error(404, "not_found", f"no route for {app.current_event.http_method} {app.current_event.path}")


@app.exception_handler(Exception)
def _internal(_: Exception) -> Response[Any]:
    logger.exception("unhandled error")
    return _error(500, "internal_error", "the request could not be completed; try again")


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(_json_only(event), context)


def _json_only(event: dict[str, Any]) -> dict[str, Any]:
    """Every body this API takes is JSON, whatever Content-Type the client sent (curl's -d says form)."""
    if not event.get("body"):
        return event
    headers = {k: v for k, v in (event.get("headers") or {}).items() if k.lower() != "content-type"}
    multi = {k: v for k, v in (event.get("multiValueHeaders") or {}).items() if k.lower() != "content-type"}
    headers["Content-Type"] = "application/json"
    multi["Content-Type"] = ["application/json"]
    return {**event, "headers": headers, "multiValueHeaders": multi}


def openapi_document() -> str:
    return app.get_openapi_json_schema(title="offload", version="1.0.0") + "\n"


if __name__ == "__main__":
    print(openapi_document(), end="")
