"""`offload webhook-secret` and the commands `make run` prints, against the running local runtime."""

import json
import os
import subprocess
import sys

import pytest
from standardwebhooks import Webhook

from local_runtime.runtime import LocalRuntime
from local_runtime.state import REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("e2e")]


def _moto_secret(runtime: LocalRuntime) -> str:
    assert runtime.provisioned is not None
    arn = runtime.provisioned.function_env("lambdas.handlers.worker.handler")["WEBHOOK_SECRET_ARN"]
    secret: str = runtime.moto.client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"]
    return secret


def test_webhook_secret_prints_the_secret_the_worker_signs_with(runtime: LocalRuntime) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "offload_cli",
            "--url",
            runtime.url,
            "--api-key",
            runtime.api_key,
            "webhook-secret",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert (done.returncode, done.stderr) == (0, "")
    printed = done.stdout.strip()
    assert printed == "whsec_" + _moto_secret(runtime)
    Webhook(printed)  # what a receiver does with it: a valid Standard Webhooks secret


def _printed(banner: str, starts: str) -> str:
    (line,) = [line.strip() for line in banner.splitlines() if line.strip().startswith(starts)]
    return line


@pytest.mark.parametrize("trailing_slash", ["", "/"], ids=["as-printed", "with-slash"])
def test_the_banners_curl_commands_work_as_printed(runtime: LocalRuntime, trailing_slash: str) -> None:
    banner = runtime.banner(1.0)
    api_url = runtime.url.rstrip("/")
    export = _printed(banner, "export API_URL=").replace(f"={api_url} ", f"={api_url}{trailing_slash} ")
    post = _printed(banner, "curl -s -X POST")
    get = _printed(banner, 'curl -s "${API_URL%/}/jobs/JOB_ID"')
    script = f"{export}\n{post}\n"

    submitted = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60, check=True)
    job_id = json.loads(submitted.stdout)["jobId"]
    fetched = subprocess.run(
        ["bash", "-c", f"{export}\n{get.replace('JOB_ID', job_id)}\n"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )

    assert json.loads(fetched.stdout)["jobId"] == job_id


def test_the_banners_cli_command_works_as_printed(
    runtime: LocalRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO_ROOT)  # where `make run` prints it from
    (submit,) = [line.strip() for line in runtime.banner(1.0).splitlines() if " submit send_email " in line]
    # The runtime `make run` starts is found through .local/runtime.json; this one through the environment.
    env = {**os.environ, "OFFLOAD_URL": runtime.url, "OFFLOAD_API_KEY": runtime.api_key}

    done = subprocess.run(
        ["bash", "-c", submit.replace("--wait", "--wait --timeout 60")],
        capture_output=True,
        text=True,
        timeout=90,
        env=env,
    )

    assert done.returncode == 0, done.stderr
    assert '"status": "done"' in done.stdout
