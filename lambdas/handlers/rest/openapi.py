"""What the OpenAPI document says besides the routes: the API itself, and each error status once.

`make openapi` writes the document to docs/openapi.json; a unit test keeps that file current.
"""

from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from pydantic import BaseModel

from lambdas import config
from lambdas.models.api import ErrorResponse

_ERRORS: dict[int, str] = {
    400: (
        f"Malformed JSON, arrays or objects nested deeper than {config.MAX_JSON_DEPTH} levels, "
        "or a request that does not match the schema."
    ),
    403: "Missing or invalid API key (answered by API Gateway).",
    404: "No such job.",
    409: "The Idempotency-Key was used before with a different body.",
    413: f"The request body is over {config.MAX_BODY_BYTES // 1024} KiB, or the job would be too large to store.",
    422: "Unknown job type, or a payload that is invalid for its type.",
}


def _json(description: str, model: type[BaseModel]) -> OpenAPIResponse:
    return {"description": description, "content": {"application/json": {"model": model}}}


def responses(status: int, description: str, model: type[BaseModel], *errors: int) -> dict[int, Any]:
    """A route's documented answers: its success, 400 and 403 (every route), and the `errors` it adds."""
    documented: dict[int, OpenAPIResponse] = {status: _json(description, model)}
    for error in (400, 403, *errors):
        documented[error] = _json(_ERRORS[error], ErrorResponse)
    return documented


def describe_api(app: APIGatewayRestResolver) -> str:
    """The OpenAPI document (JSON). Only `make openapi` and the tests need it, so cold start never pays."""
    from aws_lambda_powertools.event_handler.openapi.models import APIKey, APIKeyIn, Server

    app.configure_openapi(
        title="offload",
        version="1.0.0",
        summary="Submit slow work and follow it to the end.",
        servers=[Server(url="/")],
        security_schemes={"apiKey": APIKey(name="x-api-key", in_=APIKeyIn.header)},
        security=[{"apiKey": []}],
    )
    return app.get_openapi_json_schema() + "\n"
