"""Issue 24's week-one papercuts of the CLI: what `submit --wait` prints, and a 422's details."""

import json

import pytest

from offload_cli.errors import ExitCode
from tests.cli.run import against, offload, one_line
from tests.support.webhook_receiver import Receiver, Reply

ACCEPTED = {"jobId": "j-1", "status": "pending"}
DONE = {"jobId": "j-1", "type": "send_email", "status": "done", "attempts": 1, "result": {"messageId": "m"}}


def test_submit_wait_prints_one_json_document_the_job_as_it_ended(
    capsys: pytest.CaptureFixture[str], api: Receiver
) -> None:
    """Seen failing (json.loads: "Extra data", two documents) with `submit` printing the 202's document
    before it waits, as it did."""
    api.script("/v1/jobs", Reply(202, body=json.dumps(ACCEPTED).encode()))
    api.script("/v1/jobs/j-1", Reply(body=json.dumps({**DONE, "status": "processing"}).encode()))
    api.script("/v1/jobs/j-1", Reply(body=json.dumps(DONE).encode()))

    code, out, err = offload(capsys, *against(api, "submit", "send_email", "--payload", "{}", "--wait"))

    assert (code, err) == (ExitCode.OK, "")
    assert json.loads(out) == DONE


def test_a_422_shows_the_apis_details_on_its_one_line(
    capsys: pytest.CaptureFixture[str], api: Receiver
) -> None:
    """Seen failing (the line ended at the message) with `_document` (offload_client/client.py) not
    passing `details=_details(document)`."""
    refusal = {
        "error": {
            "code": "invalid_payload",
            "message": "payload is not a valid send_email payload",
            "details": [
                {
                    "loc": ["payload", "to", 0],
                    "msg": "value is not a valid email address",
                    "type": "value_error",
                },
                {"loc": ["payload", "subject"], "msg": "Field required", "type": "missing"},
            ],
        }
    }
    api.script("/v1/jobs", Reply(422, body=json.dumps(refusal).encode()))

    code, out, err = offload(capsys, *against(api, "submit", "send_email", "--payload", '{"to": ["x"]}'))

    assert (code, out) == (ExitCode.REFUSED, "")
    assert one_line(err) == (
        "offload: POST /v1/jobs answered 422: invalid_payload: payload is not a valid send_email payload "
        "(payload.to.0: value is not a valid email address; payload.subject: Field required)\n"
    )
