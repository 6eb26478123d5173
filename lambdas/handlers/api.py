"""The `api` function: POST /jobs, GET /jobs/{jobId} and POST /uploads behind API Gateway (REST, proxy).

Routes only. How a body is read is `rest.body`, how errors become statuses is `rest.errors`, and what a
route does is the lifecycle's. A route imports what it needs when it first runs, so a cold start
pays for the resolver and the API models, not for the store, boto3 or the job types.

Run as a module to print the OpenAPI document: `python -m lambdas.handlers.api > docs/openapi.json`.
"""

from functools import cache
from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Header, Path
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from lambdas import config
from lambdas.handlers.console.routes import router as console_router
from lambdas.handlers.rest.body import as_json_request, read_json_body
from lambdas.handlers.rest.errors import install_error_map
from lambdas.handlers.rest.identity import caller_of, without_key_value
from lambdas.handlers.rest.links import job_url
from lambdas.handlers.rest.openapi import describe_api, responses
from lambdas.handlers.rest.security import with_security_headers
from lambdas.models.api import JobView, SubmitJobRequest, SubmitJobResponse
from lambdas.models.uploads import CreateUploadRequest, CreateUploadResponse
from lambdas.observability import logger, metrics, tracer

if TYPE_CHECKING:
    from lambdas.models.caller import Caller
    from lambdas.store.jobs import JobStore
    from lambdas.store.queue import JobQueue

app = APIGatewayRestResolver(enable_validation=True, json_body_deserializer=read_json_body)
install_error_map(app)
app.include_router(console_router)


@cache
def _services() -> "tuple[JobStore, JobQueue]":
    from lambdas.jobs.types import register_builtin_types
    from lambdas.models import settings
    from lambdas.store.factory import job_store
    from lambdas.store.queue import JobQueue

    api = settings.api()
    register_builtin_types()
    return job_store(api), JobQueue(api.queue_url)


def _caller() -> "Caller":
    from lambdas.models import settings

    return caller_of(app.current_event.request_context.identity.api_key_id, settings.api().operator_key_id)


@app.post(
    "/jobs",
    summary="Submit a job",
    description="Stores the job and queues it. Answers 202 at once; follow the job at its Location.",
    responses=responses(202, "Accepted", SubmitJobResponse, 409, 413, 422),
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
    from aws_lambda_powertools.metrics import MetricUnit

    from lambdas.lifecycle.submit import submit

    store, queue = _services()
    submitted = submit(request, store, queue, idempotency_key=idempotency_key, caller=_caller().owner)
    if submitted.created:
        metrics.add_metric(name=config.METRIC_SUBMITTED, unit=MetricUnit.Count, value=1)
    return Response(
        status_code=202,
        content_type=content_types.APPLICATION_JSON,
        body=SubmitJobResponse(job_id=submitted.job.job_id, status=submitted.job.status.value),
        headers={"Location": job_url(app.current_event, submitted.job.job_id)},
    )


@app.get("/jobs/<jobId>", summary="Get a job", responses=responses(200, "The job", JobView, 404))
def get_job(job_id: Annotated[str, Path(alias="jobId", min_length=1, max_length=64)]) -> JobView:
    from lambdas.lifecycle.queries import find_job
    from lambdas.lifecycle.uploads import download_links

    store, _ = _services()
    job = find_job(store, job_id)
    return JobView.of(job, download_links(job))


@app.post(
    "/uploads",
    summary="Get an upload URL",
    description=(
        "Returns a presigned URL to PUT one file to, and its key. Once the upload is done, submit a "
        '`process_file` job with `{"key": ...}`.'
    ),
    responses=responses(201, "Created", CreateUploadResponse),
)
def create_upload(request: CreateUploadRequest) -> Response[CreateUploadResponse]:
    from lambdas.lifecycle.uploads import start_upload

    return Response(status_code=201, content_type=content_types.APPLICATION_JSON, body=start_upload(request))


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    # The key's value leaves the event before the logger, the tracer or the resolver can write it out.
    return _handle(without_key_value(event), context)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
@metrics.log_metrics
def _handle(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return with_security_headers(app.resolve(as_json_request(event), context))


def openapi_document() -> str:
    return describe_api(app)


if __name__ == "__main__":
    print(openapi_document(), end="")
