"""A background load for `python -m bench --load N`, and the load average each group was taken at.

Issue 25's goals must hold "at a load average around 4". The generator tops the machine's own load up
to the target and adds nothing when other work already reaches it (this machine is shared): a
controller thread samples the runnable tasks (`procs_running` + `procs_blocked` in /proc/stat, what
the kernel's load average averages) ten times a second, takes out its own busy workers and itself,
smooths the rest over ~10 s, and gives the missing part to `ceil(N)` worker processes as a duty cycle
(busy-looping `duty` of every 100 ms, sleeping the rest). A busy worker is runnable whether it holds a
core or waits for one, so n workers at duty d add n * d to the load. Feeding forward on what others
run, rather than steering by the 1-minute average itself (which lags by a minute), keeps it from
swinging. The workers run at the default priority: they compete for the cores as other work does.

`LoadMonitor` (always on, generator or not) samples the 1-minute load average every second, so every
group's figures print beside the load they were taken at.
"""

from __future__ import annotations

import math
import multiprocessing
import threading
import time
from dataclasses import dataclass
from multiprocessing.sharedctypes import Synchronized, SynchronizedArray
from pathlib import Path
from typing import Any

PERIOD_SECONDS = 0.1  # a worker's duty cycle
SAMPLE_SECONDS = 0.1  # the controller's look at the runnable tasks
SMOOTHING_SECONDS = 10.0  # how long the others' load is averaged over
WARMUP_SECONDS = 60.0  # at most, before the first group, for the 1-minute average to reach the target
WARMUP_TOLERANCE = 0.3
PROC = Path("/proc")


def load_average() -> float:
    """The kernel's 1-minute load average."""
    return float((PROC / "loadavg").read_text().split()[0])


def runnable_tasks() -> int:
    """Tasks running or waiting for a core, and in uninterruptible sleep: what the load average counts."""
    counts = dict(
        line.split()[:2] for line in (PROC / "stat").read_text().splitlines() if line.startswith("procs_")
    )
    return int(counts.get("procs_running", 0)) + int(counts.get("procs_blocked", 0))


def duty_for(target: float, others: float, workers: int) -> float:
    """Each worker's share of busy time so that `workers` of them add what `others` leave of `target`."""
    if workers <= 0:
        return 0.0
    return min(1.0, max(0.0, target - others) / workers)


def _spin(duty: Synchronized[float], busy: SynchronizedArray[int], index: int, stop: Any) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        share = duty.value
        if share > 0:
            busy[index] = 1
            until = started + share * PERIOD_SECONDS
            while time.perf_counter() < until:
                pass
            busy[index] = 0
        rest = PERIOD_SECONDS - (time.perf_counter() - started)
        if rest > 0:
            stop.wait(rest)


@dataclass(frozen=True)
class Sample:
    at: float  # time.monotonic()
    load: float  # the 1-minute load average
    added: float  # what the generator added (runnable workers), 0 without one


@dataclass(frozen=True)
class Window:
    """The load over one group's run."""

    load: float  # mean 1-minute load average
    low: float
    high: float
    added: float | None  # mean added by the generator; None without one
    target: float | None

    def text(self) -> str:
        spread = f"{self.low:.1f}-{self.high:.1f}"
        text = f"load {self.load:.1f} ({spread})"
        if self.target is None or self.added is None:
            return text
        if self.added < 0.05:
            return f"{text}, over the target {self.target:g} without the generator"
        return f"{text}, generator +{self.added:.1f}"


class LoadMonitor:
    """Samples the load average every second in a thread; `window(since)` summarises a stretch of it."""

    def __init__(self, generator: LoadGenerator | None = None, every: float = 1.0) -> None:
        self._generator = generator
        self._every = every
        self._samples: list[Sample] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="load-monitor", daemon=True)

    def __enter__(self) -> LoadMonitor:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        added = self._generator.added if self._generator else 0.0
        with self._lock:
            self._samples.append(Sample(time.monotonic(), load_average(), added))

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self._sample()

    def window(self, since: float) -> Window:
        self._sample()
        with self._lock:
            samples = [s for s in self._samples if s.at >= since] or self._samples[-1:]
        loads = [s.load for s in samples]
        generator = self._generator
        return Window(
            load=sum(loads) / len(loads),
            low=min(loads),
            high=max(loads),
            added=sum(s.added for s in samples) / len(samples) if generator else None,
            target=generator.target if generator else None,
        )


class LoadGenerator:
    """`ceil(target)` busy worker processes whose duty cycle tops the load up to `target` (see above)."""

    def __init__(self, target: float) -> None:
        self.target = target
        self._count = max(1, math.ceil(target))
        context = multiprocessing.get_context("spawn")  # no copy of the benchmark's threads and clients
        self._duty: Synchronized[float] = context.Value("d", 0.0)
        self._busy: SynchronizedArray[int] = context.Array("b", self._count)
        self._stop_workers = context.Event()
        self._workers = [
            context.Process(
                target=_spin,
                args=(self._duty, self._busy, index, self._stop_workers),
                name=f"bench-load-{index}",
                daemon=True,
            )
            for index in range(self._count)
        ]
        self._stop = threading.Event()
        self._controller = threading.Thread(target=self._control, name="load-controller", daemon=True)
        self.others = 0.0  # the smoothed runnable tasks that are not the generator's
        self._boost = False  # warming up: every worker busy until the average reaches the target

    @property
    def pids(self) -> list[int]:
        return [worker.pid for worker in self._workers if worker.pid is not None]

    @property
    def added(self) -> float:
        return float(self._duty.value) * self._count

    def __enter__(self) -> LoadGenerator:
        for worker in self._workers:
            worker.start()
        self.others = float(max(0, runnable_tasks() - 1))
        self._controller.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._controller.join()
        self._stop_workers.set()
        for worker in self._workers:
            worker.join(5)
            if worker.is_alive():
                worker.kill()
                worker.join()

    def _control(self) -> None:
        weight = SAMPLE_SECONDS / SMOOTHING_SECONDS
        while not self._stop.wait(SAMPLE_SECONDS):
            own = sum(self._busy[:])
            others = max(0, runnable_tasks() - 1 - own)  # less this thread, reading
            self.others += weight * (others - self.others)
            self._duty.value = 1.0 if self._boost else duty_for(self.target, self.others, self._count)

    def warm_up(self, limit: float = WARMUP_SECONDS) -> float:
        """Wait until the 1-minute average is near the target (or above it), at most `limit` s, with
        every worker busy meanwhile (the average follows the runnable tasks with a minute's lag)."""
        deadline = time.monotonic() + limit
        self._boost = True
        try:
            while time.monotonic() < deadline and load_average() < self.target - WARMUP_TOLERANCE:
                time.sleep(1.0)
        finally:
            self._boost = False
        return load_average()
