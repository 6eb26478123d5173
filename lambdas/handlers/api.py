"""The `api` function behind API Gateway (REST, proxy): the routes of `routes/` (jobs, actions, stats,
webhook_secrets) and POST /uploads.

Routes only. How a body is read is `rest.body`, how errors become statuses is `rest.errors`, who is
calling is `rest.services`, and what a route does is the lifecycle's. POST /jobs's path (the store,
boto3, submit, the job-type registry) loads with this module, so its first call finds it loaded; the
other routes import what only they use when they first run, and build their models' validators then.

Run as a module to print the OpenAPI document: `python -m lambdas.handlers.api > docs/openapi.json`.
"""

# First: the modules below load with the cycle collector off (see `startup`).
from lambdas.handlers import startup  # isort: split

from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from lambdas.handlers.console.routes import router as console_router
from lambdas.handlers.rest.body import as_json_request, read_json_body
from lambdas.handlers.rest.errors import install_error_map
from lambdas.handlers.rest.identity import without_key_value
from lambdas.handlers.rest.openapi import describe_api, responses
from lambdas.handlers.rest.security import with_security_headers
from lambdas.handlers.routes import actions, jobs, limits, stats, webhook_secrets
from lambdas.models.uploads import CreateUploadRequest, CreateUploadResponse
from lambdas.observability import logger, metrics, tracer

app = APIGatewayRestResolver(enable_validation=True, json_body_deserializer=read_json_body)
install_error_map(app)
for routes in (jobs, actions, stats, webhook_secrets, limits):
    app.include_router(routes.router)
app.include_router(console_router)


@app.post(
    "/uploads",
    summary="Get an upload URL",
    description=(
        "Returns a presigned URL to PUT one file to, and its key. Once the upload is done, submit a "
        '`process_file` job with `{"key": ...}`.'
    ),
    responses=responses(201, "Created", CreateUploadResponse, 400),
)
def create_upload(request: CreateUploadRequest) -> Response[CreateUploadResponse]:
    from lambdas.lifecycle.uploads import start_upload

    return Response(status_code=201, content_type=content_types.APPLICATION_JSON, body=start_upload(request))


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


startup.loaded()

if __name__ == "__main__":
    print(openapi_document(), end="")
