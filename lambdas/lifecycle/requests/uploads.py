"""Files in and out: a presigned POST for an upload (named later by a `process_file` job of the same
key), presigned GETs for the files a finished job wrote."""

import time

from lambdas import config
from lambdas.models import settings
from lambdas.models.api import DownloadView
from lambdas.models.job import Job, JobStatus
from lambdas.models.timestamps import iso_time
from lambdas.models.uploads import CreateUploadRequest, CreateUploadResponse
from lambdas.store.uploads import Uploads, result_key


def start_upload(request: CreateUploadRequest, caller: str) -> CreateUploadResponse:
    """An upload owned by `caller` (its API key id), at most the function's MAX_FILE_BYTES."""
    api = settings.api()
    ticket = Uploads(api.uploads_bucket).presign_post(
        request.filename, caller, api.max_file_bytes, request.content_type
    )
    return CreateUploadResponse(
        key=ticket.key,
        url=ticket.url,
        fields=ticket.fields,
        expires_at=ticket.expires_at,
        max_bytes=api.max_file_bytes,
    )


def download_links(job: Job, now: float | None = None) -> list[DownloadView]:
    """A fresh presigned GET for each file a finished job lists in its result's `keys`.

    Only keys under the job's own `results/<jobId>/` prefix are signed: a result can never hand out
    another job's files or an upload.
    """
    result = job.result
    if (
        job.status is not JobStatus.DONE
        or not isinstance(result, dict)
        or not isinstance(result.get("keys"), list)
    ):
        return []
    own = [
        key for key in result["keys"] if isinstance(key, str) and key.startswith(result_key(job.job_id, ""))
    ]
    if not own:
        return []
    uploads = Uploads(settings.api().uploads_bucket)
    expires_in = config.DOWNLOAD_URL_EXPIRES_SECONDS
    expires_at = iso_time((time.time() if now is None else now) + expires_in)
    return [
        DownloadView(key=key, url=uploads.presign_get(key, expires_in), expires_at=expires_at) for key in own
    ]
