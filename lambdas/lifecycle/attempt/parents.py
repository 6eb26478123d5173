"""When a fan-out parent is finished: once each of its children has ended, `done`, `dead` or `cancelled`.

The last child's own transaction finishes the parent (`lambdas/store/children.py`), so the worker asks
here only when the parent starts waiting: its children may all have finished first, and then none of
them will. The recovery sweep asks for a parent whose check is due: children cancelled one by one by a
caller, or a parent written before the store counted finished children. A parent with children still
running has its next check pushed out instead.
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lambdas.models.job import Job, JobStatus
from lambdas.observability import log_transition
from lambdas.store.jobs import JobStore

if TYPE_CHECKING:
    from lambdas.jobs.base import ChildRef


def children_of(parent: Job) -> Sequence["ChildRef"]:
    """A parent's children in its type's order, through the type's `children` hook (none without one)."""
    if parent.children is None:
        return []
    # Loaded here: the job types' contract brings pydantic, which the recovery function's import skips.
    from lambdas.jobs import registry

    try:
        hook = registry.get(parent.job_type).children
    except registry.NotRegisteredError:
        return []  # a type this process does not know: it cannot say, as before types had the hook
    return [] if hook is None else hook(parent)


def child_ids(parent: Job) -> list[str]:
    return [child.job_id for child in children_of(parent)]


def is_finished(parent: Job) -> bool:
    """The one rule for "a parent is finished": it waits, and every child it counts has ended.

    The store's last-child transaction (`lambdas/store/children.py`) applies the same rule in
    DynamoDB's terms: the child whose end makes `childrenFinished` reach `childrenTotal` is the last.
    """
    return parent.status is JobStatus.WAITING and parent.children is not None and parent.children.complete


def settle(store: JobStore, parent_id: str, recheck_seconds: int) -> Job | None:
    """Finish the parent if its children have all ended; the parent when this call finished it."""
    parent = store.get(parent_id)
    if parent is None or parent.status is not JobStatus.WAITING or parent.children is None:
        return None
    if not is_finished(parent):
        store.postpone_check(parent_id, recheck_seconds)
        return None
    return finish_if_complete(store, parent)


def finish_if_complete(store: JobStore, parent: Job) -> Job | None:
    """`parent` as just read or written: finish it if it waits on no child; the parent when finished."""
    if not is_finished(parent):
        return None
    finished = store.finish_parent(parent)
    if finished is not None:
        log_transition(parent.job_id, parent.job_type, JobStatus.WAITING, JobStatus.DONE, parent.attempts)
    return finished
