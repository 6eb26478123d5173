"""A real HTTP server on 127.0.0.1 that plays webhook receivers: it records every request and answers
from a script per path (status, headers, body, delay), then 200 once the script runs out. A reply
with `trickle` sends its whole answer, status line first, one byte every `trickle` seconds."""

import http.server
import ssl
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b"ok"
    delay: float = 0.0
    trickle: float = 0.0

    def raw(self) -> bytes:
        lines = [f"HTTP/1.1 {self.status} OK", *(f"{k}: {v}" for k, v in self.headers.items())]
        lines.append(f"Content-Length: {len(self.body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + self.body


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float


class Receiver:
    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.requests: list[Received] = []
        self._scripts: dict[str, list[Reply]] = defaultdict(list)
        self._lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                reply = receiver._record(Received(self.path, dict(self.headers.items()), body, time.time()))
                if reply.delay:
                    time.sleep(reply.delay)
                try:
                    if reply.trickle:
                        for byte in reply.raw():
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            time.sleep(reply.trickle)
                        return
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            do_GET = do_PATCH = do_DELETE = do_POST  # plays an API for the CLI's tests too

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        # serve_forever checks for shutdown every poll_interval: its default 0.5 s was each test's teardown.
        self._thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> "Receiver":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def url(self, path: str, host: str = "127.0.0.1", scheme: str = "http") -> str:
        return f"{scheme}://{host}:{self.port}{path}"

    def script(self, path: str, *replies: Reply) -> None:
        with self._lock:
            self._scripts[path].extend(replies)

    def _record(self, received: Received) -> Reply:
        with self._lock:
            self.requests.append(received)
            script = self._scripts.get(received.path)
            return script.pop(0) if script else Reply()

    def to(self, path: str) -> list[Received]:
        with self._lock:
            return [r for r in self.requests if r.path == path]
