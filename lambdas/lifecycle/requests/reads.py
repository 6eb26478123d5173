"""What a caller may read: one job, lists of jobs, a fan-out's children and its delivery log.

Every function is scoped by the caller: a client sees only the jobs its key submitted (a fan-out's
children have their parent's owner), the operator sees every job. A job the caller may not see is
JobNotFoundError, exactly like a job that does not exist. Lists are Queries on the jobs table's
indexes (never a Scan), newest first, paged with opaque cursors (`paging`). A caller's retry and
cancel live in `retry_cancel`, bulk ones in `bulk`.
"""

from lambdas import config
from lambdas.lifecycle.attempt.parents import children_of
from lambdas.lifecycle.errors import InvalidCursorError, JobNotFoundError
from lambdas.lifecycle.requests import paging
from lambdas.models.api import ChildPage, ChildSummary, DeliveryPage, DeliveryView, JobPage, JobSummary
from lambdas.models.caller import Caller
from lambdas.models.job import Job, JobStatus
from lambdas.store import codec, schema
from lambdas.store.deliveries import DeliveryLog
from lambdas.store.jobs import JobStore
from lambdas.store.listing import ListQuery

__all__ = ["find_job", "list_children", "list_deliveries", "list_jobs", "list_query"]


def find_job(store: JobStore, job_id: str, caller: Caller) -> Job:
    job = store.get(job_id)
    if job is None or not caller.sees(job.owner):
        raise JobNotFoundError(f"no job {job_id}")
    return job


def list_query(
    store: JobStore,
    caller: Caller,
    status: JobStatus | None,
    job_type: str | None,
    before: int | str | None = None,
) -> ListQuery:
    """Which index answers this caller's list, and its key on each shard."""
    shards = range(store.shards)
    if status is None:
        if caller.operator:
            keys = [codec.created_key(n) for n in shards]
            return ListQuery(schema.CREATED_INDEX, keys, job_type, before=before)
        keys = [codec.owner_key(caller.owner, n) for n in shards]
        return ListQuery(schema.OWNER_INDEX, keys, job_type, before=before)
    if caller.operator or status is JobStatus.PROCESSING:
        # A claim cannot write the owner's key (it knows only the job id): filter on the projected owner.
        keys = [codec.status_key(status, n) for n in shards]
        only = None if caller.operator else caller.owner
        return ListQuery(schema.STATUS_TIME_INDEX, keys, job_type, owner=only, before=before)
    keys = [codec.owner_status_key(caller.owner, status, n) for n in shards]
    return ListQuery(schema.OWNER_STATUS_INDEX, keys, job_type, before=before)


def list_jobs(
    store: JobStore,
    caller: Caller,
    *,
    status: JobStatus | None,
    job_type: str | None,
    limit: int,
    cursor: str | None,
) -> JobPage:
    """Newest first: by the time the status was entered, or by creation without a status."""
    query = list_query(store, caller, status, job_type)
    tag = paging.query_tag("jobs", query.index.name, caller.owner, caller.operator, status, job_type)
    state = paging.decode(tag, cursor)
    positions = paging.shard_positions(state, store.shards, query.index.numeric_sort_key)
    ids, following = store.list_ids(query, limit, positions)
    jobs = store.get_many(ids)
    next_cursor = None
    if following is not None:
        next_cursor = paging.encode(tag, {str(n): at for n, at in following.items()})
    return JobPage(jobs=[JobSummary.of(job) for job in jobs], next_cursor=next_cursor)


def list_children(
    store: JobStore,
    caller: Caller,
    job_id: str,
    *,
    status: JobStatus | None,
    limit: int,
    cursor: str | None,
) -> ChildPage:
    """A parent's children in its type's order: their ids follow from the parent (its type's `children`
    hook), so a page is BatchGetItems of up to 100 children, no index. A status filter reads whole batches, at most
    `config.CHILD_PAGE_BATCHES` of them: a page that finds fewer than `limit` matches in its budget
    answers those (maybe none) and a cursor to read on."""
    parent = find_job(store, job_id, caller)
    endpoints = children_of(parent)
    tag = paging.query_tag("children", job_id, status)
    at = paging.offset(paging.decode(tag, cursor), len(endpoints))
    found: list[ChildSummary] = []
    for _ in range(config.CHILD_PAGE_BATCHES):
        if at >= len(endpoints) or len(found) >= limit:
            break
        size = config.CHILD_READ_BATCH if status else min(config.CHILD_READ_BATCH, limit - len(found))
        batch = endpoints[at : at + size]
        children = {child.job_id: child for child in store.get_many([ref.job_id for ref in batch])}
        for ref in batch:
            if len(found) >= limit:
                break
            at += 1
            child = children.get(ref.job_id)
            if child is not None and (status is None or child.status is status):
                found.append(
                    ChildSummary(
                        job_id=child.job_id,
                        endpoint_id=ref.endpoint_id,
                        url=ref.url,
                        status=child.status.value,
                        attempts=child.attempts,
                        last_error=child.last_error,
                    )
                )
    next_cursor = paging.encode(tag, at) if at < len(endpoints) else None
    return ChildPage(children=found, next_cursor=next_cursor)


def list_deliveries(
    store: JobStore, log: DeliveryLog, caller: Caller, job_id: str, *, limit: int, cursor: str | None
) -> DeliveryPage:
    """The delivery log: every child's attempts for a parent, a child's own, else nothing (only a
    fan-out's deliveries write the log, so another job's page is empty)."""
    job = find_job(store, job_id, caller)
    if job.children is not None:
        fanout_id, only = job.job_id, None
    elif job.parent_id:
        fanout_id, only = job.parent_id, job.job_id
    else:
        return DeliveryPage(deliveries=[], next_cursor=None)
    tag = paging.query_tag("deliveries", job_id)
    after = paging.decode(tag, cursor)
    if after is not None and not (isinstance(after, str) and 0 < len(after) <= 200):
        raise InvalidCursorError("the cursor is malformed")
    if after is not None and only is not None and not after.startswith(codec.attempts_prefix(only)):
        # DynamoDB refuses a start key outside the key condition's begins_with range (moto does not).
        raise InvalidCursorError("the cursor lies outside this delivery's attempts")
    attempts, following = log.page(fanout_id, only, limit, after)
    views = [DeliveryView.of(a) for a in attempts]
    return DeliveryPage(deliveries=views, next_cursor=paging.encode(tag, following) if following else None)
