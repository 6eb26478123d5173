"""`POST /uploads`: ask for a presigned URL, PUT the file there, then submit `process_file` with the key."""

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from lambdas import config
from lambdas.jobs.settings import TypeSettings, cached


class UploadsSettings(TypeSettings):
    uploads_bucket: str = Field(alias=config.ENV_UPLOADS_BUCKET, min_length=1)
    max_file_bytes: int = Field(alias=config.ENV_MAX_FILE_BYTES, default=config.MAX_FILE_BYTES, gt=0)


uploads_settings = cached(UploadsSettings)


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class CreateUploadRequest(_Wire):
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


class CreateUploadResponse(_Wire):
    key: str = Field(description='Submit `process_file` with `{"key": ...}` once the upload is done.')
    url: str = Field(description="Presigned URL: PUT the file's bytes here.")
    method: str = "PUT"
    headers: dict[str, str] = Field(description="Headers the PUT must carry.")
    expires_at: str = Field(description="The URL stops working at this time (ISO-8601, UTC).")
    max_bytes: int = Field(description="Files larger than this are refused when the job runs.")
