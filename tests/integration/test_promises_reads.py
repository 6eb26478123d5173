"""What a caller reads: a fan-out's children page says why each failed child failed, a finished job's
download links say when they expire.

Found by `make mutate` (mutants of `reads.list_children` and `uploads.download_links` no test failed
on). Each test was first run against the one-line break its docstring names, seen to fail, then restored.
"""

from lambdas import config
from lambdas.lifecycle import operations
from lambdas.lifecycle.uploads import download_links
from lambdas.models.timestamps import iso_time
from lambdas.store.jobs import JobStore
from lambdas.store.uploads import result_key
from tests.integration.test_operations import ALICE, _fan_out, _job
from tests.support.pipeline import Pipeline


def test_a_failed_child_is_listed_with_its_last_error(pipeline: Pipeline, store: JobStore) -> None:
    """Broken line: `list_children`'s `last_error=child.last_error` as `last_error=None`."""
    _, children = _fan_out(store, 2)
    store.fail(store.claim(children[0], 60), "connection refused")

    page = operations.list_children(store, ALICE, "fan", status=None, limit=10, cursor=None)

    assert [(c.job_id, c.status, c.last_error) for c in page.children] == [
        (children[0], "dead", "connection refused"),
        (children[1], "pending", None),
    ]


def test_a_finished_jobs_download_links_expire_when_their_signature_does(
    pipeline: Pipeline, store: JobStore
) -> None:
    """Broken line: `download_links`'s `now + expires_in` as `now - expires_in` (links already expired)."""
    _job(store, "j")
    store.complete(store.claim("j", 60), {"keys": [result_key("j", "thumb.png"), "uploads/elsewhere.png"]})
    job = store.get("j")
    assert job is not None

    (link,) = download_links(job, now=1_796_000_000)

    assert link.key == result_key("j", "thumb.png")
    assert link.expires_at == iso_time(1_796_000_000 + config.DOWNLOAD_URL_EXPIRES_SECONDS)
    assert f"X-Amz-Expires={config.DOWNLOAD_URL_EXPIRES_SECONDS}" in link.url
