"""Accepting an upload: a presigned PUT into the stack's bucket, to be named later by a `process_file` job."""

from lambdas.models.uploads import CreateUploadRequest, CreateUploadResponse, uploads_settings
from lambdas.store.uploads import Uploads


def start_upload(request: CreateUploadRequest) -> CreateUploadResponse:
    settings = uploads_settings()
    ticket = Uploads(settings.uploads_bucket).presign_put(request.filename, request.content_type)
    return CreateUploadResponse(
        key=ticket.key,
        url=ticket.url,
        headers=ticket.headers,
        expires_at=ticket.expires_at,
        max_bytes=settings.max_file_bytes,
    )
