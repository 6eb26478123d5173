"""Fixtures every layer shares: a clean process state per test, fake AWS credentials, the template."""

from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest

from lambdas.jobs import registry
from lambdas.store import clients


def _share_botocore_loader() -> None:
    """One botocore data loader for every session the tests make.

    Each test builds fresh clients (the autouse fixture below), each from a new boto3 session, and a new
    session's loader parses botocore's service models again: about a second of JSON per integration
    test, and most of what a `make mutate` mutant costs. A loader caches what it parsed, and sessions
    may share one (clients of one session already do), so the models are parsed once per process.
    """
    from botocore import session

    session.create_loader = cache(session.create_loader)


_share_botocore_loader()


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test sees another's clients, cached services, metrics or test job types, or real AWS."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "Offload",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    before = set(registry.names())
    _reset_process_state()
    yield
    for name in set(registry.names()) - before:
        registry.unregister(name)
    _reset_process_state()


def _reset_process_state() -> None:
    from lambdas.handlers import dead_letter, recovery, worker, workflow
    from lambdas.models import settings
    from lambdas.observability import metrics

    clients.reset()
    settings.reset()
    for cached in (worker._worker, dead_letter._consumer, recovery._sweeper, workflow._runtime):
        cached.cache_clear()
    metrics.clear_metrics()


@pytest.fixture(scope="session")
def template() -> dict[str, Any]:
    """The stack as CloudFormation sees it, synthesized once per test session (without bundling)."""
    return _synthesized()


@cache
def _synthesized() -> dict[str, Any]:
    # Once per process, not per session: `make mutate` runs a session per mutant in forks of one process.
    from infra.synth import synthesize

    return synthesize()
