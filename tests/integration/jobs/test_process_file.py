"""process_file against moto's S3: the presigned upload, the objects written and their pixel sizes."""

import hashlib
import io
import json
from pathlib import Path

import boto3
import pytest
from PIL import Image

from lambdas.jobs.base import InvalidPayloadError, PermanentJobError
from lambdas.jobs.types import process_file
from lambdas.jobs.types.process_file import ProcessFilePayload
from tests.support import uploads
from tests.support.contexts import job_context, submission_context
from tests.unit.jobs.test_files import _png_header_only

ASSETS = Path(__file__).resolve().parents[2] / "assets"


def upload(stack, name: str, data: bytes | None = None, content_type: str | None = None) -> str:
    """What a client does: ask for a presigned POST, then send the bytes there (as `uploads.CLIENT`)."""
    body = (ASSETS / name).read_bytes() if data is None else data
    return uploads.upload(stack.bucket, name, body, content_type)


def run(key: str, job_id: str = "job-1", owner: str = uploads.CLIENT) -> dict:
    return process_file.run(ProcessFilePayload(key=key), job_context(job_id, "process_file", owner=owner))


def check(key: str, caller: str = uploads.CLIENT) -> None:
    process_file.check_submission(ProcessFilePayload(key=key), submission_context(caller=caller))


def objects(stack, prefix: str = "results/") -> dict[str, dict]:
    s3 = boto3.client("s3")
    found = {}
    for item in s3.list_objects_v2(Bucket=stack.bucket, Prefix=prefix).get("Contents", []):
        found[item["Key"]] = s3.get_object(Bucket=stack.bucket, Key=item["Key"])
    return found


def pixels(stored: dict) -> tuple[str, tuple[int, int]]:
    image = Image.open(io.BytesIO(stored["Body"].read()))
    return image.format, image.size


def test_presigned_upload_lands_in_the_bucket_under_an_upload_key(stack):
    key = upload(stack, "landscape.jpg", content_type="image/jpeg")
    [stored] = objects(stack, "uploads/").values()
    assert key.startswith("uploads/")
    assert key.endswith("/landscape.jpg")
    assert stored["ContentType"] == "image/jpeg"
    assert stored["Body"].read() == (ASSETS / "landscape.jpg").read_bytes()


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("landscape.jpg", {"thumb-512.jpg": ("JPEG", (512, 384)), "thumb-128.jpg": ("JPEG", (128, 96))}),
        ("rotated_exif6.jpg", {"thumb-512.jpg": ("JPEG", (341, 512)), "thumb-128.jpg": ("JPEG", (85, 128))}),
        ("transparent.png", {"thumb-512.png": ("PNG", (300, 200)), "thumb-128.png": ("PNG", (128, 85))}),
        ("wide.webp", {"thumb-512.webp": ("WEBP", (512, 128)), "thumb-128.webp": ("WEBP", (128, 32))}),
        ("animated.gif", {"thumb-512.png": ("PNG", (200, 150)), "thumb-128.png": ("PNG", (128, 96))}),
    ],
)
def test_images_get_thumbnails_under_the_job_prefix(stack, name, expected):
    key = upload(stack, name)
    result = run(key, job_id="job-7")

    written = objects(stack)
    assert sorted(written) == sorted(f"results/job-7/{file}" for file in expected)
    for file, (fmt, size) in expected.items():
        assert pixels(written[f"results/job-7/{file}"]) == (fmt, size)
    assert sorted(result["keys"]) == sorted(written)
    assert result["sha256"] == hashlib.sha256((ASSETS / name).read_bytes()).hexdigest()
    assert result["size"] == (ASSETS / name).stat().st_size
    assert {(t["width"], t["height"]) for t in result["thumbnails"]} == {
        size for _, size in expected.values()
    }


def test_configured_sizes_are_used(stack, monkeypatch):
    monkeypatch.setenv("THUMBNAIL_SIZES", "64, 256,600")
    result = run(upload(stack, "landscape.jpg"))
    assert [(t["size"], t["width"], t["height"]) for t in result["thumbnails"]] == [
        (600, 600, 450),
        (256, 256, 192),
        (64, 64, 48),
    ]


def test_other_files_get_a_metadata_record(stack):
    data = b"id,total\n1,42\n"
    key = upload(stack, "report.csv", data=data)
    result = run(key)

    written = objects(stack)
    assert list(written) == ["results/job-1/metadata.json"]
    stored = written["results/job-1/metadata.json"]
    assert stored["ContentType"] == "application/json"
    metadata = json.loads(stored["Body"].read())
    assert metadata == {
        "key": key,
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "contentType": "text/plain; charset=utf-8",
    }
    assert result["keys"] == ["results/job-1/metadata.json"]


def test_binary_files_are_octet_streams(stack):
    key = upload(stack, "blob.bin", data=bytes(range(256)) * 10)
    assert run(key)["contentType"] == "application/octet-stream"


@pytest.mark.parametrize("name", ["truncated.jpg", "corrupt.png"])
def test_broken_images_are_dead_with_a_clear_reason(stack, name):
    key = upload(stack, name)
    with pytest.raises(PermanentJobError, match=r"corrupt|not a readable image"):
        run(key)
    assert objects(stack) == {}


def test_decompression_bombs_are_dead(stack):
    key = upload(stack, "bomb.png", data=_png_header_only(60_000, 60_000))
    with pytest.raises(PermanentJobError, match="decompression-bomb"):
        run(key)


def test_size_limit_at_submission_and_when_running(stack, monkeypatch):
    key = upload(stack, "landscape.jpg")
    monkeypatch.setenv("MAX_FILE_BYTES", "10000")
    with pytest.raises(InvalidPayloadError, match="limit is 10000"):
        check(key)
    size = (ASSETS / "landscape.jpg").stat().st_size
    with pytest.raises(PermanentJobError, match=f"is {size} bytes; the limit is 10000"):
        run(key)


def test_nothing_uploaded_yet(stack):
    key = "uploads/9b2e4c1a-6f0d-4e8b-a1c2-3d4e5f607182/never.jpg"
    with pytest.raises(InvalidPayloadError, match="upload the file"):
        check(key)
    with pytest.raises(PermanentJobError, match="nothing has been uploaded"):
        run(key)


def test_submission_accepts_an_uploaded_file(stack):
    check(upload(stack, "tiny.png"))


def test_the_documented_example_type_runs_through_the_pipeline(stack, monkeypatch, tmp_path):
    from lambdas.jobs.types import register_builtin_types
    from tests.support.doc_example import install_example_type

    name = install_example_type(monkeypatch, tmp_path)
    register_builtin_types()
    key = upload(stack, "notes.txt")
    job_id = stack.pipeline.submit(name, {"key": key})
    stack.pipeline.drain()
    job = stack.pipeline.job(job_id)
    assert job["status"] == "done"
    assert job["result"] == {"bytes": (ASSETS / "notes.txt").stat().st_size, "lines": 1, "words": 8}
