"""`offload` against a stack with IAM callers (auth=iam): it signs with SigV4, from botocore's credential
chain (`--iam`) or, for the local runtime, with a role session its state file lists."""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from local_runtime.runtime import LocalRuntime
from offload_cli import api
from offload_cli.errors import ExitCode
from offload_cli.target import resolve_target

pytestmark = pytest.mark.slow


def _state(runtime: LocalRuntime) -> dict[str, Any]:
    state: dict[str, Any] = json.loads(Path(str(runtime.settings.state_file)).read_text())
    return state


def _offload(
    runtime: LocalRuntime, caller: dict[str, str], home: Path, *argv: str
) -> subprocess.CompletedProcess[str]:
    """`offload --iam` in its own process, with `caller`'s credentials in the environment (botocore's chain)."""
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "HOME": str(home),  # no AWS config or credentials files of this machine
        "AWS_ACCESS_KEY_ID": caller["accessKeyId"],
        "AWS_SECRET_ACCESS_KEY": caller["secretAccessKey"],
        "AWS_SESSION_TOKEN": caller["sessionToken"],
        "AWS_REGION": _state(runtime)["region"],
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    return subprocess.run(
        [sys.executable, "-m", "offload_cli", "--url", runtime.url, "--iam", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_the_cli_signs_with_the_credential_chain_and_an_unmapped_caller_is_refused(
    iam_runtime: LocalRuntime, tmp_path: Path
) -> None:
    """Seen to fail with `api.client` giving offload_client no `auth` (403 Missing Authentication Token)."""
    callers = {entry["role"]: entry for entry in _state(iam_runtime)["iam"]}
    payload = json.dumps({"to": ["ada@example.com"], "subject": "Hi", "text": "signed"})

    submitted = _offload(
        iam_runtime, callers["client"], tmp_path, "submit", "send_email", "--payload", payload, "--wait"
    )

    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    assert "done" in submitted.stdout
    forged = {**callers["client"], "secretAccessKey": "not-the-secret" + "x" * 26}
    refused = _offload(iam_runtime, forged, tmp_path, "list")
    assert refused.returncode == ExitCode.REFUSED, refused.stdout + refused.stderr


def test_without_flags_the_cli_signs_as_the_local_runtimes_client_role(iam_runtime: LocalRuntime) -> None:
    """Seen to fail with the state file's `iam` entry refused again ("the CLI speaks API keys only")."""
    args = argparse.Namespace(url=None, api_key=None, key=None, outputs_file=None, iam=False)
    target = resolve_target(args, state_file=iam_runtime.settings.state_file)

    listed = api.call(target, "GET", target.endpoint("jobs"))

    assert target.api_key is None
    assert "jobs" in listed
