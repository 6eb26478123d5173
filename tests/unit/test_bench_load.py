"""The benchmark's background load (bench/load.py): it adds only what the machine's own load lacks,
says when the target was reached without it, and leaves no worker behind."""

import os
from pathlib import Path

import pytest

from bench import load
from bench.load import LoadGenerator, LoadMonitor, Window, duty_for


@pytest.mark.parametrize(
    ("target", "others", "workers", "duty"),
    [
        (4, 0.0, 4, 1.0),  # an idle machine: every worker busy all the time
        (4, 2.5, 4, 0.375),  # 1.5 missing, shared by four workers
        (4, 4.0, 4, 0.0),  # others reach the target: nothing added
        (4, 7.0, 4, 0.0),  # others exceed it: never a negative share
        (2.5, 0.0, 3, 2.5 / 3),  # a fractional target is not rounded up
    ],
)
def test_the_workers_add_what_the_others_leave_of_the_target(
    target: float, others: float, workers: int, duty: float
) -> None:
    """Seen to fail with `target - others` unclamped (a negative duty for the over-target rows) and
    without the division by `workers` (each worker given the whole missing load)."""
    assert duty_for(target, others, workers) == pytest.approx(duty)


def test_a_group_reached_the_target_without_the_generator_says_so() -> None:
    """Seen to fail with the `added < 0.05` branch removed (it printed "generator +0.0")."""
    over = Window(load=6.2, low=5.9, high=6.6, added=0.0, target=4)
    topped = Window(load=4.1, low=3.8, high=4.3, added=1.7, target=4)
    alone = Window(load=1.2, low=1.0, high=1.4, added=None, target=None)

    assert over.text() == "load 6.2 (5.9-6.6), over the target 4 without the generator"
    assert topped.text() == "load 4.1 (3.8-4.3), generator +1.7"
    assert alone.text() == "load 1.2 (1.0-1.4)"


def test_the_runnable_tasks_are_what_the_kernel_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen to fail counting `procs_running` alone (blocked tasks count towards the load average)."""
    (tmp_path / "stat").write_text("cpu  1 2 3\nprocs_running 3\nprocs_blocked 2\nctxt 9\n")
    (tmp_path / "loadavg").write_text("4.25 3.10 2.00 3/120 999\n")
    monkeypatch.setattr(load, "PROC", tmp_path)

    assert load.runnable_tasks() == 5
    assert load.load_average() == 4.25


def test_the_generator_stops_its_workers() -> None:
    """Seen to fail with `__exit__` not setting the workers' stop event (they were killed after the
    join's timeout: exit code -9, not 0)."""
    generator = LoadGenerator(2)
    with generator, LoadMonitor(generator, every=0.05) as monitor:
        pids = generator.pids
        assert len(pids) == 2
        for pid in pids:
            os.kill(pid, 0)  # alive
        window = monitor.window(0)
    assert window.target == 2
    assert window.added is not None
    codes = [worker.exitcode for worker in generator._workers]
    assert codes == [0, 0]
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
