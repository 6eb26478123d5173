"""moto's server speaking HTTP/1.1 with kept-alive connections, serving one request at a time.

Kept-alive connections: werkzeug's development server answers every request with `Connection: close`
(its handler cannot tell where a request body ends, so it drains the socket after each answer),
whatever protocol it speaks: every AWS call of every function then pays a TCP connect and a fresh
server thread. This handler keeps the connection open instead, which is safe because it always knows
where the next request starts:
- a request body is read whole, through its `Content-Length`, before the application sees it; a
  chunked body, or a length that is not one non-negative integer, is left to werkzeug's stream and
  the connection is closed after the answer (the rest of the stream cannot be trusted);
- the answer is buffered and sent with its `Content-Length` in one write: headers and body sent apart
  make Nagle's algorithm hold the body until the headers are acknowledged, which a delayed ACK turns
  into ~40 ms per kept-alive request (the accepted socket also sets TCP_NODELAY);
- a connection idle for IDLE_TIMEOUT_SECONDS is closed, so no thread waits forever on a client that
  went away (botocore opens a new one when it finds its pooled connection closed).
moto's answers are built whole in memory, so buffering one costs nothing it did not already pay.

One request at a time: moto's work is pure Python, so its threads share one core through the GIL,
which hands it round every 5 ms. Ten requests arriving together (a worker batch's ten claims) then
all finish late, together, ~ten requests' time after they arrived, where one after the other the
first would be answered after one request's time, the second after two... A batch's jobs start when
their claims are answered and end with one more write each, so with shared turns they start late
together and then their ten final writes share the core again: a batch takes about one extra round
of ten writes. The application therefore runs under one lock (`_TURN`), taken after the request's
body has arrived and released before its answer is sent, so a slow client never holds it. The
exceptions run outside it: a ReceiveMessage (it may long-poll, waiting for a SendMessage that needs
the lock) and a body of unknown length (the application reads it from the socket). A request that
made moto call out over HTTP (an SNS subscription to a URL; the stack has none) would hold the lock
while it waited.
"""

from __future__ import annotations

import io
import socket
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import moto.server
from moto.moto_server.werkzeug_app import MotoRequestHandler
from werkzeug.exceptions import InternalServerError

IDLE_TIMEOUT_SECONDS = 120
# No body, and no Content-Length of one, in these answers (RFC 9110 8.6).
_BODILESS = frozenset({204, 304})
_FRAMING = frozenset({"content-length", "transfer-encoding", "connection"})
# SQS ReceiveMessage, as the JSON protocol (X-Amz-Target) and the query protocol (Action=) name it.
_WAITING_TARGET = "AmazonSQS.ReceiveMessage"
_WAITING_ACTION = b"Action=ReceiveMessage"
_TURN = threading.Lock()


class KeptAliveRequestHandler(MotoRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = IDLE_TIMEOUT_SECONDS

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass  # the runtime sends the server's log nowhere; formatting each line is CPU moto's calls wait on

    def run_wsgi(self) -> None:
        if self.headers.get("Expect", "").lower().strip(" \t") == "100-continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        self.environ = environ = self.make_environ()
        body = self._body(environ)
        if body is None:
            self.close_connection = True  # after this answer: where the next request starts is unknown
        elif len(body) < int(environ["CONTENT_LENGTH"] or 0):
            self.close_connection = True  # the client went away mid-body: nobody is left to answer
            return
        try:
            with _turn(environ, body):
                status, headers, chunks = _answer(self.server.app, environ)
        except (ConnectionError, TimeoutError):
            self.close_connection = True
            return
        except Exception:
            self.log_error("Error on request:\n%s", traceback.format_exc())
            self.close_connection = True
            status, headers, chunks = _answer(InternalServerError(), environ)
        self._send(status, headers, b"".join(chunks))

    def _body(self, environ: dict[str, Any]) -> bytes | None:
        """The request body, read whole and given to the application; None when its end is unknown."""
        if environ.get("wsgi.input_terminated"):  # chunked: werkzeug de-chunks it as the application reads
            return None
        text = environ.get("CONTENT_LENGTH", "").strip() or "0"
        if not (text.isascii() and text.isdigit()):
            return None
        environ["CONTENT_LENGTH"] = text
        body = self.rfile.read(int(text)) if int(text) else b""
        environ["wsgi.input"] = io.BytesIO(body)
        return body

    def _send(self, status: str, headers: list[tuple[str, str]], body: bytes) -> None:
        code = int(status.split(None, 1)[0])
        lines = [
            f"HTTP/1.1 {status}",
            f"Server: {self.version_string()}",
            f"Date: {self.date_time_string()}",
        ]
        head_only = self.command == "HEAD" or code in _BODILESS or code < 200
        for name, value in headers:
            # A HEAD answer keeps the length its GET would have (S3's HeadObject gives the object's size).
            if name.lower() not in _FRAMING or (self.command == "HEAD" and name.lower() == "content-length"):
                lines.append(f"{name}: {value}")
        if not head_only:
            lines.append(f"Content-Length: {len(body)}")
        if self.close_connection:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.wfile.write(head if head_only else head + body)


@contextmanager
def _turn(environ: dict[str, Any], body: bytes | None) -> Iterator[None]:
    """The request's turn at moto, unless it may wait (see the module's docstring)."""
    waits = (
        body is None
        or environ.get("HTTP_X_AMZ_TARGET") == _WAITING_TARGET
        or _WAITING_ACTION in body
        or _WAITING_ACTION.decode() in environ.get("QUERY_STRING", "")
    )
    with nullcontext() if waits else _TURN:
        yield


def _answer(app: Any, environ: dict[str, Any]) -> tuple[str, list[tuple[str, str]], list[bytes]]:
    """The application's status, headers and body chunks, the body read whole."""
    started: list[Any] = []
    written: list[bytes] = []

    def start_response(status: str, headers: list[tuple[str, str]], _exc_info: Any = None) -> Any:
        started[:] = [status, headers]  # a second call (an error page after a failure) replaces the first
        return written.append  # WSGI's legacy write()

    iterable = app(environ, start_response)
    try:
        chunks = written + list(iterable)
    finally:
        if hasattr(iterable, "close"):
            iterable.close()
    return started[0], started[1], chunks


def keep_alive(set_attribute: Callable[[Any, str, Any], None] = setattr) -> None:
    """Have moto's `main` serve with `KeptAliveRequestHandler` (it passes its handler by this name)."""
    set_attribute(moto.server, "MotoRequestHandler", KeptAliveRequestHandler)
