"""offload-client as an application gets it: a fresh virtualenv holding only `pip install ./client` runs
docs/client.md's examples (submit from a web handler, wait, list and retry, verify a webhook) against the
local runtime, driven by the script below. The examples are taken from the doc as printed."""

import json
import os
import re
import subprocess
import textwrap
import time
import venv
from pathlib import Path

import pytest
import requests

from lambdas.jobs import webhook_signing
from local_runtime.runtime import LocalRuntime

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "client.md"
README = ROOT / "README.md"
_BLOCK = re.compile(r"<!-- client-example: (\w+) -->\n```python\n(.*?)```", re.DOTALL)

# Calls the doc's WSGI apps the way a server would, and checks what each example promised.
DRIVER = textwrap.dedent(
    """
    import io, time

    def call(app, body, headers=None):
        environ = {"wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body))}
        environ.update({"HTTP_" + k.upper().replace("-", "_"): v for k, v in (headers or {}).items()})
        seen = {}
        out = b"".join(app(environ, lambda status, headers: seen.update(status=status)))
        return seen["status"], out

    form = json.dumps({"userId": "u-1", "email": "ada@example.com"}).encode()
    status, out = call(send_welcome, form)
    assert status.startswith("202"), (status, out)
    job_id = json.loads(out)["jobId"]
    assert json.loads(call(send_welcome, form)[1])["jobId"] == job_id, "a second click made a second job"
    status, out = call(send_welcome, json.dumps({"userId": "u-2", "email": "not an address"}).encode())
    assert status.startswith("400"), (status, out)

    dead_id = offload.submit("test_needs_marker", {"path": "/nowhere"}, max_attempts=1).job_id
    before = offload.wait(dead_id, timeout=60)
    assert before.status == "dead", before

    EXAMPLE_WAIT

    assert job.status == "done", job
    after = offload.get(dead_id)
    assert after.status_at != before.status_at, "the dead job was not retried"

    EXAMPLE_RECEIVER

    for status_wanted, headers in ((b"204", SIGNED), (b"401", FORGED), (b"401", STALE)):
        status, _ = call(receive, EVENT, headers)
        assert status.encode().startswith(status_wanted), (status, headers)

    # and a real delivery of a fan-out, served by the receiver as a WSGI server serves it
    import threading
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    WSGIRequestHandler.log_message = lambda *args: None
    server = make_server("127.0.0.1", 0, receive)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/hooks"
    payload = {"eventType": "order.paid", "data": {"id": 7}, "endpoints": [{"id": "shop", "url": url}]}
    fanout = offload.wait(offload.submit("webhook_fanout", payload, max_attempts=1).job_id, timeout=60)
    assert fanout.status == "done", fanout
    (delivery,) = offload.children(fanout.job_id)
    assert delivery.status == "done", delivery
    server.shutdown()
    print("all examples ran")
    """
)


def _examples() -> dict[str, str]:
    found = dict(_BLOCK.findall(DOC.read_text()))
    assert set(found) == {"submit", "lambda", "wait", "receiver"}, "docs/client.md lost an example"
    return found


def _key(runtime: LocalRuntime, name: str) -> str:
    (value,) = [key.value for key in runtime.keys if key.name == name]
    return value


def _run(python: Path, script: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The script in the fresh virtualenv, isolated (-I) from this repository and the caller's site."""
    return subprocess.run(
        [python, "-I", str(script)],
        env=env,
        cwd=script.parent,
        capture_output=True,
        text=True,
        timeout=200,
        check=False,
    )


def _fresh_venv(where: Path, requirement: str) -> Path:
    venv.create(where, with_pip=True)
    python = where / "bin" / "python"
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--disable-pip-version-check", requirement],
        check=True,
        timeout=240,
    )
    return python


@pytest.fixture(scope="module")
def fresh_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv with nothing but offload-client and what it depends on (requests, from the registry)."""
    return _fresh_venv(tmp_path_factory.mktemp("client-venv"), str(ROOT / "client"))


@pytest.fixture(scope="module")
def aws_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same with the `aws` extra: offload-client, requests and botocore."""
    return _fresh_venv(tmp_path_factory.mktemp("client-aws-venv"), f"{ROOT / 'client'}[aws]")


def test_the_docs_examples_run_with_only_the_client_installed(
    fresh_python: Path, runtime: LocalRuntime, tmp_path: Path
) -> None:
    """Seen to fail with the doc's submit example given no idempotency key ("a second click made a
    second job"), and with its receiver reading `event["eventType"]`, which a delivery does not carry
    (the real delivery died with the receiver's 500)."""
    examples = _examples()
    # beta's own secret, as `offload webhook-secret` prints it: the real delivery is signed with it.
    secret = requests.get(
        f"{runtime.url}webhook-secret", headers={"x-api-key": _key(runtime, "beta")}, timeout=30
    ).json()["secret"]
    key = webhook_signing.signing_key(secret)
    now = int(time.time())
    # the body a delivery carries (lambdas/jobs/types/webhook_delivery.py)
    event = json.dumps(
        {"event": "order.paid", "client": "beta", "data": {"id": 7}, "timestamp": now}
    ).encode()
    signed = webhook_signing.headers([key], "msg-1", now, event)
    forged = webhook_signing.headers([webhook_signing.signing_key("A" * 44)], "msg-1", now, event)
    stale = webhook_signing.headers([key], "msg-1", now - 600, event)
    script = "\n".join(
        [
            examples["submit"],
            f"EVENT = {event!r}\nSIGNED = {signed!r}\nFORGED = {forged!r}\nSTALE = {stale!r}\n",
            DRIVER.replace("EXAMPLE_WAIT", "job_id = job_id\n" + examples["wait"]).replace(
                "EXAMPLE_RECEIVER", examples["receiver"]
            ),
        ]
    )
    (tmp_path / "app.py").write_text(script)
    env = {
        "PATH": os.environ["PATH"],
        "OFFLOAD_URL": runtime.url,
        # beta's key: the list-and-retry example retries every dead job it can see.
        "OFFLOAD_API_KEY": _key(runtime, "beta"),
        "OFFLOAD_WEBHOOK_SECRET": secret,
    }
    done = _run(fresh_python, tmp_path / "app.py", env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all examples ran" in done.stdout


def test_the_readmes_example_runs_with_only_the_client_installed(
    fresh_python: Path, runtime: LocalRuntime, tmp_path: Path
) -> None:
    """Seen to fail with `wait` returning before the job finished (it printed `pending`)."""
    (example,) = _BLOCK.findall(README.read_text())
    assert example[0] == "readme"
    script = f"API_URL = {runtime.url!r}\nAPI_KEY = {_key(runtime, 'beta')!r}\n{example[1]}"
    (tmp_path / "readme.py").write_text(script)
    done = _run(fresh_python, tmp_path / "readme.py", {"PATH": os.environ["PATH"]})
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "done"


# Runs the doc's Lambda example as Lambda would (twice: a redelivered event), then what must be refused.
IAM_DRIVER = textwrap.dedent(
    """
    import requests
    from offload_client import Forbidden

    event = {"orderId": "o-1", "email": "ada@example.com"}
    # The session's IAM runtime is shared: other tests' jobs of this client role may be listed already.
    before = {j.job_id for j in offload.list()}
    first = handler(event, None)
    assert handler(event, None) == first, "a redelivered event made a second job"
    job = offload.wait(first["jobId"], timeout=60)
    assert job.status == "done", job
    assert [j.job_id for j in offload.list() if j.job_id not in before] == [first["jobId"]]
    assert offload.webhook_secret().client == "default"

    unsigned = requests.post(os.environ["OFFLOAD_URL"] + "jobs", json={"type": "send_email", "payload": {}})
    assert unsigned.status_code == 403 and unsigned.json()["error"]["code"] == "forbidden", unsigned.text
    import botocore.session
    from offload_client import Client
    from offload_client.aws import SigV4Auth

    wrong = botocore.session.Session()
    wrong.set_credentials(os.environ["AWS_ACCESS_KEY_ID"], "not-the-secret", os.environ["AWS_SESSION_TOKEN"])
    try:
        Client(os.environ["OFFLOAD_URL"], auth=SigV4Auth(session=wrong)).get(first["jobId"])
    except Forbidden as refused:
        assert refused.code == "forbidden", refused
    else:
        raise AssertionError("a wrong signature was let in")
    print("signed example ran")
    """
)


def test_the_lambda_example_signs_with_the_credentials_make_run_prints(
    aws_python: Path, iam_runtime: LocalRuntime, tmp_path: Path
) -> None:
    """docs/client.md's Lambda example, in a fresh virtualenv holding `pip install './client[aws]'`,
    signs with the credentials the IAM-mode runtime printed and wrote to runtime.json (botocore's chain
    reads them from the environment, as a function's role arrives). Seen to fail with the runtime's
    signature check accepting any signature ("a wrong signature was let in").

    The listing is compared with the one before the example ran: the IAM runtime is the session's, and
    `offload` signing as the same client role (tests/e2e/test_cli_iam.py) submits jobs there too; the
    example must add exactly its one job (a redelivered event makes none)."""
    state = json.loads(Path(str(iam_runtime.settings.state_file)).read_text())
    (client,) = [entry for entry in state["iam"] if entry["role"] == "client"]
    banner = iam_runtime.banner(0.0)
    for field in ("accessKeyId", "secretAccessKey", "sessionToken"):
        assert client[field] in banner, f"the banner does not print {field}"
    (tmp_path / "fn.py").write_text("\n".join([_examples()["lambda"], IAM_DRIVER]))
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),  # no shared AWS config or credentials files of this machine
        "OFFLOAD_URL": state["url"],
        "AWS_ACCESS_KEY_ID": client["accessKeyId"],
        "AWS_SECRET_ACCESS_KEY": client["secretAccessKey"],
        "AWS_SESSION_TOKEN": client["sessionToken"],
        "AWS_REGION": state["region"],
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    done = _run(aws_python, tmp_path / "fn.py", env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "signed example ran" in done.stdout
