"""The uploads bucket: presigned uploads, the key layout, streaming reads and result writes.

Key layout (the only keys this code reads or writes):
- `uploads/<uuid4>/<safe file name>`: what clients upload, through a presigned POST;
- `results/<jobId>/...`: what `process_file` writes for a job.

A job names an upload by key only. The bucket is always the stack's, so a caller cannot point the
worker at somebody else's bucket, and a key that does not have the upload shape is refused.

An upload's owner (the API key id that asked for it) is written into the POST's signed policy as the
object's `x-amz-meta-owner`, and its size limit as a `content-length-range`: S3 refuses a POST whose
form changes either, or whose file is larger, before a byte is stored. `head` and `download` hand the
owner back, so its reader can refuse an upload that is not its caller's.
"""

import hashlib
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import IO, Any

from botocore.exceptions import ClientError

from lambdas import config
from lambdas.models.timestamps import iso_time
from lambdas.models.uploads import (
    MAX_FILENAME_CHARS,
    StoredObject,
    UploadAccessDeniedError,
    UploadNotFoundError,
    UploadTooLargeError,
)
from lambdas.store.clients import client

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_DOTS = re.compile(r"\.{2,}")
_CHUNK_BYTES = 256 * 1024
_MISSING = frozenset({"404", "NoSuchKey", "NotFound"})
_DENIED = frozenset({"403", "AccessDenied", "Forbidden"})


OWNER_METADATA = "owner"  # the object's x-amz-meta-owner


@dataclass(frozen=True)
class UploadTicket:
    key: str
    url: str
    expires_at: str
    fields: dict[str, str]  # the form fields the POST must send before the file, as they were signed


def safe_filename(name: str) -> str:
    """A file name that is safe as the last part of a key: no paths, no leading or doubled dots, ASCII
    only (the shape `UPLOAD_KEY_PATTERN` accepts)."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = _DOTS.sub(".", _UNSAFE.sub("_", base)).lstrip(".")
    if not cleaned.strip("._"):
        cleaned = "file"
    if len(cleaned) > MAX_FILENAME_CHARS:
        stem, dot, ext = cleaned.rpartition(".")
        keep = ext[:10] if dot and stem else ""
        cleaned = cleaned[: MAX_FILENAME_CHARS - len(keep) - 1].rstrip("._") + ("." + keep if keep else "")
    return cleaned


def new_upload_key(filename: str) -> str:
    return f"{config.UPLOADS_PREFIX}{uuid.uuid4()}/{safe_filename(filename)}"


def result_key(job_id: str, name: str) -> str:
    return f"{config.RESULTS_PREFIX}{job_id}/{name}"


class Uploads:
    def __init__(self, bucket: str) -> None:
        self.bucket = bucket

    def presign_post(
        self,
        filename: str,
        owner: str,
        max_bytes: int,
        content_type: str | None = None,
        expires_in: int = config.UPLOAD_URL_EXPIRES_SECONDS,
        now: datetime | None = None,
    ) -> UploadTicket:
        """A presigned POST for one new key: S3 stores the file only if it is at most `max_bytes`, and
        with exactly these fields (the owner; the content type, when given)."""
        key = new_upload_key(filename)
        fields = {f"x-amz-meta-{OWNER_METADATA}": owner}
        if content_type:
            fields["Content-Type"] = content_type
        conditions: list[Any] = [{name: value} for name, value in fields.items()]
        conditions.append(["content-length-range", 0, max_bytes])
        post = client("s3").generate_presigned_post(
            self.bucket, key, Fields=fields, Conditions=conditions, ExpiresIn=expires_in
        )
        expires_at = (now or datetime.now(UTC)) + timedelta(seconds=expires_in)
        return UploadTicket(
            key=key,
            url=post["url"],
            expires_at=iso_time(expires_at.timestamp()),
            fields={str(name): str(value) for name, value in post["fields"].items()},
        )

    def presign_get(self, key: str, expires_in: int) -> str:
        params = {"Bucket": self.bucket, "Key": key}
        return str(client("s3").generate_presigned_url("get_object", Params=params, ExpiresIn=expires_in))

    def head(self, key: str, owner: str | None = None) -> StoredObject:
        """UploadNotFoundError when nothing is at `key`, or it is not `owner`'s (when given)."""
        try:
            response = client("s3").head_object(Bucket=self.bucket, Key=key)
        except ClientError as error:
            code = _error_code(error)
            if code in _MISSING:
                raise UploadNotFoundError(f"nothing has been uploaded at {key}") from None
            if code in _DENIED:
                raise UploadAccessDeniedError(f"{key} cannot be read: {code}") from None
            raise
        return _owned(key, _stored(response), owner)

    def download(
        self, key: str, sink: IO[bytes], max_bytes: int, owner: str | None = None
    ) -> tuple[int, str]:
        """Stream the object into `sink` without holding it in memory; return (size, sha256 hex).

        UploadNotFoundError when it is not `owner`'s (when given), as when it does not exist.
        UploadTooLargeError, with the numbers, before a byte is read when S3 says it is over
        `max_bytes`, and as soon as more than `max_bytes` arrive.
        """
        try:
            response = client("s3").get_object(Bucket=self.bucket, Key=key)
        except ClientError as error:
            # The worker may read every upload, so a 403 here can only mean the key does not exist.
            if _error_code(error) in _MISSING | _DENIED:
                raise UploadNotFoundError(f"nothing has been uploaded at {key}") from None
            raise
        body = response["Body"]
        digest = hashlib.sha256()
        size = 0
        try:
            stored = _owned(key, _stored(response), owner)
            if stored.size > max_bytes:
                raise UploadTooLargeError(f"{key} is {stored.size} bytes; the limit is {max_bytes}")
            for chunk in body.iter_chunks(_CHUNK_BYTES):
                size += len(chunk)
                if size > max_bytes:
                    raise UploadTooLargeError(f"{key} is larger than {max_bytes} bytes")
                digest.update(chunk)
                sink.write(chunk)
        finally:
            body.close()
        return size, digest.hexdigest()

    def put(self, key: str, data: bytes, content_type: str) -> None:
        client("s3").put_object(Bucket=self.bucket, Key=key, Body=data, ContentType=content_type)


def _stored(response: dict[str, Any]) -> StoredObject:
    return StoredObject(
        size=int(response["ContentLength"]),
        content_type=response.get("ContentType"),
        owner=response.get("Metadata", {}).get(OWNER_METADATA),
    )


def _owned(key: str, stored: StoredObject, owner: str | None) -> StoredObject:
    # Another client's upload reads as a missing one: its existence is not the caller's to learn. One
    # made before owners were recorded has none, so it is nobody's.
    if owner is not None and stored.owner != owner:
        raise UploadNotFoundError(f"nothing has been uploaded at {key}")
    return stored


def _error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))
