"""`process_file`: thumbnails for an uploaded image, a metadata record for any other file.

The client asks `POST /uploads` for a presigned PUT URL, uploads, then submits this job with the key
it was given. The job streams the object to local disk (hashing it on the way, never holding it in
memory), then:

- a PNG, JPEG, WebP or GIF gets a thumbnail per configured size (THUMBNAIL_SIZES, default 128 and 512
  pixels on the long side; aspect kept, EXIF orientation applied, never enlarged), written to
  `results/<jobId>/thumb-<size>.<ext>`;
- any other file gets `results/<jobId>/metadata.json` with its sha256, size and detected content type.

The result lists the keys written. A missing object, one over MAX_FILE_BYTES, an image over Pillow's
decompression-bomb limit or one that cannot be decoded is dead at once: the same bytes would fail the
same way on every retry.
"""

import json
import tempfile
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from lambdas import config
from lambdas.jobs import files
from lambdas.jobs.base import InvalidPayloadError, JobContext, JobType, PermanentJobError
from lambdas.jobs.settings import cached
from lambdas.models.uploads import UploadsSettings
from lambdas.observability import logger
from lambdas.store.uploads import (
    UPLOAD_KEY_PATTERN,
    UploadAccessDeniedError,
    UploadNotFoundError,
    Uploads,
    UploadTooLargeError,
    result_key,
)

NAME = "process_file"
MIN_THUMBNAIL = 16
MAX_THUMBNAIL = 4096


class FileSettings(UploadsSettings):
    thumbnail_sizes: tuple[int, ...] = Field(alias=config.ENV_THUMBNAIL_SIZES, default=config.THUMBNAIL_SIZES)

    @field_validator("thumbnail_sizes", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):  # "128,512" in the environment
            return tuple(int(part) for part in value.replace(" ", "").split(",") if part)
        return value

    @field_validator("thumbnail_sizes")
    @classmethod
    def _sensible(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if not value or any(not MIN_THUMBNAIL <= size <= MAX_THUMBNAIL for size in value):
            raise ValueError(f"thumbnail sizes must be {MIN_THUMBNAIL}..{MAX_THUMBNAIL} pixels")
        return tuple(sorted(set(value), reverse=True))


settings = cached(FileSettings)


class ProcessFilePayload(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    key: str = Field(
        pattern=UPLOAD_KEY_PATTERN,
        description="The key `POST /uploads` returned, once the file is uploaded there.",
        examples=["uploads/9b2e4c1a-6f0d-4e8b-a1c2-3d4e5f607182/photo.jpg"],
    )


def check_submission(payload: ProcessFilePayload) -> None:
    """422 when nothing was uploaded at the key yet, or the upload is over the size limit.

    Needs s3:GetObject on uploads/* (HeadObject) and s3:ListBucket (so a missing key is a 404). When
    S3 answers 403 instead, the job is accepted and the worker, which may read every upload, decides.
    """
    current = settings()
    try:
        stored = Uploads(current.uploads_bucket).head(payload.key)
    except UploadNotFoundError as error:
        raise InvalidPayloadError(f"{error}; upload the file before submitting the job") from None
    except UploadAccessDeniedError:
        logger.warning("cannot check the upload at submission; the worker will", key=payload.key)
        return
    if stored.size > current.max_file_bytes:
        raise InvalidPayloadError(f"the file is {stored.size} bytes; the limit is {current.max_file_bytes}")


def run(payload: ProcessFilePayload, context: JobContext) -> dict[str, Any]:
    current = settings()
    uploads = Uploads(current.uploads_bucket)
    with tempfile.TemporaryFile() as local:
        try:
            size, sha256 = uploads.download(payload.key, local, current.max_file_bytes)
        except (UploadNotFoundError, UploadTooLargeError) as error:
            raise PermanentJobError(str(error)) from None
        local.seek(0)
        content_type = files.detect_content_type(local.read(files.SNIFF_BYTES))
        local.seek(0)
        described = {"key": payload.key, "size": size, "sha256": sha256, "contentType": content_type}
        if content_type in {ct for ct, _, _ in files.IMAGE_FORMATS.values()}:
            written = _write_thumbnails(uploads, context.job_id, local, current.thumbnail_sizes)
            return {**described, "keys": [t["key"] for t in written], "thumbnails": written}
    key = result_key(context.job_id, "metadata.json")
    uploads.put(key, json.dumps(described, indent=2).encode(), "application/json")
    return {**described, "keys": [key]}


def _write_thumbnails(
    uploads: Uploads, job_id: str, source: Any, sizes: tuple[int, ...]
) -> list[dict[str, Any]]:
    written = []
    try:
        for thumbnail in files.thumbnails(source, sizes):
            key = result_key(job_id, f"thumb-{thumbnail.size}.{thumbnail.extension}")
            uploads.put(key, thumbnail.data, thumbnail.content_type)
            written.append(
                {"key": key, "size": thumbnail.size, "width": thumbnail.width, "height": thumbnail.height}
            )
    except files.ImageTooLargeError as error:
        raise PermanentJobError(f"image refused by the decompression-bomb guard: {error}") from None
    except files.CorruptImageError as error:
        raise PermanentJobError(str(error)) from None
    return written


JOB_TYPE = JobType(name=NAME, payload_model=ProcessFilePayload, run=run, check_submission=check_submission)
