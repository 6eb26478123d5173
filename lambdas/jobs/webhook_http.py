"""One HTTP POST to a webhook endpoint, to an address that has already been checked.

`requests` would resolve the URL's host name again when it connects, and the second answer could be a
different (private) address. The adapter below hands requests a connection pool bound to the vetted
IP address instead, while the request keeps the real host name where it matters: the Host header, the
TLS SNI name and the certificate check. Nothing else about the exchange is left open-ended: no proxies
from the environment, no redirects, bounded connect and read timeouts, and the response body is read
only up to a small cap.
"""

import time
from dataclasses import dataclass
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3 import HTTPConnectionPool, HTTPSConnectionPool

from lambdas.jobs.ssrf import Target

CONNECT_TIMEOUT_SECONDS = 3.0
READ_TIMEOUT_SECONDS = 10.0
RESPONSE_CAP_BYTES = 1024
USER_AGENT = "offload-webhooks/1"


@dataclass(frozen=True)
class HttpOutcome:
    """What came back: a status (and the first bytes of the body), or a transport error."""

    latency_ms: int
    status: int | None = None
    retry_after: str | None = None
    body: bytes = b""
    error: str | None = None  # "timeout: ..." or "connection: ..." when no response arrived


class _PinnedAdapter(HTTPAdapter):
    """Sends every request of its session to `target.address`, whatever the URL's host resolves to."""

    def __init__(self, target: Target) -> None:
        if target.address is None:
            raise ValueError("target must be resolved before it is connected to")
        super().__init__(max_retries=0)
        self._target = target
        self._pool: HTTPConnectionPool | None = None

    def get_connection_with_tls_context(
        self,
        request: Any,  # noqa: ARG002 - requests passes these by name; the pool ignores them on purpose
        verify: Any,  # noqa: ARG002
        proxies: Any = None,  # noqa: ARG002
        cert: Any = None,  # noqa: ARG002
    ) -> HTTPConnectionPool:
        if self._pool is None:
            self._pool = self._new_pool()
        return self._pool

    def _new_pool(self) -> HTTPConnectionPool:
        target = self._target
        assert target.address is not None
        if target.scheme == "https":
            # `server_hostname` is the SNI name, `assert_hostname` the name the certificate must match.
            return HTTPSConnectionPool(
                target.address,
                target.port,
                maxsize=1,
                server_hostname=target.host,
                assert_hostname=target.host,
            )
        return HTTPConnectionPool(target.address, target.port, maxsize=1)

    def close(self) -> None:
        super().close()
        if self._pool is not None:
            self._pool.close()


def post(
    target: Target,
    body: bytes,
    headers: dict[str, str],
    *,
    connect_timeout: float = CONNECT_TIMEOUT_SECONDS,
    read_timeout: float = READ_TIMEOUT_SECONDS,
    verify: bool | str = True,
) -> HttpOutcome:
    """POST `body` to `target` (resolved); never raises for network trouble, it reports it instead.

    `verify` is True (system trust store) in every deployment; tests pass the path of their own CA.
    """
    session = requests.Session()
    session.trust_env = False  # no proxies or .netrc credentials picked up from the environment
    adapter = _PinnedAdapter(target)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    request_headers = {
        **headers,
        "Host": target.host_header,
        "User-Agent": USER_AGENT,
        "Content-Type": "application/json",
        "Accept-Encoding": "identity",
    }
    started = time.monotonic()
    try:
        with session.post(
            target.url,
            data=body,
            headers=request_headers,
            timeout=(connect_timeout, read_timeout),
            allow_redirects=False,
            stream=True,
            verify=verify,
        ) as response:
            excerpt = _read_capped(response, RESPONSE_CAP_BYTES)
            return HttpOutcome(
                latency_ms=_elapsed_ms(started),
                status=response.status_code,
                retry_after=response.headers.get("Retry-After"),
                body=excerpt,
            )
    except requests.Timeout as exc:
        return HttpOutcome(latency_ms=_elapsed_ms(started), error=f"timeout: {_describe(exc)}")
    except requests.RequestException as exc:
        return HttpOutcome(latency_ms=_elapsed_ms(started), error=f"connection: {_describe(exc)}")
    finally:
        session.close()


def _read_capped(response: requests.Response, cap: int) -> bytes:
    """At most `cap` bytes of the body; a slow or endless body costs no more than the read timeout."""
    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in response.iter_content(chunk_size=256):
            chunks.append(chunk)
            size += len(chunk)
            if size >= cap:
                break
    except requests.RequestException:
        pass  # the status already arrived; a body cut short does not change what it means
    return b"".join(chunks)[:cap]


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def _describe(exc: BaseException) -> str:
    # requests wraps urllib3's errors two or three deep; the innermost one says what happened.
    inner: BaseException = exc
    for _ in range(5):
        nxt = getattr(inner, "reason", None) or inner.__cause__ or inner.__context__
        if not isinstance(nxt, BaseException) or nxt is inner:
            break
        inner = nxt
    return f"{type(inner).__name__}: {inner}"[:300]
