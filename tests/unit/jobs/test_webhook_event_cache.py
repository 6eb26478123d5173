"""The deliveries' event cache: one read of a fan-out's parent per process, however many threads ask."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from lambdas.jobs.base import PermanentJobError
from lambdas.jobs.types.webhook_delivery import _EventCache
from lambdas.models.job import Job, JobStatus

THREADS = 5


def _parent() -> Job:
    return Job(
        job_id="fanout-1",
        job_type="webhook_fanout",
        status=JobStatus.WAITING,
        payload={"eventType": "invoice.paid", "data": {"n": 1}, "endpoints": []},
        attempts=1,
        max_attempts=5,
        created_at="2026-11-30T00:00:00Z",
        updated_at="2026-11-30T00:00:00Z",
        due_at=0,
    )


def test_threads_asking_for_one_fan_out_at_once_share_a_single_read() -> None:
    """Broken line: `_EventCache.get`'s `with reading:` as `with threading.Lock():` (each thread that
    missed the cache reads the parent itself: one GetItem per delivery of the batch)."""
    cache = _EventCache()
    started = threading.Barrier(THREADS)
    reads: list[int] = []

    def read_parent() -> Job:
        reads.append(1)
        # A slow GetItem: the other threads ask meanwhile (a broken cache lets each of them read too).
        threading.Event().wait(0.2)
        return _parent()

    def ask(_: int) -> bytes:
        started.wait(timeout=5)
        return cache.get("fanout-1", read_parent).body

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        bodies = set(pool.map(ask, range(THREADS)))

    assert len(reads) == 1
    assert bodies == {
        b'{"event":"invoice.paid","client":"","data":{"n":1},"timestamp":"2026-11-30T00:00:00Z"}'
    }


def test_a_failed_read_is_not_kept_and_the_next_ask_reads_again() -> None:
    cache = _EventCache()
    with pytest.raises(PermanentJobError, match="no longer exists"):
        cache.get("fanout-1", lambda: None)

    assert cache.get("fanout-1", _parent).event_type == "invoice.paid"
