"""`POST /uploads`: ask for a presigned POST, send the file there, then submit `process_file` with the key."""

import re
from dataclasses import dataclass
from typing import Final

from pydantic import Field

from lambdas import config
from lambdas.models.wire import WireModel

_UUID4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
MAX_FILENAME_CHARS: Final = 100
# The only keys a job may name: what `POST /uploads` hands out, `uploads/<uuid4>/<safe file name>`, the
# name not starting with a dot and never holding two in a row (no lookahead: pydantic's regex engine has
# none, so the name's length is bounded by `UPLOAD_KEY_MAX_CHARS`).
UPLOAD_KEY_PATTERN = "^" + re.escape(config.UPLOADS_PREFIX) + _UUID4 + r"/(?:[A-Za-z0-9_-]\.?)+$"
UPLOAD_KEY_MAX_CHARS: Final = len(config.UPLOADS_PREFIX) + 36 + 1 + MAX_FILENAME_CHARS


class UploadNotFoundError(LookupError):
    pass


class UploadAccessDeniedError(PermissionError):
    """S3 answered 403: without s3:ListBucket that is also how it reports a key that does not exist."""


class UploadTooLargeError(ValueError):
    pass


@dataclass(frozen=True)
class StoredObject:
    size: int
    content_type: str | None
    owner: str | None = None  # the API key id that asked for the upload; None on older uploads


class CreateUploadRequest(WireModel):
    filename: str = Field(
        min_length=1,
        max_length=255,
        description="The file's name; kept (made safe) as the last part of the key.",
        examples=["holiday.jpg"],
    )
    content_type: str | None = Field(
        default=None,
        max_length=255,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*$",
        description="When given, the upload must send this Content-Type (it is part of the signature).",
        examples=["image/jpeg"],
    )


class CreateUploadResponse(WireModel):
    key: str = Field(description='Submit `process_file` with `{"key": ...}` once the upload is done.')
    url: str = Field(description="Presigned POST: send the file here as multipart/form-data.")
    method: str = "POST"
    fields: dict[str, str] = Field(
        description="The form fields to send, unchanged, before the file (the last field, named `file`)."
    )
    expires_at: str = Field(description="The URL stops working at this time (ISO-8601, UTC).")
    max_bytes: int = Field(
        description="S3 refuses a larger file (400 EntityTooLarge); only the key that asked may name the upload."
    )
