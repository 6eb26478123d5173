"""The uploads key layout: what a `process_file` job may name."""

import re

import pytest
from pydantic import ValidationError

from lambdas.jobs.types.process_file import ProcessFilePayload
from lambdas.store.uploads import new_upload_key, result_key, safe_filename


@pytest.mark.parametrize(
    ("given", "safe"),
    [
        ("photo.jpg", "photo.jpg"),
        ("My Holiday (1).JPG", "My_Holiday_1_.JPG"),
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\ada\\report.pdf", "report.pdf"),
        (".bashrc", "bashrc"),
        ("...", "file"),
        ("", "file"),
        ("фото.png", "_.png"),
        ("a" * 300 + ".jpeg", "a" * 95 + ".jpeg"),
        # only leading dots go: a name that starts with a letter keeps it
        ("Xmas.txt", "Xmas.txt"),
        # too long and no extension: cut to fit, with nothing appended
        ("a" * 150, "a" * 99),
        # two dots in a row become one: the key pattern refuses `..` anywhere in the name
        ("photo..png", "photo.png"),
        ("a..b...c", "a.b.c"),
    ],
)
def test_safe_filename(given, safe):
    assert safe_filename(given) == safe


def test_new_keys_have_the_upload_shape():
    key = new_upload_key("../evil name.png")
    assert re.fullmatch(r"uploads/[0-9a-f-]{36}/evil_name\.png", key)
    ProcessFilePayload(key=key)


@pytest.mark.parametrize("name", ["photo..png", "a" * 300 + ".jpeg", "..", "x.y..", "My Holiday (1).JPG"])
def test_every_key_post_uploads_hands_out_is_one_a_job_may_name(name: str) -> None:
    """Broken line: `safe_filename` without `_DOTS.sub(".", ...)` (`photo..png` kept, then refused)."""
    ProcessFilePayload(key=new_upload_key(name))


@pytest.mark.parametrize(
    "key",
    [
        "results/9b2e4c1a-6f0d-4e8b-a1c2-3d4e5f607182/thumb-128.png",
        "uploads/not-a-uuid/photo.jpg",
        "uploads/9b2e4c1a-6f0d-4e8b-a1c2-3d4e5f607182/../../secrets.txt",
        "uploads/9b2e4c1a-6f0d-4e8b-a1c2-3d4e5f607182/.hidden",
        "uploads/9b2e4c1a-6f0d-4e8b-a1c2-3d4e5f607182/a/b.jpg",
        "s3://other-bucket/uploads/9b2e4c1a-6f0d-4e8b-a1c2-3d4e5f607182/photo.jpg",
        "/uploads/9b2e4c1a-6f0d-4e8b-a1c2-3d4e5f607182/photo.jpg",
        "uploads/9b2e4c1a-6f0d-4e8b-a1c2-3d4e5f607182/",
        "uploads/9b2e4c1a-6f0d-4e8b-a1c2-3d4e5f607182/photo..png",
        "uploads/9b2e4c1a-6f0d-4e8b-a1c2-3d4e5f607182/" + "a" * 101,
    ],
)
def test_other_keys_are_refused(key):
    """`photo..png` broken line: `UPLOAD_KEY_PATTERN`'s name as the old `[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}`;
    the 101-character name: `max_length=UPLOAD_KEY_MAX_CHARS` dropped from `ProcessFilePayload.key`."""
    with pytest.raises(ValidationError):
        ProcessFilePayload(key=key)


def test_no_bucket_can_be_named():
    with pytest.raises(ValidationError):
        ProcessFilePayload.model_validate(
            {"key": "uploads/9b2e4c1a-6f0d-4e8b-a1c2-3d4e5f607182/photo.jpg", "bucket": "someone-elses"}
        )


def test_a_name_of_the_longest_length_is_taken():
    ProcessFilePayload(key="uploads/9b2e4c1a-6f0d-4e8b-a1c2-3d4e5f607182/" + "a." * 50)


def test_results_live_under_the_job():
    assert result_key("job-1", "thumb-128.png") == "results/job-1/thumb-128.png"
