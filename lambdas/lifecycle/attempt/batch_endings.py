"""Fan-out children that end in the same worker batch end together: one transaction for the terminal
writes of a parent's children, not one each (`ChildEndings.end_together`).

Each message of a batch has a `Place`. A child that ends done waits there for the batch's messages that
may still end as its siblings: those not yet claimed, and its claimed siblings still running (a message
of another parent, or of none, is not waited for). When none is left, or when every thread of the batch
waits (so none could claim another message), one of the waiting siblings writes for all of them. A child
waits at most `wait_seconds`, or as long as its batch has run so far when that is longer (a loaded
machine spreads a batch's endings out as much as it slows them), never more than `max_wait_seconds`
nor into the invocation's last second: then it writes alone, as every child does whose group could
not be written together. Its flow-control slot is given back before it waits (the work the slot was
for is over); the wait holds its lease a little longer, and its `finishedAt` is when it ended.
"""

import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from lambdas.models.job import Job
from lambdas.observability import logger
from lambdas.store.jobs import ChildEnding, Ended, JobStore

# An invocation keeps this much of its time for the writes of children that could not wait longer.
_LAST_SECONDS = 1.0

Group = tuple[str, str]  # (owner, parent id)


class _State(StrEnum):
    UNCLAIMED = "unclaimed"  # may still turn out to be anyone's child
    RUNNING = "running"  # claimed, a child of `group`
    WAITING = "waiting"
    GONE = "gone"  # ended, or will end another way than together


@dataclass
class _Waiter:
    ending: ChildEnding
    decided: bool = False
    ended: Ended | None = None  # None once decided: write alone


class BatchEndings:
    """The places of one batch's messages, and the children waiting to end together."""

    def __init__(
        self,
        store: JobStore,
        messages: int,
        threads: int,
        wait_seconds: float,
        max_wait_seconds: float,
        remaining_ms: Callable[[], int],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._threads = threads
        self._wait_seconds = wait_seconds
        self._max_wait_seconds = max_wait_seconds
        self._started = clock()
        self._remaining_ms = remaining_ms
        self._clock = clock
        self._changed = threading.Condition()
        self._unclaimed = messages
        self._running: Counter[Group] = Counter()
        self._waiting: defaultdict[Group, list[_Waiter]] = defaultdict(list)
        self._waiters = 0

    def place(self) -> "Place":
        return Place(self)

    def claimed(self, place: "Place", job: Job) -> None:
        with self._changed:
            if place.state is _State.UNCLAIMED:
                group = (job.owner, job.parent_id) if job.parent_id else None
                self._move(place, _State.RUNNING if group else _State.GONE, group)

    def leave(self, place: "Place") -> None:
        with self._changed:
            if place.state in (_State.UNCLAIMED, _State.RUNNING):
                self._move(place, _State.GONE)

    def _move(self, place: "Place", state: _State, group: Group | None = None) -> None:
        """Under the lock: `place` leaves its state for `state`."""
        if place.state is _State.UNCLAIMED:
            self._unclaimed -= 1
        elif place.state is _State.RUNNING and place.group is not None:
            self._running[place.group] -= 1
        place.state, place.group = state, group or place.group
        if state is _State.RUNNING and place.group is not None:
            self._running[place.group] += 1
        self._changed.notify_all()

    def _ready(self, group: Group) -> bool:
        """Under the lock: nothing more can join `group`, or nothing in the batch can move on."""
        no_more = self._unclaimed == 0 and self._running[group] == 0
        return no_more or self._waiters >= self._threads

    def wait_at(self, now: float) -> float:
        """How long a child that ends at `now` may wait for its siblings (see above)."""
        wait = min(max(self._wait_seconds, now - self._started), self._max_wait_seconds)
        return min(wait, self._remaining_ms() / 1000 - _LAST_SECONDS)

    def end(self, place: "Place", ending: ChildEnding) -> Ended:
        group = (ending.owner, ending.parent_id)
        waiter = _Waiter(ending)
        now = self._clock()
        deadline = now + self.wait_at(now)
        taken: list[_Waiter] = []
        place.before_waiting()
        with self._changed:
            self._move(place, _State.WAITING, group)
            self._waiting[group].append(waiter)
            self._waiters += 1
            while not waiter.decided and not taken:
                if waiter in self._waiting[group] and self._ready(group):
                    taken = self._waiting.pop(group)
                    self._waiters -= len(taken)
                    break
                left = deadline - self._clock()
                if waiter in self._waiting[group] and left <= 0:
                    self._waiting[group].remove(waiter)
                    self._waiters -= 1
                    waiter.decided = True  # waited long enough: alone
                    break
                # A waiter taken by a sibling waits, unbounded, for that sibling's write (always decided).
                self._changed.wait(left if waiter in self._waiting[group] else None)
            place.state = _State.GONE
        if taken:
            self._write(taken)
        return waiter.ended or self._store.end_child(ending)

    def _write(self, taken: list[_Waiter]) -> None:
        """One group's writes together; every waiter decided, whatever happens."""
        ended: list[Ended | None] = []
        try:
            if len(taken) > 1:
                ended = self._store.end_children([w.ending for w in taken])
        except Exception:
            logger.exception("children could not end together; each writes alone")
        finally:
            with self._changed:
                for n, waiter in enumerate(taken):
                    waiter.decided, waiter.ended = True, ended[n] if n < len(ended) else None
                self._changed.notify_all()


class Place:
    """One message's place in its batch: unclaimed, a running child of a parent, waiting, or gone."""

    def __init__(self, batch: BatchEndings) -> None:
        self._batch = batch
        self.state = _State.UNCLAIMED
        self.group: Group | None = None
        self.before_waiting: Callable[[], None] = _nothing  # the worker's: its flow-control slot back

    def claimed(self, job: Job) -> None:
        """The message's job is claimed: a child that may end with its siblings, or nothing to wait for."""
        self._batch.claimed(self, job)

    def end(self, ending: ChildEnding) -> Ended:
        """The child's terminal write, made with its siblings' when they end in time (`Together`)."""
        return self._batch.end(self, ending)

    def leave(self) -> None:
        """The message is done with: whatever it did not end together, it ended another way."""
        self._batch.leave(self)


def _nothing() -> None:
    pass
