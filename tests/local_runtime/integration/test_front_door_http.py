"""The front door over real sockets: every request gets an HTTP answer in the API's JSON error shape.

No hang, no dropped connection and no HTML, whatever the client sends: unknown methods, a bad or
negative Content-Length, request lines and headers past the server's limits. And a kept-alive
connection gets each response in one piece (no stall between the headers and the body).
"""

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from local_runtime.front_door import ApiKey, FrontDoor, Gateway
from local_runtime.lambda_pool import Invocation
from local_runtime.template import ApiSpec, GatewayResponse, Route

TEMPLATE = '{"error": {"code": "%s", "message": $context.error.messageString}}'
API = ApiSpec(
    logical_id="Api",
    api_id="abcdef1234",
    stage="v1",
    routes=(Route("POST", "/jobs", "ApiFn", True), Route("GET", "/jobs/{jobId}", "ApiFn", True)),
    gateway_responses={
        "MISSING_AUTHENTICATION_TOKEN": GatewayResponse(
            404, {"application/json": TEMPLATE % "not_found"}, {}
        ),
        "REQUEST_TOO_LARGE": GatewayResponse(413, {"application/json": TEMPLATE % "payload_too_large"}, {}),
        "DEFAULT_4XX": GatewayResponse(None, {"application/json": TEMPLATE % "bad_request"}, {}),
        "DEFAULT_5XX": GatewayResponse(None, {"application/json": TEMPLATE % "internal_error"}, {}),
    },
)


KEY = ApiKey(id="k1e2y3i4d5", value="local-test-api-key-value")
OPERATOR = ApiKey(id="o1p2e3r4a5", value="local-test-operator-key", name="operator", role="operator")


def _ok(_function: str, _event: dict[str, Any]) -> Invocation:
    return Invocation(request_id="r", ok=True, result={"statusCode": 200, "body": '{"ok": true}'})


def _boom(query: dict[str, list[str]]) -> Any:
    if query.get("after") == ["abc"]:
        raise ValueError("after must be a number")
    raise RuntimeError("a bug in the runtime")


@pytest.fixture(scope="module")
def door() -> Iterator[FrontDoor]:
    gateway = Gateway(API, [KEY, OPERATOR], _ok, account="123456789012", region="us-east-1")
    front_door = FrontDoor(
        gateway, {"/_local/stats": lambda _query: {"up": True}, "/_local/boom": _boom}, port=0
    )
    front_door.start()
    yield front_door
    front_door.stop()


def _exchange(door: FrontDoor, raw: bytes, timeout: float = 5) -> bytes:
    """Send raw bytes, read until the server closes or a full response (by Content-Length) arrived."""
    with socket.create_connection(("127.0.0.1", door.port), timeout=timeout) as sock:
        sock.sendall(raw)
        received = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return received
            received += chunk
            if _complete(received):
                return received


def _complete(received: bytes) -> bool:
    head, sep, body = received.partition(b"\r\n\r\n")
    if not sep:
        return False
    lengths = [
        line.split(b":", 1)[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
    ]
    return bool(lengths) and len(body) >= int(lengths[0])


def _parse(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, body


def _json_error(raw: bytes) -> tuple[int, dict[str, Any]]:
    assert raw, "the connection was dropped without an answer"
    status, headers, body = _parse(raw)
    assert headers["content-type"] == "application/json", raw
    return status, json.loads(body)


@pytest.mark.parametrize("method", ["HEAD", "TRACE", "CONNECT", "PROPFIND"])
def test_any_method_is_answered_as_api_gateway_does(door: FrontDoor, method: str) -> None:
    raw = _exchange(door, f"{method} /v1/jobs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())

    status, headers, body = _parse(raw)
    assert status == 404, raw
    assert headers["content-type"] == "application/json"
    if method == "HEAD":
        assert body == b""
        assert int(headers["content-length"]) > 0  # what a GET would have carried
    else:
        assert json.loads(body) == {"error": {"code": "not_found", "message": "Missing Authentication Token"}}


@pytest.mark.parametrize("length", ["abc", "-1", "1e3", " ", "12, 13"])
def test_a_bad_content_length_is_a_400(door: FrontDoor, length: str) -> None:
    raw = _exchange(
        door,
        f"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nx-api-key: {KEY.value}\r\nContent-Length: {length}\r\n\r\n{{}}".encode(),
    )

    status, document = _json_error(raw)
    assert status == 400
    assert document["error"]["code"] == "bad_request"
    assert "Content-Length" in document["error"]["message"]


def test_two_different_content_lengths_are_a_400(door: FrontDoor) -> None:
    raw = _exchange(
        door,
        b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
    )

    assert _json_error(raw)[0] == 400


def test_a_body_over_api_gateways_limit_is_refused_without_reading_it(door: FrontDoor) -> None:
    raw = _exchange(door, b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 10485761\r\n\r\n{}")

    status, document = _json_error(raw)
    assert (status, document["error"]["code"]) == (413, "payload_too_large")


def test_a_chunked_body_is_refused_with_json(door: FrontDoor) -> None:
    raw = _exchange(
        door, b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
    )

    status, document = _json_error(raw)
    assert status == 411
    assert document["error"]["code"] == "bad_request"


def test_an_oversized_request_line_is_a_json_414(door: FrontDoor) -> None:
    raw = _exchange(door, b"GET /v1/jobs/" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")

    status, document = _json_error(raw)
    assert (status, document["error"]["code"]) == (414, "bad_request")


@pytest.mark.parametrize(
    "headers",
    [b"X-Big: " + b"b" * 70_000 + b"\r\n", b"".join(b"X-%d: v\r\n" % i for i in range(120))],
    ids=["long-header", "too-many-headers"],
)
def test_oversized_headers_are_a_json_431(door: FrontDoor, headers: bytes) -> None:
    raw = _exchange(door, b"GET /v1/jobs/j HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n")

    status, document = _json_error(raw)
    assert (status, document["error"]["code"]) == (431, "bad_request")


def test_a_malformed_request_line_is_a_json_400(door: FrontDoor) -> None:
    raw = _exchange(door, b"NONSENSE\r\n\r\n")

    assert _json_error(raw)[0] == 400


def test_kept_alive_responses_arrive_in_one_piece(door: FrontDoor) -> None:
    """Headers and body in one write: with two writes, Nagle holds the body until the headers are
    acknowledged, and a delayed ACK makes that ~40 ms per request on a kept-alive connection."""
    request = f"GET /v1/jobs/j HTTP/1.1\r\nHost: x\r\nx-api-key: {KEY.value}\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", door.port), timeout=5) as sock:
        for _ in range(5):
            sock.sendall(request)
            first = sock.recv(65536)
            assert first.endswith(b'{"ok": true}'), first


def test_a_failure_inside_the_runtime_is_a_json_502_not_a_dropped_connection(door: FrontDoor) -> None:
    raw = _exchange(
        door, f"GET /_local/boom HTTP/1.1\r\nHost: x\r\nx-api-key: {OPERATOR.value}\r\n\r\n".encode()
    )

    status, document = _json_error(raw)
    assert (status, document["error"]["code"]) == (502, "internal_error")


def test_a_bad_local_query_is_a_400(door: FrontDoor) -> None:
    raw = _exchange(
        door,
        f"GET /_local/boom?after=abc HTTP/1.1\r\nHost: x\r\nx-api-key: {OPERATOR.value}\r\n\r\n".encode(),
    )

    assert _json_error(raw) == (400, {"message": "after must be a number"})


def test_the_runtimes_own_endpoints_answer_the_operator_alone(door: FrontDoor) -> None:
    """/_local/ shows every client's transitions and moto's endpoint: a client's key is 403, as is no
    key. Seen to fail with `may_use_local` taking any of the runtime's keys."""
    for headers in (f"x-api-key: {KEY.value}\r\n", ""):
        raw = _exchange(door, f"GET /_local/stats HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode())
        assert raw.startswith(b"HTTP/1.1 403"), raw
    raw = _exchange(
        door, f"GET /_local/stats HTTP/1.1\r\nHost: x\r\nx-api-key: {OPERATOR.value}\r\n\r\n".encode()
    )
    assert raw.startswith(b"HTTP/1.1 200"), raw
    assert raw.endswith(b'{"up": true}'), raw
