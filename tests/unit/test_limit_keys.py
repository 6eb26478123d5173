"""A limit's key kinds (`LimitKey`): each one a limit accepts is the one `key_of` reads a job by."""

import pytest

from lambdas.lifecycle.attempt.limits import MISSING_FIELD, key_of
from lambdas.models.job import Job, JobStatus
from lambdas.models.limits import WHOLE_TYPE, Limit, LimitKey


def _job(owner: str = "key-alice", **payload: object) -> Job:
    return Job(
        job_id="j",
        job_type="test_limited",
        status=JobStatus.PENDING,
        payload=dict(payload),
        attempts=0,
        max_attempts=5,
        created_at="2026-12-02T00:00:00Z",
        updated_at="2026-12-02T00:00:00Z",
        due_at=0,
        owner=owner,
    )


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (LimitKey.NONE, WHOLE_TYPE),
        (LimitKey.OWNER, "key-alice"),
        (LimitKey.HOST, "hooks.example.com:8443"),
        (f"{LimitKey.PAYLOAD}customer", "key-alice|c-7"),
    ],
)
def test_each_key_kind_counts_a_job_by_its_own_value(key: str, expected: str) -> None:
    """Seen to fail with `LimitKey.HOST` as "hosts" (the validator refuses it: a limit no stack can
    declare), and with `key_of` comparing to `LimitKey.OWNER` dropped (the owner read as a payload field)."""
    job = _job(url="https://Hooks.Example.com:8443/in", customer="c-7")
    assert key_of(Limit(concurrency=1, key=key), job.owner, job.payload) == expected


def test_a_payload_key_without_a_field_is_refused_and_a_missing_field_shares_one_key() -> None:
    with pytest.raises(ValueError, match="key is one of"):
        Limit(concurrency=1, key=LimitKey.PAYLOAD)
    assert key_of(Limit(concurrency=1, key=f"{LimitKey.PAYLOAD}customer", scope="global"), "", {}) == "-"
    assert key_of(Limit(concurrency=1, key=f"{LimitKey.PAYLOAD}customer"), "", {}) == "-|-"


def test_a_payload_key_is_each_owners_own_unless_its_scope_is_global() -> None:
    """Alpha sending beta's customer id spends alpha's starts, not beta's. Seen to fail with `key_of`'s
    `if limit.scope is LimitScope.OWNER:` as `if False:` (both on the key `c-7`)."""
    limit = Limit(concurrency=1, key=f"{LimitKey.PAYLOAD}customer")
    alpha, beta = (key_of(limit, owner, {"customer": "c-7"}) for owner in ("alpha", "beta"))
    assert (alpha, beta) == ("alpha|c-7", "beta|c-7")
    shared = Limit(concurrency=1, key=f"{LimitKey.PAYLOAD}customer", scope="global")
    assert {key_of(shared, owner, {"customer": "c-7"}) for owner in ("alpha", "beta")} == {"c-7"}


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://Hooks.Example.com/in", "hooks.example.com"),
        ("https://hooks.example.com:8443/in", "hooks.example.com:8443"),
        ("not a url", MISSING_FIELD),
        ("https://[::1/in", MISSING_FIELD),
        (7, MISSING_FIELD),
    ],
)
def test_a_host_key_is_the_urls_host_with_its_port_when_it_names_one(url: object, expected: str) -> None:
    """A webhook without a port is limited by its host alone. Seen to fail against `_host`'s
    `host or MISSING_FIELD` as `host and MISSING_FIELD` (every port-less URL one shared key; sample
    581628's `x__host__mutmut_10`)."""
    assert key_of(Limit(concurrency=1, key=LimitKey.HOST), "", {"url": url}) == expected
