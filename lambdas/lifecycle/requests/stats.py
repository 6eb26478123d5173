"""GET /stats: the caller's jobs per state and per type, jobs finished per minute, the queues' depths.

Cheap at any scale, never a Scan: every figure comes from the same list indexes (and the same scoping)
as GET /jobs, read a bounded number of entries at a time (`lambdas.store.gauges`). A count stops at
COUNT_CAP and then says `more` (the console shows "1,000+"); the per-minute series reads at most
COUNT_CAP finished jobs per state. The queue depths are SQS's own approximate attributes: they are
the pipeline's, not the caller's, so only the operator sees them (a client's are null: how busy the
pipeline is says how much others submit).
"""

from collections import Counter
from typing import Final

from lambdas.lifecycle.requests.reads import list_query
from lambdas.models.caller import Caller
from lambdas.models.job import JobStatus
from lambdas.models.stats import DeadLetterQueueView, MinuteView, QueueView, StatsView, Tally
from lambdas.models.timestamps import iso_time
from lambdas.store.gauges import Bounded, JobGauges, QueueDepth, queue_depth
from lambdas.store.jobs import JobStore

COUNT_CAP: Final = 1000
WINDOW_MINUTES: Final = 60
_FINISHED: Final = (JobStatus.DONE, JobStatus.DEAD)


def pipeline_stats(
    store: JobStore, gauges: JobGauges, caller: Caller, *, queue_url: str, dlq_url: str
) -> StatsView:
    now = store.now()
    statuses = {
        status.value: _tally(gauges.count(list_query(store, caller, status, None), COUNT_CAP))
        for status in JobStatus
    }
    types = gauges.sample(list_query(store, caller, None, None), "jobType", COUNT_CAP)
    minutes, more = _finished_per_minute(store, gauges, caller, now)
    oldest = gauges.oldest(list_query(store, caller, JobStatus.PENDING, None))
    main = queue_depth(queue_url) if caller.operator else QueueDepth(None, None, None)
    dead_letters = DeadLetterQueueView(visible=queue_depth(dlq_url).visible) if caller.operator else None
    return StatsView(
        statuses=statuses,
        types={name: Tally(count=n, more=types.more) for name, n in sorted(Counter(types.values).items())},
        queue=QueueView(
            visible=main.visible,
            in_flight=main.in_flight,
            delayed=main.delayed,
            oldest_pending_age_seconds=None if oldest is None else max(0.0, now - int(oldest) / 1000),
        ),
        dead_letter_queue=dead_letters,
        finished_per_minute=minutes,
        more=more,
    )


def _tally(bounded: Bounded) -> Tally:
    return Tally(count=min(bounded.count, COUNT_CAP), more=bounded.more or bounded.count > COUNT_CAP)


def _finished_per_minute(
    store: JobStore, gauges: JobGauges, caller: Caller, now: float
) -> tuple[list[MinuteView], bool]:
    """Jobs that entered done or dead in each of the last WINDOW_MINUTES minutes (the current one
    last), by the time they entered it (the indexes' sort key, epoch milliseconds)."""
    first = (int(now) // 60 - (WINDOW_MINUTES - 1)) * 60
    counts = {status: [0] * WINDOW_MINUTES for status in _FINISHED}
    more = False
    for status in _FINISHED:
        query = list_query(store, caller, status, None)
        sample = gauges.sample(query, query.index.sort_key, COUNT_CAP, since=first * 1000)
        more = more or sample.more
        for entered in sample.values:
            minute = (int(entered) // 1000 - first) // 60
            if 0 <= minute < WINDOW_MINUTES:
                counts[status][minute] += 1
    minutes = [
        MinuteView(
            minute=iso_time(first + 60 * n),
            done=counts[JobStatus.DONE][n],
            dead=counts[JobStatus.DEAD][n],
        )
        for n in range(WINDOW_MINUTES)
    ]
    return minutes, more
