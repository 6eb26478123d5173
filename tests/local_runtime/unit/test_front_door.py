"""The front door's API Gateway behaviour, without sockets: routing, the key check, the proxy event."""

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from local_runtime.front_door import ApiKey, Gateway, HttpRequest
from local_runtime.lambda_pool import Invocation
from local_runtime.template import ApiSpec, GatewayResponse, Route, UsagePlanLimits

SAMPLE = json.loads((Path(__file__).parents[2] / "events" / "api_post_job.json").read_text())
KEY = ApiKey(id="k1e2y3i4d5", value="local-test-api-key-value")
API = ApiSpec(
    logical_id="Api",
    api_id="abcdef1234",
    stage="prod",
    routes=(
        Route("POST", "/jobs", "ApiFn", True),
        Route("GET", "/jobs/{jobId}", "ApiFn", True),
        Route("POST", "/jobs/retry", "ApiFn", True),
        Route("GET", "/health", "ApiFn", False),
    ),
    binary_media_types=("image/*",),
    limits=UsagePlanLimits(rate_limit=1, burst_limit=2),
)


class Recorder:
    def __init__(self, result: Any = None, ok: bool = True) -> None:
        self.events: list[dict[str, Any]] = []
        self.result = result if result is not None else {"statusCode": 200, "body": "{}"}
        self.ok = ok

    def __call__(self, function: str, event: dict[str, Any]) -> Invocation:
        self.events.append(event)
        return Invocation(request_id="r", ok=self.ok, result=self.result if self.ok else None)


def _request(
    method: str, path: str, headers: list[tuple[str, str]] | None = None, body: bytes = b"", query=()
) -> HttpRequest:
    return HttpRequest(
        method,
        path,
        list(query),
        headers if headers is not None else [("x-api-key", KEY.value)],
        body,
        "127.0.0.1",
    )


def _gateway(recorder: Recorder, api: ApiSpec = API) -> Gateway:
    return Gateway(api, [KEY], recorder, account="123456789012", region="us-east-1")


def test_post_event_has_the_shape_api_gateway_sends() -> None:
    recorder = Recorder()
    headers = [("Content-Type", "application/json"), ("User-Agent", "curl/8.5.0"), ("x-api-key", KEY.value)]

    _gateway(recorder).handle(_request("POST", "/jobs", headers, SAMPLE["body"].encode()))

    (event,) = recorder.events
    assert sorted(event) == sorted(SAMPLE)
    assert sorted(event["requestContext"]) == sorted(SAMPLE["requestContext"])
    assert sorted(event["requestContext"]["identity"]) == sorted(SAMPLE["requestContext"]["identity"])
    assert (event["resource"], event["path"], event["httpMethod"]) == ("/jobs", "/jobs", "POST")
    assert event["body"] == SAMPLE["body"]
    assert event["isBase64Encoded"] is False
    assert event["requestContext"]["identity"]["apiKey"] == KEY.value
    assert event["requestContext"]["identity"]["apiKeyId"] == KEY.id
    assert event["requestContext"]["path"] == "/prod/jobs"
    assert event["multiValueHeaders"]["Content-Type"] == ["application/json"]
    assert event["pathParameters"] is None
    assert event["queryStringParameters"] is None


def test_path_parameters_and_repeated_query_parameters() -> None:
    recorder = Recorder()

    _gateway(recorder).handle(_request("GET", "/jobs/j-42", query=[("a", "1"), ("a", "2"), ("b", "")]))

    (event,) = recorder.events
    assert event["resource"] == "/jobs/{jobId}"
    assert event["pathParameters"] == {"jobId": "j-42"}
    assert event["queryStringParameters"] == {"a": "2", "b": ""}
    assert event["multiValueQueryStringParameters"] == {"a": ["1", "2"], "b": [""]}
    assert event["body"] is None


def test_binary_media_type_body_arrives_base64_encoded() -> None:
    recorder = Recorder()
    png = b"\x89PNG\r\n\x1a\n\x00\xff"

    _gateway(recorder).handle(
        _request("POST", "/jobs", [("x-api-key", KEY.value), ("content-type", "image/png")], png)
    )

    (event,) = recorder.events
    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == png


@pytest.mark.parametrize("headers", [[], [("x-api-key", "wrong")]], ids=["missing", "wrong"])
def test_method_requiring_a_key_answers_403_without_a_valid_one(headers: list[tuple[str, str]]) -> None:
    recorder = Recorder()

    response = _gateway(recorder).handle(_request("POST", "/jobs", headers))

    assert (response.status, json.loads(response.body)) == (403, {"message": "Forbidden"})
    assert recorder.events == []


def test_method_without_key_requirement_is_open() -> None:
    response = _gateway(Recorder()).handle(_request("GET", "/health", []))

    assert response.status == 200


def test_unknown_route_or_method_answers_like_api_gateway() -> None:
    gateway = _gateway(Recorder())

    # GET /jobs/retry: the literal resource matches first, and it has no GET (no fall back to {jobId}).
    for method, path in (("GET", "/nowhere"), ("DELETE", "/jobs"), ("GET", "/jobs/retry")):
        response = gateway.handle(_request(method, path))
        assert (response.status, json.loads(response.body)) == (
            403,
            {"message": "Missing Authentication Token"},
        )


def test_usage_plan_burst_is_throttled() -> None:
    gateway = _gateway(Recorder())

    statuses = [gateway.handle(_request("GET", "/jobs/j")).status for _ in range(3)]

    assert statuses == [200, 200, 429]


def test_proxy_response_is_mapped_to_http() -> None:
    result = {
        "statusCode": 202,
        "headers": {"Location": "/jobs/j"},
        "multiValueHeaders": {"Set-Cookie": ["a=1", "b=2"]},
        "body": base64.b64encode(b'{"jobId": "j"}').decode(),
        "isBase64Encoded": True,
    }

    response = _gateway(Recorder(result)).handle(_request("POST", "/jobs"))

    assert response.status == 202
    assert response.body == b'{"jobId": "j"}'
    assert ("Location", "/jobs/j") in response.headers
    assert [v for k, v in response.headers if k == "Set-Cookie"] == ["a=1", "b=2"]


@pytest.mark.parametrize(
    "recorder", [Recorder(ok=False), Recorder({"body": "no status"})], ids=["error", "malformed"]
)
def test_function_error_or_malformed_response_is_a_502(recorder: Recorder) -> None:
    response = _gateway(recorder).handle(_request("POST", "/jobs"))

    assert (response.status, json.loads(response.body)) == (502, {"message": "Internal server error"})


def test_the_stacks_gateway_responses_shape_gateway_errors() -> None:
    template = '{"error": {"code": "forbidden", "message": $context.error.messageString}}'
    api = ApiSpec(
        **{
            **API.__dict__,
            "gateway_responses": {
                "INVALID_API_KEY": GatewayResponse(403, {"application/json": template}, {}),
                "MISSING_AUTHENTICATION_TOKEN": GatewayResponse(
                    404, {"application/json": template.replace("forbidden", "not_found")}, {}
                ),
                "DEFAULT_5XX": GatewayResponse(
                    None, {"application/json": template.replace("forbidden", "internal")}, {}
                ),
            },
        }
    )

    forbidden = _gateway(Recorder(), api).handle(_request("POST", "/jobs", []))
    unknown = _gateway(Recorder(), api).handle(_request("GET", "/nowhere"))
    failed = _gateway(Recorder(ok=False), api).handle(_request("POST", "/jobs"))

    assert (forbidden.status, json.loads(forbidden.body)) == (
        403,
        {"error": {"code": "forbidden", "message": "Forbidden"}},
    )
    assert (unknown.status, json.loads(unknown.body)) == (
        404,
        {"error": {"code": "not_found", "message": "Missing Authentication Token"}},
    )
    assert (failed.status, json.loads(failed.body)) == (
        502,
        {"error": {"code": "internal", "message": "Internal server error"}},
    )
