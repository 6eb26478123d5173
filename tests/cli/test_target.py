"""Where `offload` sends its requests: flags, a deployed stack's outputs file, or the local runtime."""

import argparse
import json
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from offload_cli.errors import CliError
from offload_cli.target import Signer, resolve_target


def _args(**given: str | None) -> argparse.Namespace:
    return argparse.Namespace(**{"url": None, "api_key": None, "key": None, "outputs_file": None, **given})


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OFFLOAD_URL", "OFFLOAD_API_KEY", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")


def test_outputs_file_gives_the_url_and_the_key_is_read_from_api_gateway(tmp_path: Path) -> None:
    with mock_aws():
        key = boto3.client("apigateway").create_api_key(
            name="offload", value="a-deployed-key-value-123", enabled=True
        )
        outputs = tmp_path / "outputs.json"
        outputs.write_text(
            json.dumps(
                {
                    "Offload": {
                        "ApiUrl": "https://abc.execute-api.eu-west-1.amazonaws.com/v1/",
                        "ApiKeyId": key["id"],
                    }
                }
            )
        )

        target = resolve_target(_args(outputs_file=str(outputs)), state_file=tmp_path / "none.json")

    assert target.url == "https://abc.execute-api.eu-west-1.amazonaws.com/v1/"
    assert target.api_key == "a-deployed-key-value-123"
    assert not target.local


def test_flags_win_and_loopback_means_the_local_runtime(tmp_path: Path) -> None:
    deployed = resolve_target(
        _args(url="https://x.example/v1", api_key="k"), state_file=tmp_path / "none.json"
    )
    local = resolve_target(
        _args(url="http://127.0.0.1:3000/v1/", api_key="k"), state_file=tmp_path / "none.json"
    )

    assert (deployed.url, deployed.local) == ("https://x.example/v1/", False)
    assert local.local
    assert local.local_base == "http://127.0.0.1:3000/_local/"


def test_default_is_the_running_local_runtime(tmp_path: Path) -> None:
    state = tmp_path / "runtime.json"
    state.write_text(json.dumps({"url": "http://127.0.0.1:3000/v1/", "apiKey": "local-key"}))

    target = resolve_target(_args(), state_file=state)

    assert (target.url, target.api_key, target.local) == ("http://127.0.0.1:3000/v1/", "local-key", True)


def test_the_local_runtimes_own_endpoints_are_called_with_the_operators_key(tmp_path: Path) -> None:
    """/_local/ answers the operator alone: `offload tail` with a client's key still reads it. Seen to
    fail with `local_headers` sending the target's own key."""
    state = tmp_path / "runtime.json"
    keys = [
        {"name": "alpha", "role": "client", "id": "a", "value": "alpha-value"},
        {"name": "operator", "role": "operator", "id": "o", "value": "operator-value"},
    ]
    state.write_text(json.dumps({"url": "http://127.0.0.1:3000/v1/", "apiKey": "alpha-value", "keys": keys}))

    target = resolve_target(_args(), state_file=state)

    assert target.headers()["x-api-key"] == "alpha-value"
    assert target.local_headers() == {"x-api-key": "operator-value"}


def test_nothing_to_talk_to_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CliError, match="make run"):
        resolve_target(_args(), state_file=tmp_path / "none.json")
    with pytest.raises(CliError, match="api-key"):
        resolve_target(_args(url="https://x.example/v1"), state_file=tmp_path / "none.json")


def test_key_picks_a_named_key_of_the_outputs_file(tmp_path: Path) -> None:
    with mock_aws():
        gateway = boto3.client("apigateway")
        ids = {
            name: gateway.create_api_key(name=name, value=f"{name}-value-0123456789", enabled=True)["id"]
            for name in ("beta_team", "operator")
        }
        outputs = tmp_path / "outputs.json"
        outputs.write_text(
            json.dumps(
                {
                    "Offload": {
                        "ApiUrl": "https://abc.execute-api.eu-west-1.amazonaws.com/v1/",
                        "ApiKeyId": "first-client-id",
                        "ApiKeyIdBetaTeam": ids["beta_team"],
                        "OperatorKeyId": ids["operator"],
                    }
                }
            )
        )

        def key(name: str) -> str:
            args = _args(outputs_file=str(outputs), key=name)
            return resolve_target(args, state_file=tmp_path / "none.json").api_key

        assert key("beta_team") == "beta_team-value-0123456789"
        assert key("operator") == "operator-value-0123456789"
        with pytest.raises(CliError, match="no ApiKeyIdGamma output"):
            key("gamma")


def test_key_and_api_key_or_url_do_not_mix(tmp_path: Path) -> None:
    with pytest.raises(CliError, match="not both"):
        resolve_target(_args(api_key="k", key="operator"), state_file=tmp_path / "none.json")
    with pytest.raises(CliError, match="with --url, give --api-key"):
        resolve_target(_args(url="https://x.example/v1", key="operator"), state_file=tmp_path / "none.json")


def test_a_runtime_with_iam_callers_is_signed_for_as_its_client_role_or_the_one_named(tmp_path: Path) -> None:
    """Seen to fail with the state's `iam` entry refused (the CLI spoke API keys only)."""
    state = tmp_path / "runtime.json"
    caller = {"accessKeyId": "AKIA1", "secretAccessKey": "s1", "sessionToken": "t1"}
    callers = [{"name": "default", "role": "client", **caller}, {"name": "ops", "role": "operator", **caller}]
    state.write_text(
        json.dumps({"url": "http://127.0.0.1:3000/v1/", "keys": [], "region": "eu-west-1", "iam": callers})
    )

    target = resolve_target(_args(), state_file=state)

    assert (target.api_key, target.signer) == (None, Signer("eu-west-1", ("AKIA1", "s1", "t1")))
    assert "x-api-key" not in target.headers()
    with pytest.raises(CliError, match="no IAM caller named 'nobody'"):
        resolve_target(_args(key="nobody"), state_file=state)
