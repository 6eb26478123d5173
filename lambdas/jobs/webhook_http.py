"""One HTTP POST to a webhook endpoint, to an address that has already been checked.

`requests` would resolve the URL's host name again when it connects, and the second answer could be a
different (private) address. The adapter below hands requests a connection pool bound to the vetted
IP address instead, while the request keeps the real host name where it matters: the Host header, the
TLS SNI name and the certificate check. Nothing else about the exchange is left open-ended: no proxies
from the environment, no redirects, bounded connect and read timeouts, and the response body is read
only up to a small cap.

The read timeout bounds each socket read, not the exchange: a receiver sending one byte a second never
trips it. So each exchange also has a total deadline (connect, TLS handshake, status line, headers and
body together), kept by a watchdog timer that shuts the connection's socket down when it passes; the
blocked read returns at once and the exchange ends as a timeout. A slow receiver costs its delivery at
most the deadline, never the worker invocation (and every other job of its batch).
"""

import contextlib
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3 import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.connection import HTTPConnection, HTTPSConnection

from lambdas.jobs.ssrf import Target

CONNECT_TIMEOUT_SECONDS = 3.0
READ_TIMEOUT_SECONDS = 10.0
TOTAL_TIMEOUT_SECONDS = CONNECT_TIMEOUT_SECONDS + READ_TIMEOUT_SECONDS
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


class _Watchdog:
    """Shuts down the connections it watches once `seconds` have passed, whatever phase they are in.

    It keeps a duplicate of each socket's descriptor: wrapping a socket in TLS detaches the original
    object (its descriptor moves to the SSLSocket), but a shutdown through any descriptor of a
    connection ends it for all of them, the handshake and the TLS reads included."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.fired = False
        self._lock = threading.Lock()
        self._watched: list[socket.socket] = []
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def start(self) -> None:
        self._timer.start()

    def close(self) -> None:
        self._timer.cancel()
        with self._lock:
            for duplicate in self._watched:
                duplicate.close()
            self._watched.clear()

    def watch(self, sock: socket.socket) -> None:
        duplicate = sock.dup()
        with self._lock:
            self._watched.append(duplicate)
            if self.fired:
                _cut(duplicate)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            for duplicate in self._watched:
                _cut(duplicate)


def _cut(sock: socket.socket) -> None:
    # A read blocked on the connection in another thread returns end-of-file at once.
    with contextlib.suppress(OSError):  # already closed by the other side
        sock.shutdown(socket.SHUT_RDWR)


class _Watched:
    """Hands each new socket (before any TLS handshake on it) to the exchange's watchdog."""

    watchdog: _Watchdog | None = None

    def _new_conn(self) -> socket.socket:
        sock: socket.socket = super()._new_conn()  # type: ignore[misc]
        if self.watchdog is not None:
            self.watchdog.watch(sock)
        return sock


class _WatchedHTTPConnection(_Watched, HTTPConnection):
    pass


class _WatchedHTTPSConnection(_Watched, HTTPSConnection):
    pass


class _PinnedAdapter(HTTPAdapter):
    """Sends every request of its session to `target.address`, whatever the URL's host resolves to."""

    def __init__(self, target: Target, watchdog: _Watchdog) -> None:
        if target.address is None:
            raise ValueError("target must be resolved before it is connected to")
        super().__init__(max_retries=0)
        self._target = target
        self._watchdog = watchdog
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
        pool: HTTPConnectionPool
        if target.scheme == "https":
            # `server_hostname` is the SNI name, `assert_hostname` the name the certificate must match.
            pool = HTTPSConnectionPool(
                target.address,
                target.port,
                maxsize=1,
                server_hostname=target.host,
                assert_hostname=target.host,
            )
            pool.ConnectionCls = type("_Conn", (_WatchedHTTPSConnection,), {"watchdog": self._watchdog})
        else:
            pool = HTTPConnectionPool(target.address, target.port, maxsize=1)
            pool.ConnectionCls = type("_Conn", (_WatchedHTTPConnection,), {"watchdog": self._watchdog})
        return pool

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
    total_timeout: float = TOTAL_TIMEOUT_SECONDS,
    verify: bool | str = True,
) -> HttpOutcome:
    """POST `body` to `target` (resolved); never raises for network trouble, it reports it instead.

    The exchange ends within `total_timeout` seconds whatever the receiver does; `connect_timeout` and
    `read_timeout` (per read) are cut to fit in it. `verify` is True (system trust store) in every
    deployment; tests pass the path of their own CA.
    """
    connect_timeout = min(connect_timeout, total_timeout)
    read_timeout = min(read_timeout, total_timeout)
    watchdog = _Watchdog(total_timeout)
    session = requests.Session()
    session.trust_env = False  # no proxies or .netrc credentials picked up from the environment
    adapter = _PinnedAdapter(target, watchdog)
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
    watchdog.start()
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
            if watchdog.fired:
                # A cut status line still parses ("HTTP/1.1 20" reads as a status): nothing that
                # arrived is trusted, and the delivery is retried.
                return HttpOutcome(latency_ms=_elapsed_ms(started), error=_deadline_error(watchdog))
            return HttpOutcome(
                latency_ms=_elapsed_ms(started),
                status=response.status_code,
                retry_after=response.headers.get("Retry-After"),
                body=excerpt,
            )
    except requests.RequestException as exc:
        if watchdog.fired:
            return HttpOutcome(latency_ms=_elapsed_ms(started), error=_deadline_error(watchdog))
        if isinstance(exc, requests.Timeout):
            return HttpOutcome(latency_ms=_elapsed_ms(started), error=f"timeout: {_describe(exc)}")
        return HttpOutcome(latency_ms=_elapsed_ms(started), error=f"connection: {_describe(exc)}")
    finally:
        watchdog.close()
        session.close()


def _deadline_error(watchdog: _Watchdog) -> str:
    return f"timeout: no complete answer within the delivery's deadline of {watchdog.seconds:.1f} s"


def _read_capped(response: requests.Response, cap: int) -> bytes:
    """At most `cap` bytes of the body; a slow or endless body costs no more than the deadline."""
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
