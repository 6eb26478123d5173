"""The HTTP front door: one API stage served on loopback, and the runtime's own `/_local/` endpoints.

Whatever a client sends, it gets an HTTP answer, never a dropped connection, a hang or an HTML page:
- any method reaches the gateway, which answers a method the API lacks as API Gateway does (HEAD gets
  the headers of that answer without its body);
- a request body needs one non-negative decimal `Content-Length` (400 otherwise); a chunked body is
  refused with 411, and one over API Gateway's 10 MB payload limit with 413, without reading it;
- what `http.server` refuses itself (a request line or headers over its limits: 414, 431; a malformed
  request line: 400) is answered in the stack's gateway-response shape, like the gateway's own errors;
- a client that stops sending mid-request is dropped after IDLE_TIMEOUT_SECONDS (no thread waits forever).

Each response leaves in one write: headers and body sent apart make Nagle's algorithm hold the body
until the headers are acknowledged, which a delayed ACK turns into ~40 ms per kept-alive request.

`/_local/...` (logs, alerts, batches, stats; same API key, or with auth=iam a signature) does not exist
in AWS.
"""

from __future__ import annotations

import errno
import socket
import sys
import threading
import uuid
from collections.abc import Callable, Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from local_runtime.gateway import ApiKey, Gateway, HttpRequest, HttpResponse, grouped

__all__ = [
    "ApiKey",
    "FrontDoor",
    "Gateway",
    "HttpRequest",
    "HttpResponse",
    "PortInUseError",
    "ensure_port_free",
]

MAX_REQUEST_BYTES = 10 * 1024 * 1024  # API Gateway's payload limit
IDLE_TIMEOUT_SECONDS = 60

LocalRoute = Callable[[dict[str, list[str]]], Any]  # query -> JSON document


class PortInUseError(RuntimeError):
    def __init__(self, host: str, port: int) -> None:
        super().__init__(
            f"port {port} on {host} is already in use (is another `make run` running?): stop it, "
            f"or start on another port, e.g. `OFFLOAD_LOCAL_PORT={port + 1} make run`"
        )
        self.port = port


def ensure_port_free(host: str, port: int) -> None:
    """Fail before a slow start when the front door's port is taken (0 always is free)."""
    if port == 0:
        return
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        # The same option the server binds with, so a port in TIME_WAIT still counts as free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise PortInUseError(host, port) from None
            raise


class FrontDoor:
    """Serves one API stage at http://host:port/<stage>/ and the runtime's `/_local/` endpoints."""

    def __init__(
        self, gateway: Gateway, local_routes: Mapping[str, LocalRoute], host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.gateway = gateway
        self._local_routes = local_routes
        try:
            self._server = _Server((host, port), self)
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise PortInUseError(host, port) from None
            raise
        self._thread = threading.Thread(target=self._server.serve_forever, name="front-door", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"{self.base}/{self.gateway.api.stage}/"

    @property
    def base(self) -> str:
        host = self._server.server_address[0]
        return f"http://{host if isinstance(host, str) else host.decode()}:{self.port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def respond(
        self, method: str, target: str, headers: list[tuple[str, str]], body: bytes, ip: str
    ) -> HttpResponse:
        parts = urlsplit(target)
        query = parse_qsl(parts.query, keep_blank_values=True)
        prefix = f"/{self.gateway.api.stage}"
        if parts.path.startswith("/_local/"):
            return self._local(
                parts.path, query, HttpRequest(method, parts.path, query, headers, body, ip, target)
            )
        if parts.path != prefix and not parts.path.startswith(prefix + "/"):
            return self.refusal(403, "Missing Authentication Token", "MISSING_AUTHENTICATION_TOKEN")
        path = parts.path[len(prefix) :] or "/"
        return self.gateway.handle(HttpRequest(method, path, query, headers, body, ip, target))

    def refusal(self, status: int, message: str, response_type: str | None = None) -> HttpResponse:
        """An answer the gateway gives before any function runs, in the stack's gateway-response shape."""
        family = "DEFAULT_4XX" if status < 500 else "DEFAULT_5XX"
        return self.gateway.error(response_type or family, status, message, str(uuid.uuid4()))

    def _local(self, path: str, query: list[tuple[str, str]], request: HttpRequest) -> HttpResponse:
        if not self.gateway.may_use_local(request):
            return HttpResponse.json(403, {"message": "Forbidden"})
        route = self._local_routes.get(path)
        if route is None:
            return HttpResponse.json(404, {"message": f"no local endpoint {path}"})
        try:
            return HttpResponse.json(200, route(grouped(query)))
        except ValueError as error:  # e.g. after=abc
            return HttpResponse.json(400, {"message": str(error)})


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], door: FrontDoor) -> None:
        self.door = door
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up mid-response is not the runtime's error; anything else still is.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "offload-local"
    timeout = IDLE_TIMEOUT_SECONDS
    server: _Server

    def __getattr__(self, name: str) -> Any:
        # http.server answers 501 HTML to any method without a do_<METHOD>; API Gateway routes them all.
        if name.startswith("do_"):
            return self._serve
        raise AttributeError(name)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the runtime logs job transitions, not requests

    def send_error(self, code: int, message: str | None = None, _explain: str | None = None) -> None:
        """http.server's own refusals (bad request line, oversized line or headers) in the API's shape."""
        self._refuse(code, message or HTTPStatus(code).phrase)

    def _serve(self) -> None:
        body = self._body()
        if body is None:
            return
        door = self.server.door
        try:
            response = door.respond(
                self.command, self.path, list(self.headers.items()), body, self.client_address[0]
            )
        except Exception:
            # The client gets API Gateway's 502 rather than a dropped socket; the console gets the traceback.
            self.server.handle_error(self.request, self.client_address)
            response = door.refusal(502, "Internal server error")
        self._send(response)

    def _body(self) -> bytes | None:
        """The request body, or None when the request was refused (and answered) instead."""
        if self.headers.get("Transfer-Encoding"):
            self._refuse(
                411, "send the body with a Content-Length (chunked bodies are not supported locally)"
            )
            return None
        values = {value.strip() for value in self.headers.get_all("Content-Length") or []}
        if not values:
            return b""
        text = values.pop()
        if values or not (text.isascii() and text.isdigit()):
            self._refuse(400, "Content-Length must be one non-negative integer")
            return None
        if int(text) > MAX_REQUEST_BYTES:
            self._refuse(413, "Request Too Long", "REQUEST_TOO_LARGE")
            return None
        body = self.rfile.read(int(text))
        if len(body) < int(text):  # the client went away mid-body: nobody is left to answer
            self.close_connection = True
            return None
        return body

    def _refuse(self, status: int, message: str, response_type: str | None = None) -> None:
        # The rest of the stream cannot be trusted to start a new request.
        self.close_connection = True
        self._send(self.server.door.refusal(status, message, response_type))

    def _send(self, response: HttpResponse) -> None:
        phrase = self.responses.get(response.status, ("",))[0]
        lines = [
            f"HTTP/1.1 {response.status} {phrase}".rstrip(),
            f"Server: {self.version_string()}",
            f"Date: {self.date_time_string()}",
            *(f"{name}: {value}" for name, value in response.headers),
            f"Content-Length: {len(response.body)}",
        ]
        if self.close_connection:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", errors="replace")
        self.wfile.write(head if self.command == "HEAD" else head + response.body)
