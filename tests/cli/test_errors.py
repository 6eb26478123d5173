"""`offload` never prints a traceback: each failure is one line on stderr and a documented exit code.

The API is played by a real HTTP server on 127.0.0.1 (tests/support/webhook_receiver.py); AWS by
moto in-process. The exit codes are the ones docs/local.md lists.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from local_runtime.moto_server import free_port
from offload_cli.errors import ExitCode
from offload_cli.main import main
from tests.cli.run import against, offload, one_line
from tests.support.webhook_receiver import Receiver, Reply

JOB = {"jobId": "j-1", "type": "send_email", "status": "pending", "attempts": 0}


def test_an_unreachable_api_is_one_line_and_exit_3() -> None:
    """Run as a user runs it: the installed module in its own process, nothing listening on the port."""
    url = f"http://127.0.0.1:{free_port()}/v1/"

    done = subprocess.run(
        [sys.executable, "-m", "offload_cli", "--url", url, "--api-key", "k", "submit", "send_email"],
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == ExitCode.UNREACHABLE == 3
    assert done.stdout == ""
    assert one_line(done.stderr) == (
        f"offload: cannot reach {url}jobs: Connection refused (is `make run` still running?)\n"
    )


def test_no_local_runtime_and_no_url_is_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = offload(capsys, "status", "j-1")

    assert code == ExitCode.UNREACHABLE
    assert "make run" in one_line(err)


def test_a_stale_state_file_is_exit_3(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    state = tmp_path / "no-runtime.json"
    state.write_text("{not json")

    code, _, err = offload(capsys, "status", "j-1")

    assert code == ExitCode.UNREACHABLE
    assert "restart `make run`" in one_line(err)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (
            Reply(400, body=b'{"error": {"code": "invalid_request", "message": "payload: Field required"}}'),
            "offload: POST /v1/jobs answered 400: invalid_request: payload: Field required\n",
        ),
        (Reply(403, body=b'{"message": "Forbidden"}'), "offload: POST /v1/jobs answered 403: Forbidden\n"),
    ],
    ids=["api-error", "gateway-error"],
)
def test_a_4xx_answer_is_one_line_with_its_code_and_message_and_exit_4(
    capsys: pytest.CaptureFixture[str], api: Receiver, reply: Reply, expected: str
) -> None:
    api.script("/v1/jobs", reply)

    code, out, err = offload(capsys, *against(api, "submit", "send_email", "--payload", "{}"))

    assert code == ExitCode.REFUSED == 4
    assert out == ""
    assert one_line(err) == expected


@pytest.mark.parametrize(
    "reply", [Reply(502, body=b'{"message": "Internal server error"}'), Reply(200, body=b"<html>")]
)
def test_a_5xx_or_an_answer_that_is_not_json_is_exit_5(
    capsys: pytest.CaptureFixture[str], api: Receiver, reply: Reply
) -> None:
    api.script("/v1/jobs/j-1", reply)

    code, _, err = offload(capsys, *against(api, "status", "j-1"))

    assert code == ExitCode.FAILED == 5
    one_line(err)


@pytest.mark.parametrize("payload", ["{not json", "@/nonexistent/payload.json"])
def test_a_bad_payload_is_exit_2_before_any_request(
    capsys: pytest.CaptureFixture[str], api: Receiver, payload: str
) -> None:
    code, _, err = offload(capsys, *against(api, "submit", "send_email", "--payload", payload))

    assert code == ExitCode.USAGE == 2
    assert "--payload" in one_line(err)
    assert api.requests == []


def test_bad_flags_are_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["status"])

    assert exited.value.code == ExitCode.USAGE
    assert "Traceback" not in capsys.readouterr().err


def test_url_without_a_key_or_scheme_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert offload(capsys, "--url", "http://127.0.0.1:1/v1/", "status", "j")[0] == ExitCode.USAGE
    code, _, err = offload(capsys, "--url", "127.0.0.1:3000/v1", "--api-key", "k", "status", "j")

    assert code == ExitCode.USAGE
    assert "not an http(s) URL" in one_line(err)


def test_wait_ends_0_when_done_1_when_dead_6_when_out_of_time(
    capsys: pytest.CaptureFixture[str], api: Receiver
) -> None:
    api.script("/v1/jobs/done", Reply(body=json.dumps({**JOB, "status": "done"}).encode()))
    api.script("/v1/jobs/dead", Reply(body=json.dumps({**JOB, "status": "dead"}).encode()))
    api.script("/v1/jobs/slow", *[Reply(body=json.dumps(JOB).encode())] * 3)

    done = offload(capsys, *against(api, "status", "done", "--wait"))
    dead = offload(capsys, *against(api, "status", "dead", "--wait"))
    slow = offload(capsys, *against(api, "status", "slow", "--wait", "--timeout", "0"))

    assert (done[0], dead[0], slow[0]) == (ExitCode.OK, ExitCode.DEAD, ExitCode.WAIT_TIMEOUT)
    assert json.loads(slow[1])["status"] == "pending"  # the job as it was, then the one-line reason
    assert "still pending" in one_line(slow[2])


def test_tail_of_a_deployed_stack_needs_job_ids(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = offload(capsys, "--url", "https://x.example/v1/", "--api-key", "k", "tail")

    assert code == ExitCode.USAGE
    one_line(err)


def _outputs(tmp_path: Path, **outputs: str) -> str:
    path = tmp_path / "outputs.json"
    path.write_text(
        json.dumps({"Offload": {"ApiUrl": "https://abc.execute-api.eu-west-1.amazonaws.com/v1/", **outputs}})
    )
    return str(path)


def test_rotating_a_webhook_secret_needs_the_client(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = offload(
        capsys, "--url", "https://x.example/v1/", "--api-key", "k", "webhook-secret", "--rotate"
    )

    assert (code, out) == (ExitCode.USAGE, "")
    assert "--client" in one_line(err)
