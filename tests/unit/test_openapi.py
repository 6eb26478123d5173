"""docs/openapi.json is generated from the api handler's routes and models, and kept current."""

import json
from pathlib import Path
from urllib.parse import urljoin

from openapi_spec_validator import validate

from lambdas import config
from lambdas.handlers.api import openapi_document
from lambdas.jobs import registry
from lambdas.jobs.types import register_builtin_types

SPEC = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


def test_the_committed_openapi_document_is_current() -> None:
    assert SPEC.read_text() == openapi_document(), "docs/openapi.json is stale: run `make openapi`"


def test_the_document_is_valid_openapi_every_reference_resolving() -> None:
    """Seen to fail (PointerToNowhere) with `_without_powertools_422` as it was: it dropped the
    `ValidationError` schema, looking for references in the paths only, and kept
    `ResponseValidationError`, which points at it."""
    validate(json.loads(openapi_document()))


def test_the_server_url_resolved_against_the_documents_own_url_is_the_stage() -> None:
    """OpenAPI resolves a relative server URL against where the document was served, GET
    /{stage}/openapi.json, so `/` would send clients to the host root, where no route is. Seen to fail
    with the server URL `/`."""
    servers = json.loads(openapi_document())["servers"]
    served_at = f"https://abc123defg.execute-api.us-east-1.amazonaws.com/{config.API_STAGE}/openapi.json"

    assert urljoin(served_at, servers[0]["url"]) + "/jobs" == (
        f"https://abc123defg.execute-api.us-east-1.amazonaws.com/{config.API_STAGE}/jobs"
    )
    template = servers[1]["url"].format(**{name: v["default"] for name, v in servers[1]["variables"].items()})
    assert template == urljoin(served_at, servers[0]["url"])


def test_the_document_describes_the_routes_and_the_error_shape() -> None:
    spec = json.loads(openapi_document())
    assert set(spec["paths"]) >= {"/jobs", "/jobs/{jobId}"}
    submit = spec["paths"]["/jobs"]["post"]
    assert {"202", "400", "409", "413", "422"} <= set(submit["responses"])
    assert submit["responses"]["422"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorResponse"
    }
    assert spec["components"]["securitySchemes"]["apiKey"] == {
        "type": "apiKey",
        "name": "x-api-key",
        "in": "header",
    }


def test_a_jobs_payload_is_described_by_its_types_model_one_schema_per_type() -> None:
    register_builtin_types()
    spec = json.loads(openapi_document())
    schemas = spec["components"]["schemas"]
    body = spec["paths"]["/jobs"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    public = sorted(registry.public_types(), key=lambda t: t.name)

    assert body["discriminator"]["propertyName"] == "type"
    assert set(body["discriminator"]["mapping"]) == {t.name for t in public}
    assert body["oneOf"] == [{"$ref": ref} for ref in body["discriminator"]["mapping"].values()]
    for job_type in public:
        variant = schemas[body["discriminator"]["mapping"][job_type.name].rsplit("/", 1)[1]]
        assert set(variant["properties"]) == {
            "type",
            "payload",
            "maxAttempts",
            "delaySeconds",
            "runAt",
            "priority",
        }
        assert variant["properties"]["type"]["const"] == job_type.name
        assert set(variant["required"]) == {"type", "payload"}
        payload = schemas[variant["properties"]["payload"]["$ref"].rsplit("/", 1)[1]]
        expected = job_type.payload_model.model_json_schema(by_alias=True)
        assert set(payload["properties"]) == set(expected["properties"])
        assert payload.get("required") == expected.get("required")


# The error statuses each route answers besides those any route can answer before it runs (API Gateway's
# 403, 413, 414 and 429), and no others: the fuzz test (tests/integration/test_api_fuzz.py)
# checks every answer it gets is documented.
BEFORE_THE_ROUTE = {"403", "413", "414", "429"}
ROUTE_ERRORS = {
    ("post", "/jobs"): {"400", "409", "413", "422"},
    ("get", "/jobs"): {"400"},
    ("get", "/jobs/{jobId}"): {"400", "404"},
    ("get", "/jobs/{jobId}/children"): {"400", "404"},
    ("get", "/jobs/{jobId}/deliveries"): {"400", "404"},
    ("post", "/jobs/{jobId}/retry"): {"400", "404", "409"},
    ("post", "/jobs/{jobId}/cancel"): {"400", "404", "409"},
    ("post", "/jobs/{jobId}/events"): {"400", "404", "409"},
    ("post", "/jobs/{jobId}/reschedule"): {"400", "404", "409"},
    ("post", "/jobs/retry"): {"400"},
    ("post", "/jobs/cancel"): {"400"},
    ("post", "/schedules"): {"400", "409", "422"},
    ("get", "/schedules"): {"400"},
    ("get", "/schedules/{scheduleId}"): {"400", "404"},
    ("patch", "/schedules/{scheduleId}"): {"400", "404", "422"},
    ("delete", "/schedules/{scheduleId}"): {"400", "404"},
    ("post", "/schedules/{scheduleId}/run"): {"400", "404"},
    ("get", "/stats"): set(),
    ("post", "/uploads"): {"400"},
    ("get", "/webhook-secret"): {"400"},
    ("post", "/webhook-secret/rotate"): {"400", "409"},
    ("get", "/limits"): {"400"},
    ("get", "/openapi.json"): set(),
}


def test_each_route_documents_only_the_errors_it_gives() -> None:
    """Seen to fail with 429 left out of `_BEFORE_THE_ROUTE` (lambdas/handlers/rest/openapi.py)."""
    spec = json.loads(openapi_document())
    documented = {
        (method, path): {status for status in operation["responses"] if status >= "400"}
        for path, operations in spec["paths"].items()
        for method, operation in operations.items()
    }
    assert documented == {route: BEFORE_THE_ROUTE | errors for route, errors in ROUTE_ERRORS.items()}


def test_the_document_names_the_nesting_limit_and_the_download_links() -> None:
    spec = json.loads(openapi_document())
    bad_request = spec["paths"]["/jobs"]["post"]["responses"]["400"]["description"]
    assert f"deeper than {config.MAX_JSON_DEPTH} levels" in bad_request
    assert "downloads" in spec["components"]["schemas"]["JobView"]["properties"]
    assert set(spec["components"]["schemas"]["DownloadView"]["properties"]) == {"key", "url", "expiresAt"}
