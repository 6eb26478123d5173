"""What the OpenAPI document says besides the routes: the API itself, and each error status once.

`make openapi` writes the document of the built-in job types to docs/openapi.json (a unit test keeps
that file current); the API serves, at GET /openapi.json, the document of the types it registered when
it started, a user's packages included, so nobody regenerates a file when a type is added.
"""

import json
from collections.abc import Sequence
from typing import Any, Final

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from pydantic import BaseModel, ConfigDict

from lambdas import config
from lambdas.jobs import registry
from lambdas.jobs.packages import register_job_types
from lambdas.models.api import ErrorResponse

_REF: Final = "#/components/schemas/"
_SUBMIT_REQUEST: Final = "SubmitJobRequest"
_POWERTOOLS_422: Final = "Validation Error"
# API Gateway's own 403, before the function runs, in either mode (CDK context `auth`).
REFUSED_CALLER: Final = (
    "Missing or invalid API key, or with IAM callers a missing, invalid or stale SigV4 signature or a "
    "role that is not mapped (answered by API Gateway)"
)
# What any route can answer before its code runs: API Gateway's refusals, in this API's error body (the
# stack's gateway responses, infra/api.py), and the function's body limit.
_BEFORE_THE_ROUTE: dict[int, str] = {
    403: f"{REFUSED_CALLER}.",
    413: (
        f"The request body is over {config.MAX_BODY_BYTES // 1024} KiB "
        "(over 10 MB API Gateway answers this itself)."
    ),
    414: "The URL is too long (answered by API Gateway).",
    429: (
        "Too many requests: the caller's rate, burst or daily quota is spent. Wait and send again "
        "(answered by API Gateway)."
    ),
}
_ERRORS: dict[int, str] = {
    400: (
        f"Malformed JSON, arrays or objects nested deeper than {config.MAX_JSON_DEPTH} levels, "
        "or a request that does not match the schema."
    ),
    404: "No such job.",
    409: "The Idempotency-Key was used before with a different body.",
    413: f"The request body is over {config.MAX_BODY_BYTES // 1024} KiB, or the job would be too large to store.",
    422: "Unknown job type, or a payload that is invalid for its type.",
}


class OpenApiDocument(BaseModel):
    """An OpenAPI 3 document (GET /openapi.json): this API's, with the job types it runs."""

    model_config = ConfigDict(extra="allow")

    openapi: str


def _json(description: str, model: type[BaseModel]) -> OpenAPIResponse:
    return {"description": description, "content": {"application/json": {"model": model}}}


def responses(
    status: int,
    description: str,
    model: type[BaseModel],
    *errors: int | tuple[int, str],
    also: tuple[int, str, type[BaseModel]] | None = None,
) -> dict[int, Any]:
    """A route's documented answers: its success (and `also`, a second one), what every route can answer
    before it runs (403, 413, 414, 429), and the errors the route itself gives: a status with its usual
    description, or (status, what it means on this route)."""
    documented: dict[int, OpenAPIResponse] = {status: _json(description, model)}
    if also is not None:
        documented[also[0]] = _json(also[1], also[2])
    for code, meaning in _BEFORE_THE_ROUTE.items():
        documented[code] = _json(meaning, ErrorResponse)
    for error in errors:
        code, meaning = error if isinstance(error, tuple) else (error, _ERRORS[error])
        documented[code] = _json(meaning, ErrorResponse)
    return dict(sorted(documented.items()))


def describe_api(app: APIGatewayRestResolver, job_packages: Sequence[str] = ()) -> str:
    """The OpenAPI document (JSON), POST /jobs's body with the built-in types and those of
    `job_packages`. Only GET /openapi.json, `make openapi` and the tests need it, so cold start never
    pays."""
    from aws_lambda_powertools.event_handler.openapi.models import APIKey, APIKeyIn, Server, ServerVariable

    app.configure_openapi(
        title="offload",
        version="1.0.0",
        summary="Submit slow work and follow it to the end.",
        # Relative to where the document is served (OpenAPI's rule for a relative server URL): the stage,
        # which the host root is not; the template names the deployed API's URL for a copy read elsewhere.
        servers=[
            Server(url=f"/{config.API_STAGE}", description="This API, on the host that served this document"),
            Server(
                url="https://{apiId}.execute-api.{region}.amazonaws.com/" + config.API_STAGE,
                description="A deployed stack's API (its ApiUrl output)",
                variables={
                    "apiId": ServerVariable(default="abc123defg", description="The REST API's id"),
                    "region": ServerVariable(default="us-east-1", description="The stack's region"),
                },
            ),
        ],
        # One document for both modes: a stack takes API keys (the default) or SigV4 (auth=iam).
        security_schemes={
            "apiKey": APIKey(name="x-api-key", in_=APIKeyIn.header),
            "sigv4": APIKey(
                name="Authorization",
                in_=APIKeyIn.header,
                description="AWS Signature Version 4 (service execute-api), with CDK context auth=iam.",
                **{"x-amazon-apigateway-authtype": "awsSigv4"},
            ),
        },
        security=[{"apiKey": []}, {"sigv4": []}],
    )
    document = json.loads(app.get_openapi_json_schema())
    _without_powertools_422(document)
    _submit_by_type(document, job_packages)
    return json.dumps(document, indent=2) + "\n"


def _without_powertools_422(document: dict[str, Any]) -> None:
    """Powertools documents a 422 "Validation Error" on every validated route; this API answers a request
    that fails validation with 400 (`rest.errors`), so that 422 is never given and must not be promised."""
    for operations in document["paths"].values():
        for operation in operations.values():
            if operation["responses"].get("422", {}).get("description") == _POWERTOOLS_422:
                del operation["responses"]["422"]
    # Then its error schemas, unless something still points at them (those that point at others first).
    schemas = document["components"]["schemas"]
    for name in ("HTTPValidationError", "ResponseValidationError", "ValidationError"):
        others = {other: schema for other, schema in schemas.items() if other != name}
        if _REF + name not in json.dumps([document["paths"], others]):
            schemas.pop(name, None)


def _submit_by_type(document: dict[str, Any], job_packages: Sequence[str]) -> None:
    """POST /jobs's body as one schema per public job type, told apart by `type` (a discriminated
    `oneOf`), each with its type's payload model: what the handler checks, as a client can see it."""
    schemas = document["components"]["schemas"]
    generic = schemas.pop(_SUBMIT_REQUEST)
    register_job_types(job_packages)
    mapping = {}
    for job_type in sorted(registry.public_types(), key=lambda t: t.name):
        payload = job_type.payload_model.model_json_schema(by_alias=True, ref_template=_REF + "{model}")
        for name, nested in payload.pop("$defs", {}).items():
            if schemas.setdefault(name, nested) != nested:
                raise ValueError(f"two payload models define a different {name}")
        schemas[job_type.payload_model.__name__] = payload
        name = "".join(part.title() for part in job_type.name.split("_")) + "Job"
        schemas[name] = {
            **generic,
            "title": name,
            "properties": {
                **generic["properties"],
                "type": {"type": "string", "const": job_type.name, "title": "Type"},
                "payload": {"$ref": _REF + job_type.payload_model.__name__},
            },
        }
        mapping[job_type.name] = _REF + name
    body = document["paths"]["/jobs"]["post"]["requestBody"]["content"]["application/json"]
    body["schema"] = {
        "oneOf": [{"$ref": ref} for ref in mapping.values()],
        "discriminator": {"propertyName": "type", "mapping": mapping},
    }
