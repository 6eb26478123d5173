"""docs/openapi.json is generated from the api handler's routes and models, and kept current."""

import json
from pathlib import Path

from lambdas import config
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


def test_the_document_names_the_nesting_limit_and_the_download_links() -> None:
    spec = json.loads(openapi_document())
    bad_request = spec["paths"]["/jobs"]["post"]["responses"]["400"]["description"]
    assert f"deeper than {config.MAX_JSON_DEPTH} levels" in bad_request
    assert "downloads" in spec["components"]["schemas"]["JobView"]["properties"]
    assert set(spec["components"]["schemas"]["DownloadView"]["properties"]) == {"key", "url", "expiresAt"}
