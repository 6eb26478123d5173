"""Issue 19 row 8 over HTTP on loopback, as `make run -c clientKeys=alpha,beta` serves it: moto's server
applies S3's presigned-POST rules (`local_runtime.s3_post_policy`), and one key's upload is not another's.

Before (main 3ba30bf, the same steps with its presigned PUT): the 120 MB PUT answered 200 (50 MB
advertised), and beta's job on alpha's upload was `done` with alpha's file's SHA-256.
"""

import pytest
import requests

from local_runtime.runtime import LocalRuntime
from tests.e2e.conftest import Client
from tests.support.uploads import send

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("e2e")]


def _key(runtime: LocalRuntime, name: str) -> str:
    (key,) = [key.value for key in runtime.keys if key.name == name]
    return key


def test_a_file_over_the_limit_is_refused_where_it_arrives(client: Client) -> None:
    """Seen failing (204: stored) with `s3_post_policy.enforce()` left out of moto_main's start."""
    ticket = client.post("uploads", json={"filename": "big.bin"}).json()

    refused = send(ticket, b"\0" * (ticket["maxBytes"] + 1))

    assert refused.status_code == 400
    assert "<Code>EntityTooLarge</Code>" in refused.text
    assert f"<MaxSizeAllowed>{ticket['maxBytes']}</MaxSizeAllowed>" in refused.text


def test_beta_cannot_process_alphas_upload(client: Client, runtime: LocalRuntime) -> None:
    ticket = client.post("uploads", json={"filename": "ledger.csv"}).json()
    assert send(ticket, b"alpha's ledger,42\n").status_code == 204
    job = {"type": "process_file", "payload": {"key": ticket["key"]}}

    as_beta = requests.post(
        runtime.url + "jobs", json=job, headers={"x-api-key": _key(runtime, "beta")}, timeout=30
    )

    assert as_beta.status_code == 422
    assert as_beta.json()["error"]["code"] == "upload_not_found"
    done = client.wait_for_status(client.submit("process_file", job["payload"]), {"done", "dead"})
    assert done["status"] == "done"
