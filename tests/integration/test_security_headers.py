"""Every answer of the api function carries the security headers: success, refusal and unknown route."""

import pytest

from lambdas.handlers.rest.security import SECURITY_HEADERS
from tests.support.pipeline import Pipeline

pytestmark = pytest.mark.usefixtures("test_types")


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("POST", "/jobs", {"type": "test_echo", "payload": {}}, 202),
        ("GET", "/jobs/no-such-job", None, 404),
        ("POST", "/jobs", "{not json", 400),
        ("POST", "/jobs", {"type": "no_such_type", "payload": {}}, 422),
        ("GET", "/nowhere", None, 404),
    ],
)
def test_data_answers_carry_the_security_headers(
    pipeline: Pipeline, method: str, path: str, body: object, status: int
) -> None:
    raw = body if isinstance(body, str) else None
    response = pipeline.request(method, path, None if raw else body, raw_body=raw)
    assert response.status == status
    for name, value in SECURITY_HEADERS.items():
        assert response.headers[name] == value
