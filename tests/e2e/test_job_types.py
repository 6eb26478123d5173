"""Each job type end to end through the running local runtime, as `make demo` submits them."""

import json
import subprocess
import sys
import threading

import pytest
from standardwebhooks import Webhook

from lambdas.config import KeyRole
from local_runtime import demo
from local_runtime.runtime import LocalRuntime
from offload_cli.target import Target
from tests.e2e.conftest import Client

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("e2e")]


@pytest.fixture(scope="module")
def target(runtime: LocalRuntime) -> Target:
    return Target(runtime.url, runtime.api_key, local=True)


def test_email_is_sent_through_ses(client: Client, runtime: LocalRuntime, target: Target) -> None:
    job = client.wait_for_status(demo.submit_email(target), {"done", "dead"}, timeout=30)

    assert job["status"] == "done", job
    assert job["result"]["recipients"] == 1
    assert runtime.moto.client("ses").get_send_quota()["SentLast24Hours"] >= 1


def test_fanout_delivers_signed_events_and_settles_every_endpoint(
    client: Client, runtime: LocalRuntime, target: Target
) -> None:
    receivers = demo.Receivers()
    try:
        job = client.wait_for_status(demo.submit_fanout(target, receivers), {"done", "dead"}, timeout=60)
    finally:
        receivers.close()

    assert job["status"] == "done", job
    assert job["children"] == {"total": 3, "pending": 0, "delivered": 1, "failed": 2, "cancelled": 0}
    by_path = {path: [(h, b) for p, h, b in receivers.received if p == path] for path in demo.RECEIVERS}
    assert (len(by_path["/ok"]), len(by_path["/gone"]), len(by_path["/down"])) == (1, 1, demo.FANOUT_ATTEMPTS)
    secret = client.get("webhook-secret").json()["secret"]  # the submitting key's own
    headers, body = by_path["/ok"][0]
    event = Webhook(secret).verify(body, {k.lower(): v for k, v in headers.items()})
    assert event["data"] == {"message": "hello, receivers"}


def test_image_is_thumbnailed_into_the_bucket(client: Client, runtime: LocalRuntime, target: Target) -> None:
    job = client.wait_for_status(demo.submit_image(target), {"done", "dead"}, timeout=60)

    assert job["status"] == "done", job
    bucket = runtime.provisioned.outputs["UploadsBucketName"]
    stored = {o["Key"] for o in runtime.moto.client("s3").list_objects_v2(Bucket=bucket).get("Contents", [])}
    assert set(job["result"]["keys"]) <= stored
    assert len(job["result"]["thumbnails"]) == 2


def test_cli_submits_waits_and_tails(client: Client, runtime: LocalRuntime) -> None:
    """A client submits; `offload tail` follows the runtime's /_local/ logs, which answer the operator's
    key alone (they show every client's jobs): given --url, the CLI has no runtime state to read that key
    from, so the tail is given it, as an operator following a runtime by its URL would."""
    cli = [sys.executable, "-m", "offload_cli", "--url", runtime.url, "--api-key", runtime.api_key]
    (operator,) = [key.value for key in runtime.keys if key.role == KeyRole.OPERATOR]
    as_operator = [sys.executable, "-m", "offload_cli", "--url", runtime.url, "--api-key", operator]
    tail = subprocess.Popen([*as_operator, "tail"], stdout=subprocess.PIPE, text=True)
    tailed: list[str] = []

    def read() -> None:
        assert tail.stdout is not None
        for line in tail.stdout:
            tailed.append(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        submitted = subprocess.run(
            [
                *cli,
                "submit",
                "test_echo",
                "--payload",
                '{"value": "from the cli"}',
                "--wait",
                "--timeout",
                "30",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert submitted.returncode == 0, submitted.stderr
        job = json.loads(submitted.stdout)  # one document: the job as it ended
        assert job["status"] == "done"
        client.wait_until(
            lambda: f"job {job['jobId']}" in "".join(tailed) and "processing \u2192 done" in "".join(tailed),
            timeout=30,
            what="the tail showing the job done",
        )
    finally:
        tail.terminate()
        tail.wait(timeout=10)

    status = subprocess.run([*cli, "status", job["jobId"]], capture_output=True, text=True, timeout=30)
    assert json.loads(status.stdout)["result"] == {"echo": "from the cli", "attempt": 1}
