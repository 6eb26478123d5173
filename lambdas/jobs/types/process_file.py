"""`process_file`: thumbnails for an uploaded image, a metadata record for any other file.

The client asks `POST /uploads` for a presigned POST, uploads, then submits this job with the key
it was given, with the same API key: the uploads capability is bound to the job's owner, so another
key's upload reads as missing, at submission and when the job runs. The job streams the object to local disk (hashing it on the way, never holding it in
memory), then:

- a PNG, JPEG, WebP or GIF gets a thumbnail per configured size (THUMBNAIL_SIZES, default 128 and 512
  pixels on the long side; aspect kept, EXIF orientation applied, never enlarged), written to
  `results/<jobId>/thumb-<size>.<ext>`;
- any other file gets `results/<jobId>/metadata.json` with its sha256, size and detected content type.

The result lists the keys written. A missing object, one over MAX_FILE_BYTES, an image over Pillow's
decompression-bomb limit, one whose decoding needs more memory than the worker can spare
(`files.DecodeBudget`) or one that cannot be decoded is dead at once: the same bytes would fail the
same way on every retry. An image that fits, but not beside the other images the batch is decoding,
waits for them while the invocation has time, and is retried later if it still does not fit.

It runs in a worker function of its own (`FUNCTION`): a 50 MB download and its thumbnails may take
longer than the shared worker's minute, and its image decoding is sized by that function's memory
alone, not shared with the other types' jobs.
"""

import json
import tempfile
from typing import IO, Any

from pydantic import BaseModel, ConfigDict, Field

from lambdas import config
from lambdas.jobs import files
from lambdas.jobs.base import (
    Capability,
    InvalidPayloadError,
    JobContext,
    JobType,
    PermanentJobError,
    Results,
    RetryableJobError,
    SubmissionContext,
    WorkerFunction,
)
from lambdas.models.uploads import (
    UPLOAD_KEY_MAX_CHARS,
    UPLOAD_KEY_PATTERN,
    UploadAccessDeniedError,
    UploadNotFoundError,
    UploadTooLargeError,
)
from lambdas.observability import logger

NAME = "process_file"
# Downloading MAX_FILE_BYTES and writing every thumbnail, with room for a slow S3 (the shared worker: 60 s).
PROCESS_FILE_TIMEOUT_SECONDS = 180
# Of the invocation's time, what an image waiting for decode memory leaves for its own decode and uploads.
_DECODE_RESERVED_MS = 20_000


class ProcessFilePayload(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    key: str = Field(
        pattern=UPLOAD_KEY_PATTERN,
        max_length=UPLOAD_KEY_MAX_CHARS,
        description="The key `POST /uploads` returned, once the file is uploaded there.",
        examples=["uploads/9b2e4c1a-6f0d-4e8b-a1c2-3d4e5f607182/photo.jpg"],
    )


def check_submission(payload: ProcessFilePayload, context: SubmissionContext) -> None:
    """422 `upload_not_found` when the caller has uploaded nothing at the key (nothing is there yet, or
    another key's upload is), 422 `invalid_payload` when the upload is over the size limit.

    Needs s3:GetObject on uploads/* (HeadObject) and s3:ListBucket (so a missing key is a 404). When
    S3 answers 403 instead, the job is accepted and the worker, which may read every upload, decides.
    """
    uploads = context.uploads
    try:
        stored = uploads.head(payload.key)
    except UploadNotFoundError as error:
        raise InvalidPayloadError(
            f"{error} by this API key; upload the file before submitting the job", code="upload_not_found"
        ) from None
    except UploadAccessDeniedError:
        logger.warning("cannot check the upload at submission; the worker will", key=payload.key)
        return
    if stored.size > uploads.max_bytes:
        raise InvalidPayloadError(f"the file is {stored.size} bytes; the limit is {uploads.max_bytes}")


def run(payload: ProcessFilePayload, context: JobContext) -> dict[str, Any]:
    with tempfile.TemporaryFile() as local:
        try:
            size, sha256 = context.uploads.download(payload.key, local)
        except (UploadNotFoundError, UploadTooLargeError) as error:
            raise PermanentJobError(str(error)) from None
        local.seek(0)
        content_type = files.detect_content_type(local.read(files.SNIFF_BYTES))
        local.seek(0)
        described = {"key": payload.key, "size": size, "sha256": sha256, "contentType": content_type}
        if content_type in {ct for ct, _, _ in files.IMAGE_FORMATS.values()}:
            written = _write_thumbnails(context, local)
            return {**described, "keys": [t["key"] for t in written], "thumbnails": written}
    key = context.results.put("metadata.json", json.dumps(described, indent=2).encode(), "application/json")
    return {**described, "keys": [key]}


def _write_thumbnails(context: JobContext, source: IO[bytes]) -> list[dict[str, Any]]:
    results: Results = context.results
    budget = files.decode_budget(context.settings.memory_mb)
    wait_seconds = max(0.0, (context.remaining_ms() - _DECODE_RESERVED_MS) / 1000)
    written = []
    try:
        for thumbnail in files.thumbnails(source, context.settings.thumbnail_sizes, budget, wait_seconds):
            name = f"thumb-{thumbnail.size}.{thumbnail.extension}"
            key = results.put(name, thumbnail.data, thumbnail.content_type)
            written.append(
                {"key": key, "size": thumbnail.size, "width": thumbnail.width, "height": thumbnail.height}
            )
    except files.ImageTooLargeError as error:
        raise PermanentJobError(f"image refused by the decompression-bomb guard: {error}") from None
    except files.CorruptImageError as error:
        raise PermanentJobError(str(error)) from None
    except files.DecodeBusyError as error:
        raise RetryableJobError(f"not enough free memory to decode the image now: {error}") from None
    return written


FUNCTION = WorkerFunction(timeout_seconds=PROCESS_FILE_TIMEOUT_SECONDS, memory_mb=config.WORKER_MEMORY_MB)

JOB_TYPE = JobType(
    name=NAME,
    payload_model=ProcessFilePayload,
    run=run,
    check_submission=check_submission,
    function=FUNCTION,
    uses=frozenset({Capability.UPLOADS, Capability.RESULTS}),
)
