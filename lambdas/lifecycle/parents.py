"""When a fan-out parent is finished: once each of its children has ended, `done` or `dead`.

Whoever may have ended the last child asks: the worker after a child's terminal write and after the
parent handed its work out (the children may all have finished first), and the recovery sweep for a
parent whose check is due (a child's worker that died between its own write and this question).
A parent with children still running has its next check pushed out instead.
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
    finished = store.finish_parent(parent)
    if finished is not None:
        log_transition(parent_id, parent.job_type, JobStatus.WAITING, JobStatus.DONE, parent.attempts)
    return finished
