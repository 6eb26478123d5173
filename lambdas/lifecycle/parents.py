"""When a fan-out parent is finished: once each of its children has ended, `done`, `dead` or `cancelled`.

The last child's own transaction finishes the parent (`lambdas/store/children.py`), so the worker asks
here only when the parent starts waiting: its children may all have finished first, and then none of
them will. The recovery sweep asks for a parent whose check is due: children cancelled one by one by a
caller, or a parent written before the store counted finished children. A parent with children still
running has its next check pushed out instead.
"""

from lambdas.models.job import Job, JobStatus
from lambdas.observability import log_transition
from lambdas.store.jobs import JobStore


def settle(store: JobStore, parent_id: str, recheck_seconds: int) -> Job | None:
    """Finish the parent if its children have all ended; the parent when this call finished it."""
    parent = store.get(parent_id)
    if parent is None or parent.status is not JobStatus.WAITING or parent.children is None:
        return None
    if not parent.children.complete:
        store.postpone_check(parent_id, recheck_seconds)
        return None
    return finish_if_complete(store, parent)


def finish_if_complete(store: JobStore, parent: Job) -> Job | None:
    """`parent` as just read or written: finish it if it waits on no child; the parent when finished."""
    if parent.status is not JobStatus.WAITING or parent.children is None or not parent.children.complete:
        return None
    finished = store.finish_parent(parent)
    if finished is not None:
        log_transition(parent.job_id, parent.job_type, JobStatus.WAITING, JobStatus.DONE, parent.attempts)
    return finished
