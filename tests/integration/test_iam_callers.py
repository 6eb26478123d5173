"""IAM mode at the api function: the caller is the mapped role of requestContext.identity.userArn (what
API Gateway verified), never a header or an API key id; a principal no mapping names gets 403."""

from collections.abc import Iterator
from typing import Any

import pytest

from lambdas import config
from lambdas.models import settings
from lambdas.models.iam import IamCallers
from tests.support.pipeline import Pipeline

ALPHA_ROLE = "arn:aws:iam::111122223333:role/alpha-app"
BETA_ROLE = "arn:aws:iam::444455556666:role/beta-worker"
OPERATOR_ROLE = "arn:aws:iam::111122223333:role/ops/offload-operator"
CALLERS = IamCallers(clients={"alpha": ALPHA_ROLE, "beta": BETA_ROLE}, operators=(OPERATOR_ROLE,))
EMAIL = {"to": ["someone@example.com"], "subject": "Hi", "text": "Hello"}


def session(account: str, role: str, name: str = "i-0abc") -> dict[str, Any]:
    """requestContext.identity of a request signed by a session of a role, as API Gateway fills it."""
    return {
        "userArn": f"arn:aws:sts::{account}:assumed-role/{role}/{name}",
        "caller": f"AROAEXAMPLEID:{name}",
        "user": f"AROAEXAMPLEID:{name}",
        "accountId": account,
        "accessKey": "ASIAEXAMPLEKEY",
        "apiKey": None,
        "apiKeyId": None,
    }


ALPHA = session("111122223333", "alpha-app")
BETA = session("444455556666", "beta-worker")
OPERATOR = session("111122223333", "offload-operator", "ops-laptop")


@pytest.fixture
def iam(pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch) -> Iterator[Pipeline]:
    """The pipeline with the api function configured as the auth=iam stack configures it."""
    monkeypatch.delenv(config.ENV_OPERATOR_KEY_ID)
    monkeypatch.setenv(config.ENV_IAM_CALLERS, CALLERS.model_dump_json())
    settings.reset()
    yield pipeline
    settings.reset()


def _submit(iam: Pipeline, identity: dict[str, Any]) -> str:
    response = iam.request("POST", "/jobs", {"type": "send_email", "payload": EMAIL}, identity=identity)
    assert response.status == 202, response.body
    return str(response.body["jobId"])


def test_a_clients_session_owns_what_it_submits_and_no_other_client_sees_it(iam: Pipeline) -> None:
    """Seen to fail with the owner taken from the API key id (every IAM caller then shares one owner)."""
    job_id = _submit(iam, ALPHA)
    assert iam.request("GET", f"/jobs/{job_id}", identity=ALPHA).status == 200
    assert iam.request("GET", f"/jobs/{job_id}", identity=BETA).status == 404
    assert iam.request("POST", f"/jobs/{job_id}/cancel", identity=BETA).status == 404
    listed = iam.request("GET", "/jobs", identity=BETA).body["jobs"]
    assert job_id not in [job["jobId"] for job in listed]


def test_the_operator_role_sees_every_job_and_any_clients_secret(iam: Pipeline) -> None:
    """A role mapped with a path (role/ops/...) is matched by its sessions (assumed-role/<name>/...).
    Seen to fail with operators mapped as clients."""
    job_id = _submit(iam, ALPHA)
    assert iam.request("GET", f"/jobs/{job_id}", identity=OPERATOR).status == 200
    alpha_secret = iam.request("GET", "/webhook-secret", identity=ALPHA).body
    assert alpha_secret["client"] == "alpha"
    read = iam.request("GET", "/webhook-secret?client=alpha", identity=OPERATOR)
    assert read.status == 200, read.body
    assert read.body["secret"] == alpha_secret["secret"]
    assert iam.request("GET", "/webhook-secret?client=alpha", identity=BETA).status == 403


@pytest.mark.parametrize(
    "identity",
    [
        session("111122223333", "someone-else"),  # a role of the account that is not mapped
        session("999999999999", "alpha-app"),  # alpha's role name in another account
        {"userArn": "arn:aws:iam::111122223333:user/alpha-app"},  # a user named like the role
        {"userArn": None},  # nothing verified (a method without IAM authorization)
    ],
    ids=["unmapped-role", "other-account", "iam-user", "no-principal"],
)
def test_a_principal_no_mapping_names_gets_403(iam: Pipeline, identity: dict[str, Any]) -> None:
    """Seen to fail with unmapped principals let through as a client that owns nothing."""
    response = iam.request("POST", "/jobs", {"type": "send_email", "payload": EMAIL}, identity=identity)
    assert response.status == 403
    assert response.body["error"]["code"] == "forbidden"
    assert iam.request("GET", "/stats", identity=identity).status == 403


def test_an_api_key_id_or_a_header_names_no_one(iam: Pipeline) -> None:
    """The fields an unmapped caller could set (a key id, headers) do not make it a client. Seen to fail
    with the API key id consulted first."""
    job_id = _submit(iam, ALPHA)
    forged = {
        **session("111122223333", "intruder"),
        "apiKeyId": "alpha",
        "caller": "alpha",
        "user": "alpha",
    }
    headers = {"x-offload-client": "alpha", "x-api-key": "alpha"}
    assert iam.request("GET", f"/jobs/{job_id}", identity=forged, headers=headers).status == 403
