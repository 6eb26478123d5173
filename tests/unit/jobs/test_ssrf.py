"""The SSRF policy for webhook URLs: a corpus of tricks that must all be refused, and the addresses
that must still work. Host names are resolved through `ssrf.lookup`, replaced here by a fixed table so
the tests need no DNS; `localhost` goes through the real resolver."""

import threading
from collections.abc import Iterator

import pytest

from lambdas import config
from lambdas.jobs import ssrf
from lambdas.jobs.base import InvalidPayloadError
from lambdas.jobs.types import webhook_fanout
from tests.support.contexts import submission_context

# The API function's environment, with the default webhook policy (https only, public addresses only).
API_ENVIRONMENT = {
    config.ENV_JOBS_TABLE: "jobs",
    config.ENV_QUEUE_URL: "q",
    config.ENV_UPLOADS_BUCKET: "b",
    config.ENV_OPERATOR_KEY_ID: "operator-key-id",
    config.ENV_DLQ_URL: "dlq",
    config.ENV_DELIVERIES_TABLE: "deliveries",
    config.ENV_WEBHOOK_SECRETS_TABLE: "webhook-secrets",
    config.ENV_LIMITS_TABLE: "limits",
    config.ENV_SCHEDULES_TABLE: "schedules",
    config.ENV_WEBHOOK_SECRET_ARN: "arn:aws:secretsmanager:us-east-1:123456789012:secret:webhooks",
}

FAKE_DNS = {
    "metadata.attacker.test": ["169.254.169.254"],
    "internal.attacker.test": ["10.1.2.3"],
    "v6-metadata.attacker.test": ["fd00:ec2::254"],
    "mapped.attacker.test": ["::ffff:192.168.0.10"],
    "mixed.attacker.test": ["93.184.216.34", "10.0.0.5"],  # one public answer is not enough
    "127.0.0.1.nip.test": ["127.0.0.1"],
    "cgnat.attacker.test": ["100.100.100.200"],  # Alibaba's metadata address
    "hooks.example.com": ["93.184.216.34"],
    "v6.example.com": ["2606:4700:4700::1111"],
}


@pytest.fixture(autouse=True)
def fake_dns(monkeypatch):
    real_lookup = ssrf.lookup

    def lookup(host: str, port: int) -> list[str]:
        if host in FAKE_DNS:
            return FAKE_DNS[host]
        if host == "localhost":
            return real_lookup(host, port)
        raise ssrf.UnresolvedTargetError(f"{host}: unknown in this test", permanent=True)

    monkeypatch.setattr(ssrf, "lookup", lookup)


REFUSED = [
    # loopback, in every spelling resolvers accept
    "https://127.0.0.1/hook",
    "https://localhost/hook",
    "https://LOCALHOST./hook",
    "https://2130706433/",  # decimal
    "https://0x7f000001/",  # hex
    "https://0177.0.0.1/",  # octal
    "https://017700000001/",  # octal, one number
    "https://0x7f.0.0.1/",
    "https://127.1/",  # short form
    "https://0/",
    "https://①②⑦.0.0.1/",  # NFKC turns these digits into 127.0.0.1
    "https://[::1]/",
    "https://[::ffff:127.0.0.1]/",  # IPv4-mapped IPv6
    "https://[::ffff:7f00:1]/",
    "https://[::127.0.0.1]/",  # IPv4-compatible IPv6
    # cloud metadata
    "https://169.254.169.254/latest/meta-data/iam/security-credentials/",
    "https://[fd00:ec2::254]/latest/meta-data/",
    "https://[::ffff:169.254.169.254]/",
    "https://[0:0:0:0:0:ffff:a9fe:a9fe]/",
    "https://[64:ff9b::a9fe:a9fe]/",  # NAT64 of 169.254.169.254
    "https://[2002:a9fe:a9fe::1]/",  # 6to4 of 169.254.169.254
    "https://100.100.100.200/",  # CGNAT range
    # private, link-local, multicast, reserved, unspecified
    "https://10.0.0.1/",
    "https://172.16.5.4/",
    "https://192.168.1.1:8443/",
    "https://0.0.0.0/",
    "https://[::]/",
    "https://224.0.0.1/",
    "https://[ff02::1]/",
    "https://240.0.0.1/",
    "https://255.255.255.255/",
    "https://[fe80::1]/",
    "https://[fe80::1%25eth0]/",  # zone id
    "https://[fc00::1]/",
    "https://192.0.2.10/",  # documentation range
    "https://198.18.0.1/",  # benchmarking range
    # names that resolve to where they must not go
    "https://metadata.attacker.test/",
    "https://internal.attacker.test/",
    "https://v6-metadata.attacker.test/",
    "https://mapped.attacker.test/",
    "https://mixed.attacker.test/",
    "https://127.0.0.1.nip.test/",
    "https://cgnat.attacker.test/",
    # parsing tricks
    "https://hooks.example.com@169.254.169.254/",
    "https://user:pass@hooks.example.com/",  # user info is refused even for a good host
    "https://169.254.169.254#@hooks.example.com/",
    "https://169.254.169.254\\@hooks.example.com/",
    "https://hooks.example.com\t.169.254.169.254/",
    "https://hooks.example.com:0/",
    "https://hooks.example.com:99999/",
    # schemes
    "http://hooks.example.com/",  # plain http is off unless the deployment allows it
    "ftp://hooks.example.com/",
    "file:///etc/passwd",
    "gopher://127.0.0.1:6379/_INFO",
    "https:///no-host",
]


def _check(url: str, policy: ssrf.TargetPolicy) -> ssrf.Target:
    return ssrf.resolve(ssrf.parse(url, policy), policy)


def test_the_corpus_is_large_enough():
    assert len(REFUSED) >= 25
    assert len(set(REFUSED)) == len(REFUSED)


@pytest.mark.parametrize("url", REFUSED)
def test_refused_by_default_policy(url):
    with pytest.raises(ssrf.RefusedTargetError):
        _check(url, ssrf.TargetPolicy())


@pytest.mark.parametrize("url", REFUSED)
def test_refused_at_submission_with_422(url):
    payload = webhook_fanout.WebhookFanoutPayload.model_validate(
        {
            "eventType": "invoice.paid",
            "data": {"id": 1},
            "endpoints": [{"id": "good", "url": "https://hooks.example.com/ok"}, {"id": "bad", "url": url}],
        }
    )
    with pytest.raises(InvalidPayloadError):
        webhook_fanout.check_submission(payload, submission_context(API_ENVIRONMENT))


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("https://hooks.example.com/ok?x=1", "93.184.216.34"),
        ("https://HOOKS.example.com./ok", "93.184.216.34"),
        ("https://v6.example.com/", "2606:4700:4700::1111"),
        ("https://8.8.8.8/", "8.8.8.8"),
        ("https://[2606:4700:4700::1111]:8443/", "2606:4700:4700::1111"),
    ],
)
def test_public_targets_pass_and_pin_the_checked_address(url, address):
    target = _check(url, ssrf.TargetPolicy())
    assert target.address == address


def test_http_only_when_the_deployment_allows_it():
    policy = ssrf.TargetPolicy(allow_http=True)
    assert _check("http://hooks.example.com/", policy).port == 80
    with pytest.raises(ssrf.RefusedTargetError):
        _check("http://10.0.0.1/", policy)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/", "http://localhost:9000/x", "http://[::1]:8080/"])
def test_loopback_switch_admits_loopback(url):
    policy = ssrf.TargetPolicy(allow_http=True, allow_loopback=True)
    assert _check(url, policy).address in ("127.0.0.1", "::1")


@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.1/",
        "http://169.254.169.254/",
        "http://[::ffff:127.0.0.1]/",  # only 127.0.0.0/8 and ::1 themselves
        "http://0.0.0.0:8080/",
        "http://metadata.attacker.test/",
    ],
)
def test_loopback_switch_admits_nothing_else(url):
    with pytest.raises(ssrf.RefusedTargetError):
        _check(url, ssrf.TargetPolicy(allow_http=True, allow_loopback=True))


def test_host_header_keeps_the_name_and_a_non_default_port():
    policy = ssrf.TargetPolicy()
    assert _check("https://hooks.example.com/", policy).host_header == "hooks.example.com"
    assert _check("https://hooks.example.com:8443/", policy).host_header == "hooks.example.com:8443"
    assert _check("https://[2606:4700:4700::1111]/", policy).host_header == "[2606:4700:4700::1111]"


def test_unknown_host_is_refused_at_submission_but_a_flaky_resolver_is_not(monkeypatch):
    payload = webhook_fanout.WebhookFanoutPayload.model_validate(
        {"eventType": "e", "data": {}, "endpoints": [{"id": "a", "url": "https://nowhere.test/"}]}
    )
    with pytest.raises(InvalidPayloadError, match=r"nowhere\.test"):
        webhook_fanout.check_submission(payload, submission_context(API_ENVIRONMENT))

    def unavailable(host: str, port: int) -> list[str]:
        raise ssrf.UnresolvedTargetError("temporary failure in name resolution", permanent=False)

    monkeypatch.setattr(ssrf, "lookup", unavailable)
    webhook_fanout.check_submission(
        payload, submission_context(API_ENVIRONMENT)
    )  # accepted; deliveries check again


class StalledResolver:
    """A resolver that answers `FAKE_DNS` at once but never answers for `*.stalled.test` until
    released (or 10 s pass): a DNS server that stopped answering, with no real DNS or sleep."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.answered_stalled = 0

    def __call__(self, host: str, port: int) -> list[str]:
        if not host.endswith(".stalled.test"):
            return FAKE_DNS[host]
        self.released.wait(timeout=10)
        self.answered_stalled += 1
        return ["93.184.216.34"]


@pytest.fixture
def stalled(monkeypatch) -> Iterator[StalledResolver]:
    resolver = StalledResolver()
    monkeypatch.setattr(ssrf, "lookup", resolver)
    monkeypatch.setattr(webhook_fanout, "DNS_CHECK_SECONDS", 0.2)
    yield resolver
    resolver.released.set()


def _fanout(*hosts: str) -> webhook_fanout.WebhookFanoutPayload:
    endpoints = [{"id": f"e{i}", "url": f"https://{host}/hook"} for i, host in enumerate(hosts)]
    return webhook_fanout.WebhookFanoutPayload.model_validate(
        {"eventType": "e", "data": {}, "endpoints": endpoints}
    )


def test_submission_dns_checks_end_at_one_deadline_for_all_hosts(stalled):
    """Seen to fail against `_resolution_problems` shutting its pool down with `wait=True` (the check
    waited for every look-up: 160 stalled hosts on 16 threads, 100 s until the resolver gave up)."""
    payload = _fanout(*(f"h{i}.stalled.test" for i in range(160)))

    webhook_fanout.check_submission(payload, submission_context(API_ENVIRONMENT))  # accepted

    # the check returned while every look-up was still waiting for the resolver
    assert stalled.answered_stalled == 0


def test_answers_that_came_in_time_still_refuse(stalled):
    payload = _fanout("internal.attacker.test", *(f"h{i}.stalled.test" for i in range(40)))
    with pytest.raises(InvalidPayloadError, match=r"internal\.attacker\.test resolves to 10\.1\.2\.3"):
        webhook_fanout.check_submission(payload, submission_context(API_ENVIRONMENT))
