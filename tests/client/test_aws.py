"""offload_client.aws.SigV4Auth: the region it signs for, and what it does without credentials. (That
its signatures verify is the local runtime's test: tests/local_runtime/unit/test_sigv4.py.)"""

import botocore.session
import pytest
import requests
from offload_client.aws import MissingCredentials, SigV4Auth

URL = "https://abc123.execute-api.eu-central-1.amazonaws.com/v1/jobs"


def _session(region: str | None = None, credentials: bool = True) -> botocore.session.Session:
    session = botocore.session.Session()
    if credentials:
        session.set_credentials("AKIDEXAMPLE", "secret", "token")
    if region:
        session.set_config_variable("region", region)
    return session


def _scope(auth: SigV4Auth, url: str = URL) -> str:
    prepared = auth(requests.Request("GET", url).prepare())
    return prepared.headers["Authorization"].split("Credential=")[1].split(",")[0]


def test_the_region_of_an_execute_api_url_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen to fail with the argument preferred to the URL's region."""
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    scope = _scope(SigV4Auth("ap-south-1", session=_session("sa-east-1")))
    assert scope.split("/")[2:] == ["eu-central-1", "execute-api", "aws4_request"]


def test_elsewhere_the_argument_then_the_chains_region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    local = "http://127.0.0.1:3000/v1/jobs"
    assert _scope(SigV4Auth("ap-south-1", session=_session("sa-east-1")), local).split("/")[2] == "ap-south-1"
    assert _scope(SigV4Auth(session=_session("sa-east-1")), local).split("/")[2] == "sa-east-1"
    assert _scope(SigV4Auth(session=_session()), local).split("/")[2] == "us-west-2"


def test_the_session_token_is_sent_and_no_credentials_is_an_error() -> None:
    prepared = SigV4Auth(session=_session())(requests.Request("GET", URL).prepare())
    assert prepared.headers["X-Amz-Security-Token"] == "token"
    assert "x-amz-date" in prepared.headers["Authorization"]
    empty = _session(credentials=False)
    empty.get_component("credential_provider").providers = []
    with pytest.raises(MissingCredentials):
        SigV4Auth(session=empty)(requests.Request("GET", URL).prepare())
