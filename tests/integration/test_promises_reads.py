"""A fan-out's children page says why each failed child failed.

Found by `make mutate` (a mutant of `reads.list_children` no test failed on). The test was first run
against the one-line break its docstring names, seen to fail, then restored.
"""

from lambdas.lifecycle import operations
from lambdas.store.jobs import JobStore
from tests.integration.test_operations import ALICE, _fan_out
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
