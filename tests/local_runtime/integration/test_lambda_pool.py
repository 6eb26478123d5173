"""Warm pools report each way an invocation ends as Lambda does: a crash is a crash, with its exit
status; only an invocation that outlives its timeout is a timeout."""

import os
from collections.abc import Iterator

import pytest

from local_runtime.lambda_pool import FunctionConfig, FunctionPool
from local_runtime.state import REPO_ROOT

HANDLERS = "tests.local_runtime.integration.pool_handlers.handler"


def _pool(handler: str = HANDLERS, timeout: float = 5) -> FunctionPool:
    config = FunctionConfig(
        name="pool-test",
        handler=handler,
        timeout_seconds=timeout,
        memory_mb=128,
        environment={
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": str(REPO_ROOT),
            "AWS_REGION": "us-east-1",
        },
    )
    return FunctionPool(config, max_environments=1, log_sink=lambda _name, _line: None)


@pytest.fixture
def pool() -> Iterator[FunctionPool]:
    created = _pool()
    yield created
    created.close()


def test_a_crash_is_reported_with_its_exit_status_never_as_a_timeout(pool: FunctionPool) -> None:
    # The race: the response pipe reads end-of-file while the process is still shutting down.
    for _ in range(10):
        invocation = pool.invoke({"exit": 3})

        assert not invocation.timed_out
        assert invocation.error_type == "Runtime.ExitError"
        assert invocation.error_message is not None
        assert invocation.error_message.endswith("Error: Runtime exited with error: exit status 3")
    assert pool.timeouts == 0


def test_a_killed_process_is_reported_with_its_signal(pool: FunctionPool) -> None:
    invocation = pool.invoke({"kill": True})

    assert (invocation.timed_out, invocation.error_type) == (False, "Runtime.ExitError")
    assert invocation.error_message is not None
    assert invocation.error_message.endswith("Runtime exited with error: signal: killed")


def test_the_next_invocation_after_a_crash_starts_a_fresh_environment(pool: FunctionPool) -> None:
    first = pool.invoke({})
    pool.invoke({"exit": 1})
    after = pool.invoke({})

    assert after.ok
    assert after.cold_start
    assert after.result["pid"] != first.result["pid"]


def test_an_invocation_past_its_timeout_is_a_timeout() -> None:
    pool = _pool(timeout=1)
    try:
        invocation = pool.invoke({"sleep": 10})
    finally:
        pool.close()

    assert invocation.timed_out
    assert (invocation.error_type, invocation.error_message) == (
        "Sandbox.Timedout",
        "Task timed out after 1.00 seconds",
    )
    assert pool.timeouts == 1


def test_a_process_that_exits_during_init_is_reported_with_its_exit_status() -> None:
    pool = _pool("tests.local_runtime.integration.pool_exit_on_import.handler")
    try:
        invocation = pool.invoke({})
    finally:
        pool.close()

    assert (invocation.timed_out, invocation.error_type) == (False, "Runtime.ExitError")
    assert invocation.error_message is not None
    assert invocation.error_message.endswith("Runtime exited with error: exit status 4")
