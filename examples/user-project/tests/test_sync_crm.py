"""A test of my type without AWS: its payload rules, and one run against a loopback CRM."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from crm_jobs import sync_crm

from lambdas.jobs.base import InvalidPayloadError, PermanentJobError, RetryableJobError
from lambdas.testing import JobTypeRunner


def test_a_contact_id_is_required():
    runner = JobTypeRunner(sync_crm.JOB_TYPE, settings={"crmUrl": "https://crm.example/contacts"})
    with pytest.raises(InvalidPayloadError):
        runner.check_submission({})


def test_one_run_posts_the_contact_with_the_token():
    seen = []

    class Crm(BaseHTTPRequestHandler):
        def do_POST(self):
            seen.append(
                (
                    self.headers["Authorization"],
                    json.loads(self.rfile.read(int(self.headers["Content-Length"]))),
                )
            )
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"ok": true}')

    server = ThreadingHTTPServer(("127.0.0.1", 0), Crm)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        runner = JobTypeRunner(
            sync_crm.JOB_TYPE,
            settings={"crmUrl": f"http://127.0.0.1:{server.server_address[1]}/contacts"},
            secrets={"crm_token": "t0ken"},
        )
        result = runner.run({"contactId": "c-1"})
    finally:
        server.shutdown()
    assert result == {"status": 200, "answer": {"ok": True}}
    assert seen == [("Bearer t0ken", {"contactId": "c-1"})]


class _Answers(BaseHTTPRequestHandler):
    status = 200

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(type(self).status)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *_args):
        pass


@pytest.mark.parametrize(
    ("status", "raised"),
    [(401, PermanentJobError), (404, PermanentJobError), (429, RetryableJobError), (503, RetryableJobError)],
)
def test_a_refusal_dies_at_once_and_a_busy_crm_is_tried_again(status, raised):
    """A wrong token (401) fails the same way on every attempt: the job dies saying so instead of
    spending its retries. Seen to fail with the `except urllib.error.HTTPError` clause removed."""
    answers = type("Answers", (_Answers,), {"status": status})
    server = ThreadingHTTPServer(("127.0.0.1", 0), answers)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        runner = JobTypeRunner(
            sync_crm.JOB_TYPE,
            settings={"crmUrl": f"http://127.0.0.1:{server.server_address[1]}/contacts"},
            secrets={"crm_token": "wrong"},
        )
        with pytest.raises(raised) as error:
            runner.run({"contactId": "c-1"})
    finally:
        server.shutdown()
    assert str(status) in str(error.value)
