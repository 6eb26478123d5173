"""HTTPS to a pinned address: the TLS handshake still names and verifies the URL's host.

A test CA signs a certificate for `hooks.test`; the server listens on 127.0.0.1 and the resolver is
replaced so `hooks.test` means 127.0.0.1. No network, no system trust store involved.
"""

import datetime
import ssl

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from lambdas.jobs import ssrf, webhook_http
from tests.support.webhook_receiver import Receiver, Reply

POLICY = ssrf.TargetPolicy(allow_loopback=True)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificate(subject: str, issuer_key, issuer: str, public_key, *, ca: bool, dns: str | None = None):
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if dns:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(dns)]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    directory = tmp_path_factory.mktemp("pki")
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _certificate("offload test CA", ca_key, "offload test CA", ca_key.public_key(), ca=True)
    (directory / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    for host in ("hooks.test", "other.test"):
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _certificate(host, ca_key, "offload test CA", key.public_key(), ca=False, dns=host)
        (directory / f"{host}.pem").write_bytes(
            cert.public_bytes(serialization.Encoding.PEM)
            + key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
    return directory


def _tls_receiver(pki, served_name: str, seen_sni: list[str | None]) -> Receiver:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki / f"{served_name}.pem")
    context.sni_callback = lambda _sock, name, _ctx: seen_sni.append(name)
    return Receiver(tls=context)


@pytest.fixture(autouse=True)
def hooks_test_is_loopback(monkeypatch):
    monkeypatch.setattr(ssrf, "lookup", lambda host, port: ["127.0.0.1"])


def test_https_to_the_pinned_address_sends_sni_and_verifies_the_name(pki):
    seen_sni: list[str | None] = []
    with _tls_receiver(pki, "hooks.test", seen_sni) as server:
        target = ssrf.resolve(ssrf.parse(f"https://hooks.test:{server.port}/in", POLICY), POLICY)
        outcome = webhook_http.post(target, b"{}", {}, verify=str(pki / "ca.pem"))
    assert outcome.error is None
    assert outcome.status == 200
    assert seen_sni == ["hooks.test"]
    assert server.requests[0].headers["Host"] == f"hooks.test:{server.port}"


def test_a_certificate_for_another_name_is_refused(pki):
    with _tls_receiver(pki, "other.test", []) as server:
        target = ssrf.resolve(ssrf.parse(f"https://hooks.test:{server.port}/in", POLICY), POLICY)
        outcome = webhook_http.post(target, b"{}", {}, verify=str(pki / "ca.pem"))
    assert outcome.status is None
    assert "certificate" in (outcome.error or "").lower()
    assert server.requests == []


def test_an_untrusted_certificate_is_refused(pki):
    with _tls_receiver(pki, "hooks.test", []) as server:
        target = ssrf.resolve(ssrf.parse(f"https://hooks.test:{server.port}/in", POLICY), POLICY)
        outcome = webhook_http.post(target, b"{}", {})  # the system trust store does not know our CA
    assert outcome.status is None
    assert "certificate" in (outcome.error or "").lower()


def test_the_total_deadline_cuts_a_trickling_answer_over_tls_too(pki):
    """Seen to fail against `_Watchdog.watch` keeping the socket itself (`duplicate = sock`) rather
    than a duplicate of its descriptor: TLS detaches that object, the cut missed the connection, and
    the 7 s trickle was read to its end (6.4 s)."""
    with _tls_receiver(pki, "hooks.test", []) as server:
        server.script("/in", Reply(200, body=b"x" * 25, trickle=0.1))
        target = ssrf.resolve(ssrf.parse(f"https://hooks.test:{server.port}/in", POLICY), POLICY)
        outcome = webhook_http.post(target, b"{}", {}, total_timeout=0.5, verify=str(pki / "ca.pem"))
    assert outcome.status is None
    assert outcome.error == "timeout: no complete answer within the delivery's deadline of 0.5 s"
    assert outcome.latency_ms < 3_000  # the whole answer takes 7 s to arrive
