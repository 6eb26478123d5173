"""docs/openapi.json is generated from the api handler's routes and models, and kept current."""

import json
from pathlib import Path

from lambdas.handlers.api import openapi_document

SPEC = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


def test_the_committed_openapi_document_is_current() -> None:
    assert SPEC.read_text() == openapi_document(), "docs/openapi.json is stale: run `make openapi`"


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
    request = spec["components"]["schemas"]["SubmitJobRequest"]
    assert set(request["properties"]) == {"type", "payload", "maxAttempts", "delaySeconds"}
