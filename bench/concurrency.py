"""Batch concurrency: ten jobs that each wait 200 ms on I/O, one at a time versus the configured threads.

Both modes run the same batch shape against the same drained queue, alternately, and the figure is the
ratio of the two batch durations: no idle batch is measured separately or subtracted.
"""

import os
import time

from bench import jobs, recorded
from bench.report import Figure, median, ms
from bench.stack import API, WORKER, Stack, reset_handlers
from lambdas import config

BATCH = 10
IO_SECONDS = 0.2
ROUNDS = 9  # interleaved pairs: a loaded machine's stray slow batch moves a median of 9 little
GOAL = recorded.floor_of(recorded.BATCH_SPEED_UP)  # no more than 10 % below the recorded figure


def _one_batch(stack: Stack, threads: int) -> float:
    os.environ[config.ENV_WORKER_CONCURRENCY] = str(threads)
    reset_handlers()
    stack.drain()
    for _ in range(BATCH):
        jobs.submit({"type": jobs.NAME, "payload": {"seconds": IO_SECONDS}})
    records = jobs.receive(stack, BATCH)
    assert len(records) == BATCH, len(records)
    started = time.perf_counter()
    response = jobs.run_batch(records)
    elapsed = time.perf_counter() - started
    assert response == {"batchItemFailures": []}, response
    return elapsed


def measure(stack: Stack) -> list[Figure]:
    stack.use(API, WORKER)
    jobs.install()
    threads = config.WORKER_CONCURRENCY
    sequential, concurrent = [], []
    for _ in range(ROUNDS):
        sequential.append(_one_batch(stack, 1))
        concurrent.append(_one_batch(stack, threads))
    one, many = median(sequential), median(concurrent)
    detail = (
        f"one at a time {ms(one)} / {threads} threads {ms(many)}, medians of {ROUNDS}; "
        f"recorded {recorded.BATCH_SPEED_UP:g}x (bench/recorded.py)"
    )
    return [
        Figure(
            f"batch of {BATCH} x {IO_SECONDS * 1000:.0f} ms I/O: speed-up",
            one / many,
            GOAL,
            detail,
            at_least=True,
        )
    ]
