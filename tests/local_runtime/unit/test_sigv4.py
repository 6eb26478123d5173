"""AWS_IAM at the local front door (auth=iam), without sockets: a request signed by offload_client's
SigV4Auth with a mapped role's credentials reaches the function as that role's session; every other
request gets the 403 API Gateway gives, and the function never runs. The resource policy is the one the
stack synthesizes."""

import json
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

import botocore.session
import pytest
import requests
from offload_client.aws import SigV4Auth

from lambdas import config
from local_runtime.front_door import Gateway, HttpRequest
from local_runtime.gateway import HttpResponse
from local_runtime.sigv4 import CLOCK_SKEW, RoleCredentials, SignatureCheck
from local_runtime.template import ApiSpec, Route
from tests.local_runtime.unit.test_front_door import Recorder

pytestmark = pytest.mark.xdist_group("infra-template")

REGION = "us-east-1"
ALPHA_ROLE = "arn:aws:iam::111122223333:role/alpha-app"
OPERATOR_ROLE = "arn:aws:iam::111122223333:role/ops/offload-operator"
CONTEXT = {"auth": "iam", "iamClients": {"alpha": ALPHA_ROLE}, "iamOperators": [OPERATOR_ROLE]}
HOST = "127.0.0.1:3000"
ALPHA = RoleCredentials.made_for(ALPHA_ROLE)
OPERATOR = RoleCredentials.made_for(OPERATOR_ROLE)
# Signs correctly, but its role is in no mapping: only the resource policy stands in its way.
STRANGER = RoleCredentials.made_for("arn:aws:iam::111122223333:role/someone-else")


@cache
def _policy() -> dict[str, Any]:
    from infra.synth import synthesize

    template = synthesize(CONTEXT)
    (api,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::ApiGateway::RestApi"]
    return dict(api["Properties"]["Policy"])


def _gateway(recorder: Recorder, now: datetime | None = None) -> Gateway:
    api = ApiSpec(
        logical_id="Api",
        api_id="abcdef1234",
        stage="v1",
        routes=(
            Route("POST", "/jobs", "ApiFn", False, "AWS_IAM"),
            Route("GET", "/jobs", "ApiFn", False, "AWS_IAM"),
            Route("GET", "/jobs/{jobId}", "ApiFn", False, "AWS_IAM"),
            Route("GET", "/console", "ApiFn", False, "NONE"),
        ),
        policy=_policy(),
    )
    check = SignatureCheck(
        [ALPHA, OPERATOR, STRANGER], REGION, now=(lambda: now) if now else lambda: datetime.now(UTC)
    )
    return Gateway(api, [], recorder, account="111122223333", region=REGION, signatures=check)


def _signed(
    credentials: RoleCredentials | None,
    method: str = "POST",
    target: str = "/v1/jobs",
    body: bytes = b'{"type": "send_email"}',
    secret: str | None = None,
) -> HttpRequest:
    """The request as the front door receives it, signed the way offload_client signs."""
    prepared = requests.Request(
        method, f"http://{HOST}{target}", data=body, headers={"content-type": "application/json"}
    ).prepare()
    if credentials is not None:
        session = botocore.session.Session()
        session.set_credentials(
            credentials.access_key_id, secret or credentials.secret_access_key, credentials.session_token
        )
        SigV4Auth(REGION, session=session)(prepared)
    headers = [("Host", HOST), *prepared.headers.items()]
    path, _, query = target.partition("?")
    pairs = [tuple(p.split("=", 1)) for p in query.split("&") if p]
    return HttpRequest(method, path.removeprefix("/v1"), pairs, headers, body, "127.0.0.1", target)  # type: ignore[arg-type]


def _refused(response: HttpResponse, recorder: Recorder, message: str) -> None:
    assert response.status == 403
    assert message in json.loads(response.body)["message"]
    assert recorder.events == []


def test_a_mapped_roles_signature_reaches_the_function_as_its_session() -> None:
    recorder = Recorder()
    response = _gateway(recorder).handle(_signed(ALPHA))
    assert response.status == 200
    identity = recorder.events[0]["requestContext"]["identity"]
    assert identity["userArn"] == "arn:aws:sts::111122223333:assumed-role/alpha-app/offload-local"
    assert identity["accountId"] == "111122223333"
    assert identity["accessKey"] == ALPHA.access_key_id
    assert identity["caller"] == identity["user"] == f"{ALPHA.role_id}:offload-local"
    assert identity["apiKeyId"] is None


def test_an_unsigned_request_is_refused() -> None:
    """Seen to fail with the AWS_IAM check skipped (the function then ran)."""
    recorder = Recorder()
    _refused(_gateway(recorder).handle(_signed(None)), recorder, "Missing Authentication Token")


def test_a_signature_made_with_another_secret_is_refused() -> None:
    """Seen to fail with the comparison of signatures removed (any well-formed signature then passed)."""
    recorder = Recorder()
    request = _signed(ALPHA, secret="not-the-secret")
    _refused(_gateway(recorder).handle(request), recorder, "does not match the signature you provided")


@pytest.mark.parametrize("change", ["body", "path", "query", "method"])
def test_a_request_changed_after_signing_is_refused(change: str) -> None:
    """The signature covers the body, path, query and method: seen to fail for the body with the payload
    hash left out of the canonical request (an empty body's hash used instead)."""
    recorder = Recorder()
    method, target = {"path": ("GET", "/v1/jobs/abc"), "query": ("GET", "/v1/jobs/abc?x=5")}.get(
        change, ("GET" if change == "method" else "POST", "/v1/jobs")
    )
    s = _signed(ALPHA, method, target)
    changed = {
        "body": HttpRequest(
            s.method, s.path, s.query, s.headers, b'{"type": "other"}', s.source_ip, s.target
        ),
        "path": HttpRequest(s.method, "/jobs/xyz", s.query, s.headers, s.body, s.source_ip, "/v1/jobs/xyz"),
        "query": HttpRequest(
            s.method, s.path, [("x", "6")], s.headers, s.body, s.source_ip, "/v1/jobs/abc?x=6"
        ),
        "method": HttpRequest("POST", s.path, s.query, s.headers, s.body, s.source_ip, s.target),
    }[change]
    assert _gateway(Recorder()).handle(s).status == 200  # as signed, it passes
    _refused(_gateway(recorder).handle(changed), recorder, "does not match")


def test_a_date_outside_api_gateways_five_minutes_is_refused_and_one_inside_is_not() -> None:
    """Seen to fail with the clock-skew check removed."""
    request = _signed(ALPHA)
    recorder = Recorder()
    signed_at = datetime.now(UTC)
    late = signed_at + CLOCK_SKEW + timedelta(seconds=2)
    _refused(_gateway(recorder, now=late).handle(request), recorder, "Signature expired")
    early = signed_at - CLOCK_SKEW - timedelta(seconds=2)
    _refused(_gateway(recorder, now=early).handle(request), recorder, "Signature not yet current")
    inside = signed_at + CLOCK_SKEW - timedelta(seconds=5)
    assert _gateway(recorder, now=inside).handle(request).status == 200


def test_an_unknown_access_key_or_a_wrong_session_token_is_refused() -> None:
    """Seen to fail with the session token's comparison removed."""
    recorder = Recorder()
    unknown = RoleCredentials.made_for(ALPHA_ROLE)  # the runtime never made these
    _refused(
        _gateway(recorder).handle(_signed(unknown)),
        recorder,
        "security token included in the request is invalid",
    )
    request = _signed(ALPHA)
    swapped = [
        (n, OPERATOR.session_token if n.lower() == "x-amz-security-token" else v) for n, v in request.headers
    ]
    tampered = HttpRequest(
        request.method, request.path, request.query, swapped, request.body, request.source_ip, request.target
    )
    _refused(
        _gateway(recorder).handle(tampered), recorder, "security token included in the request is invalid"
    )


def test_a_scope_of_another_region_is_refused() -> None:
    recorder = Recorder()
    request = _signed(ALPHA)
    other = [
        (n, v.replace(f"/{REGION}/", "/eu-west-1/") if n == "Authorization" else v)
        for n, v in request.headers
    ]
    moved = HttpRequest(
        request.method, request.path, request.query, other, request.body, request.source_ip, request.target
    )
    _refused(_gateway(recorder).handle(moved), recorder, "Credential should be scoped to")


def test_a_valid_signature_of_an_unmapped_role_is_denied_by_the_resource_policy() -> None:
    """Seen to fail with the resource policy not applied at the gateway."""
    recorder = Recorder()
    response = _gateway(recorder).handle(_signed(STRANGER))
    _refused(
        response,
        recorder,
        "assumed-role/someone-else/offload-local is not authorized to perform: execute-api:Invoke",
    )
    assert "with an explicit deny" in json.loads(response.body)["message"]


def test_the_operators_role_with_a_path_is_let_in() -> None:
    recorder = Recorder()
    assert _gateway(recorder).handle(_signed(OPERATOR)).status == 200


def test_the_console_page_needs_no_signature() -> None:
    recorder = Recorder()
    page = HttpRequest("GET", "/console", [], [("Host", HOST)], b"", "127.0.0.1", "/v1/console")
    assert _gateway(recorder).handle(page).status == 200


def test_the_session_token_never_reaches_the_functions_log() -> None:
    """The api function drops x-amz-security-token from the event it logs, as it drops the API key."""
    from lambdas.handlers.rest.identity import without_key_value

    recorder = Recorder()
    _gateway(recorder).handle(_signed(ALPHA))
    cleaned = without_key_value(recorder.events[0])
    assert ALPHA.session_token not in json.dumps(cleaned)
    assert config.ENV_IAM_CALLERS  # the mapping's variable, named once in lambdas.config
