"""`offload webhook-secret` and the commands `make run` prints, against the running local runtime."""

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from standardwebhooks import Webhook

from local_runtime.__main__ import parse_args
from local_runtime.runtime import LocalRuntime
from local_runtime.state import REPO_ROOT
from tests.e2e.conftest import Client

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("e2e")]


def test_webhook_secret_prints_the_keys_own_and_the_operator_rotates_it(runtime: LocalRuntime) -> None:
    """`offload webhook-secret` prints the key's own secret; the operator's `--client ID --rotate` gives
    that client a new one, which the client's key then prints; a client's key may not rotate."""
    (alpha,) = [key for key in runtime.keys if key.value == runtime.api_key]
    (operator,) = [key for key in runtime.keys if key.role == "operator"]

    before = _offload(runtime, alpha.value, "webhook-secret")
    refused = _offload(runtime, alpha.value, "webhook-secret", "--client", alpha.id, "--rotate")
    rotated = _offload(runtime, operator.value, "webhook-secret", "--client", alpha.id, "--rotate", "--json")
    after = _offload(runtime, alpha.value, "webhook-secret")

    assert (before.returncode, before.stderr) == (0, "")
    Webhook(before.stdout.strip())  # what a receiver does with it: a valid Standard Webhooks secret
    assert refused.returncode != 0
    assert "forbidden" in refused.stderr
    assert rotated.returncode == 0, rotated.stderr
    document = json.loads(rotated.stdout)
    assert document["client"] == alpha.id
    assert document["previousValidUntil"] is not None
    assert after.stdout.strip() == document["secret"] != before.stdout.strip()


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


def _offload(runtime: LocalRuntime, key: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """`offload` as a user runs it, in its own process, against the runtime with this key's value."""
    return subprocess.run(
        [sys.executable, "-m", "offload_cli", "--url", runtime.url, "--api-key", key, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200"},
    )


def _row(listing: str, job_id: str) -> list[str]:
    """The table row of `job_id` split into words ([] when the job is not listed)."""
    rows = [line.split() for line in listing.splitlines() if line.split()[:1] == [job_id]]
    return rows[0] if rows else []


def test_a_dead_job_is_found_explained_and_retried_to_done(
    client: Client, runtime: LocalRuntime, tmp_path: Path
) -> None:
    # given a job that dies of a cause the operator can fix
    blocker = tmp_path / "blocker"
    blocker.touch()
    job_id = client.submit("test_blocked", {"blocker": str(blocker)}, maxAttempts=1)
    client.wait_for_status(job_id, {"dead"}, timeout=30)

    listed = _offload(runtime, runtime.api_key, "list", "--status", "dead", "--type", "test_blocked")
    shown = _offload(runtime, runtime.api_key, "show", job_id)

    assert listed.returncode == 0, listed.stderr
    assert _row(listed.stdout, job_id)[1:5] == ["test_blocked", "dead", "normal", "1/1"]
    assert f"blocked by {blocker}" in listed.stdout
    assert shown.returncode == 0, shown.stderr
    assert f"  last error    blocked by {blocker}" in shown.stdout.splitlines()
    attempts = shown.stdout.split("attempts (oldest first)\n")[1].splitlines()
    assert attempts[1].split()[0] == "1"
    assert " dead " in attempts[1]
    assert attempts[1].endswith(f"blocked by {blocker}")

    # when the cause is gone and the job is retried
    blocker.unlink()
    retried = _offload(runtime, runtime.api_key, "retry", job_id)

    # then it runs again to done, and its history keeps the failed attempt
    assert (retried.returncode, retried.stdout) == (0, f"{job_id}  retried, now pending\n"), retried.stderr
    assert client.wait_for_status(job_id, {"done", "dead"}, timeout=30)["status"] == "done"
    again = json.loads(_offload(runtime, runtime.api_key, "show", job_id, "--json").stdout)
    assert [(h["attempt"], h["outcome"]) for h in again["job"]["history"]] == [(1, "dead"), (2, "done")]


def test_a_delayed_job_is_cancelled_once(client: Client, runtime: LocalRuntime) -> None:
    job_id = client.submit("test_echo", {"value": "never"}, delaySeconds=600)

    cancelled = _offload(runtime, runtime.api_key, "cancel", job_id)
    again = _offload(runtime, runtime.api_key, "cancel", job_id)

    assert (cancelled.returncode, cancelled.stdout) == (0, f"{job_id}  cancelled\n")
    assert client.job(job_id)["status"] == "cancelled"
    assert again.returncode == 4
    assert "answered 409: not_cancellable" in again.stderr
    assert again.stderr.count("\n") == 1


def _key(runtime: LocalRuntime, name: str) -> str:
    (value,) = [key.value for key in runtime.keys if key.name == name]
    return value


def test_a_client_sees_and_acts_on_its_own_jobs_only(client: Client, runtime: LocalRuntime) -> None:
    alpha, beta, operator = (_key(runtime, name) for name in ("alpha", "beta", "operator"))
    job_id = client.submit("test_echo", {"value": "alpha's"}, delaySeconds=600)  # client: alpha's key

    listed = {
        name: _offload(runtime, key, "list", "--type", "test_echo", "--limit", "100", "--json")
        for name, key in (("alpha", alpha), ("beta", beta), ("operator", operator))
    }
    shown = _offload(runtime, beta, "show", job_id)
    cancelled = _offload(runtime, beta, "cancel", job_id)
    bulk = _offload(runtime, beta, "retry", "--all-dead")

    seen = {
        name: [json.loads(line)["jobId"] for line in done.stdout.splitlines()]
        for name, done in listed.items()
    }
    assert job_id in seen["alpha"]
    assert job_id not in seen["beta"]
    assert job_id in seen["operator"]
    assert (shown.returncode, cancelled.returncode, bulk.returncode) == (4, 4, 4)
    assert f"GET /v1/jobs/{job_id} answered 404" in shown.stderr  # exactly as for a job that does not exist
    assert f"POST /v1/jobs/{job_id}/cancel answered 404" in cancelled.stderr
    assert "bulk retry needs the operator key" in bulk.stderr
    assert client.job(job_id)["status"] == "pending"  # beta's cancel changed nothing
    assert _offload(runtime, operator, "cancel", job_id).returncode == 0


@pytest.fixture(scope="module")
def as_make_runs() -> Iterator[LocalRuntime]:
    """The runtime as `python -m local_runtime -c clientKeys=alpha,beta` starts it, with the test job types.

    Its worker keeps the stack's 60 s timeout: a bulk ops job stops a page early when less than 15 s of
    its invocation is left (lambdas/lifecycle/ops_jobs/job.py RESERVE_MS), more than the shared runtime's 8 s."""
    settings = parse_args(["--port", "0", "-c", "clientKeys=alpha,beta"])
    settings.quiet = True
    settings.state_file = None
    settings.extra_modules = ("tests.e2e.job_types",)
    started = LocalRuntime(settings).start()
    yield started
    started.stop()


def test_the_operator_retries_every_dead_job_of_a_type(as_make_runs: LocalRuntime, tmp_path: Path) -> None:
    client = Client(as_make_runs)
    blocker = tmp_path / "blocker"
    blocker.touch()
    job_ids = [client.submit("test_blocked", {"blocker": str(blocker)}, maxAttempts=1) for _ in range(2)]
    for job_id in job_ids:
        client.wait_for_status(job_id, {"dead"}, timeout=30)
    blocker.unlink()

    done = _offload(
        as_make_runs,
        _key(as_make_runs, "operator"),
        "retry",
        "--all-dead",
        "--type",
        "test_blocked",
        "--wait",
    )

    assert done.returncode == 0, done.stdout + done.stderr
    started, finished = done.stdout.splitlines()
    ops_id = started.split()[-1].rstrip(")")
    assert started == f"bulk retry started as ops job {ops_id} (see it with: offload show {ops_id})"
    assert finished == f"ops job {ops_id} done: matched 2, applied 2, skipped 0"
    for job_id in job_ids:
        assert client.wait_for_status(job_id, {"done", "dead"}, timeout=30)["status"] == "done"
