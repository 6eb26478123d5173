"""The `api` function behind API Gateway (REST, proxy): the routes of `routes/` (jobs, job_changes, stats,
webhook_secrets, schedules, limits) and POST /uploads.

Routes only. How a body is read is `rest.body`, how errors become statuses is `rest.errors`, who is
calling and what a route works with is `rest.services` (each route declares them, Powertools'
`Depends` hands them over), and what a route does is the lifecycle's. POST /jobs's path (the store,
boto3, submit, the job-type registry) loads with this module, so its first call finds it loaded; so
do the other route groups (`_GROUPS`), in the order in which routes are matched and the OpenAPI
document lists them. Those import what only they use when they first run.

Run as a module to print the OpenAPI document: `python -m lambdas.handlers.api > docs/openapi.json`.
"""

# First: the modules below load with the cycle collector off (see `startup`).
from lambdas.handlers import startup  # isort: split

import functools
import importlib
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from lambdas.handlers.rest.body import as_json_request, read_json_body
from lambdas.handlers.rest.errors import install_error_map
from lambdas.handlers.rest.identity import without_key_value
from lambdas.handlers.rest.openapi import OpenApiDocument, describe_api, responses
from lambdas.handlers.rest.security import with_security_headers
from lambdas.handlers.rest.services import RequestCaller
from lambdas.models import settings
from lambdas.models.uploads import CreateUploadRequest, CreateUploadResponse
from lambdas.observability import logger, metrics, tracer

app = APIGatewayRestResolver(enable_validation=True, json_body_deserializer=read_json_body)
install_error_map(app)
own = Router()  # this module's routes, the last group

# The route groups in the order the resolver matches them, each a module with a `router`; this
# module's own routes (POST /uploads, GET /openapi.json) come last.
_GROUPS: tuple[str, ...] = (
    "lambdas.handlers.routes.jobs",
    "lambdas.handlers.routes.job_changes",
    "lambdas.handlers.routes.workflows",
    "lambdas.handlers.routes.stats",
    "lambdas.handlers.routes.webhook_secrets",
    "lambdas.handlers.routes.schedules",
    "lambdas.handlers.routes.limits",
    "lambdas.handlers.console.routes",
)


@own.post(
    "/uploads",
    summary="Get an upload URL",
    description=(
        "Returns a presigned POST for one file of at most `maxBytes`, and its key. Send the `fields`, "
        "then the file, as multipart/form-data to `url`; once it is stored, submit a `process_file` job "
        'with `{"key": ...}` using the same API key (another key\'s job cannot name it).'
    ),
    responses=responses(201, "Created", CreateUploadResponse, 400),
)
def create_upload(request: CreateUploadRequest, caller: RequestCaller) -> Response[CreateUploadResponse]:
    from lambdas.lifecycle.uploads import start_upload

    ticket = start_upload(request, caller.owner)
    return Response(status_code=201, content_type=content_types.APPLICATION_JSON, body=ticket)


@own.get(
    "/openapi.json",
    summary="This API's OpenAPI document",
    description=(
        "The document of this deployment: POST /jobs's body has one schema per public job type it runs, "
        "the types of the stack's job packages included."
    ),
    responses=responses(200, "The OpenAPI 3 document", OpenApiDocument),
)
def get_openapi() -> Response[str]:
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=_served_document())


@functools.cache
def _served_document() -> str:
    return describe_api(app, settings.api().job_packages)


settings.forget_on_reset(_served_document)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    # The key's value leaves the event before the logger, the tracer or the resolver can write it out.
    return _handle(without_key_value(event), context)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler_without_response
@metrics.log_metrics
def _handle(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return with_security_headers(app.resolve(as_json_request(event), context))


def openapi_document() -> str:
    return describe_api(app)


for _group in _GROUPS:
    app.include_router(importlib.import_module(_group).router)
app.include_router(own)
startup.loaded()

if __name__ == "__main__":
    print(openapi_document(), end="")
