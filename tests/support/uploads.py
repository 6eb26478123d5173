"""Uploading the way a client does: a presigned POST's fields, then the file, as multipart/form-data."""

from typing import Any

import requests

from lambdas import config
from lambdas.store.uploads import Uploads
from tests.support.pipeline import load_event

# The key id `Pipeline.request` calls with by default: an upload of its own.
CLIENT = load_event("api_post_job.json")["requestContext"]["identity"]["apiKeyId"]


def send(ticket: dict[str, Any], data: bytes, name: str = "file") -> requests.Response:
    """POST `data` to an upload ticket as `POST /uploads` answers it (`url`, `fields`)."""
    return requests.post(ticket["url"], data=ticket["fields"], files={"file": (name, data)}, timeout=30)


def upload(
    bucket: str,
    name: str,
    data: bytes,
    content_type: str | None = None,
    owner: str = CLIENT,
    max_bytes: int = config.MAX_FILE_BYTES,
) -> str:
    """Presign an upload for `owner` in the stack's bucket, send `data` there, and return its key."""
    ticket = Uploads(bucket).presign_post(name, owner, max_bytes, content_type)
    sent = send({"url": ticket.url, "fields": ticket.fields}, data, name)
    assert sent.status_code == 204, sent.text
    return ticket.key
