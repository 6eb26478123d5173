"""Lambda durable functions on `make run`: the durable SDK's own local service, and the thinnest adapter
between it and the runtime's function processes.

The service is `aws_durable_execution_sdk_python_testing`'s `WebRunner`, in real time: its executor
checkpoints each operation, replays an execution by invoking its function again, times sleeps, step
retries and callback timeouts, and retries a failed invocation (a crashed process) with backoff; its
web server answers Lambda's durable execution API (CheckpointDurableExecution,
GetDurableExecutionState, SendDurableExecutionCallbackSuccess, StopDurableExecution...).

The adapter (`DurableFunctions`) is the Lambda endpoint both sides talk to. Every function process gets
it as `AWS_ENDPOINT_URL_LAMBDA`, so the code AWS runs reaches it unchanged; it answers:
- the service's handler invocations (Invoke marked `X-Dex-Handler-Invoke`): run in the durable
  function's own warm processes (`lambda_pool`), the real handler (`lambdas/handlers/workflow.py`);
- a caller's Invoke of a durable function (the worker's, `InvocationType` Event with a
  `DurableExecutionName`): starts the execution on the service (which has no Invoke of its own);
- anything under Lambda's durable execution API (`/2025-12-01/`): passed to the service as it came.

Emulated AWS rules (the service does not apply them; Lambda's Invoke documents them), each tested:
- an alias resolves to its function (`Provisioned.invoked`: the runtime keeps no versions);
- an execution name is unique per function: an Invoke with a name already used and the same payload
  answers with that execution, never a second one; another payload is refused with
  `DurableExecutionAlreadyStartedException` (409);
- the service names an error in its body's `Type`; the adapter also sends it as `X-Amzn-ErrorType`,
  the header by which botocore tells Lambda's errors apart (ResourceNotFoundException...).

Not provided by the service's public face: ending its HTTP server's `serve_forever` (`WebRunner.stop`
closes the socket only); `stop` shuts the server down through the runner's `_server`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from aws_durable_execution_sdk_python_testing.invoker import INVOCATION_MARKER_HEADER
from aws_durable_execution_sdk_python_testing.runner import WebRunner, WebRunnerConfig
from aws_durable_execution_sdk_python_testing.web.server import WebServiceConfig

from local_runtime.context import CREDENTIALS
from local_runtime.lambda_pool import Invocation
from local_runtime.moto_server import free_port
from local_runtime.template.model import FunctionSpec, Provisioned

# Lambda's REST paths: Invoke, and the durable execution API (served by the service).
_INVOKE_PREFIX = "/2015-03-31/functions/"
_DURABLE_API_PREFIX = "/2025-12-01/"
# How long the executions' history is kept when the template does not say (Lambda's default).
_RETENTION_DAYS = 14

Invoke = Callable[[str, Any], Invocation]  # (function logical id, event) -> its invocation


class _Refused(Exception):
    def __init__(self, status: int, error_type: str, message: str) -> None:
        super().__init__(message)
        self.status, self.error_type, self.message = status, error_type, message


class DurableFunctions:
    """The durable functions of `provisioned`, run by the SDK's local service; `invoke` runs an
    invocation of a function in its processes."""

    def __init__(self, provisioned: Provisioned, invoke: Invoke, host: str = "127.0.0.1") -> None:
        self._provisioned = provisioned
        self._invoke = invoke
        self._started: dict[tuple[str, str], tuple[str, str]] = {}  # (function, name) -> (payload, ARN)
        self._lock = threading.Lock()
        self._closing = False
        self._endpoint = ThreadingHTTPServer((host, 0), _handler_class(self))
        self._endpoint.daemon_threads = True
        self.url = f"http://{host}:{self._endpoint.server_address[1]}"
        service_port = free_port(host)
        self._service_url = f"http://{host}:{service_port}"
        timeouts = [f.timeout_seconds for f in self.functions()] or [900]
        self._runner = WebRunner(
            WebRunnerConfig(
                web_service=WebServiceConfig(host=host, port=service_port, log_level=logging.WARNING),
                lambda_endpoint=self.url,
                local_runner_region=provisioned.region,
                # The function processes time an invocation out themselves (lambda_pool); the service's
                # own bound only has to outlast theirs.
                invocation_timeout_seconds=max(timeouts) + 5,
                skip_time=False,
            )
        )
        self._threads: list[threading.Thread] = []
        # The service logs a wait's timeout or a retried invocation as a warning: both are a workflow's
        # ordinary life here; a crashed function process is on the console already (lambda_pool).
        logging.getLogger("aws_durable_execution_sdk_python_testing").setLevel(logging.ERROR)

    def functions(self) -> list[FunctionSpec]:
        return [f for f in self._provisioned.functions.values() if f.durable_timeout_seconds is not None]

    def start(self) -> None:
        # The service's Lambda client signs with the default credential chain; a runtime started without
        # any (`make run` on a fresh machine) gets moto's test ones, which this endpoint does not check.
        for key, value in CREDENTIALS.items():
            os.environ.setdefault(key, value)
        self._runner.start()
        for serve in (self._runner.serve_forever, self._endpoint.serve_forever):
            thread = threading.Thread(target=serve, daemon=True, name="durable-functions")
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        """No new invocation or start from here; then the service and the endpoint end."""
        self._closing = True
        server = self._runner._server  # see the module docstring
        if server is not None:
            server.shutdown()
        self._runner.stop()
        self._endpoint.shutdown()
        self._endpoint.server_close()
        for thread in self._threads:
            thread.join(timeout=10)

    def executions(self) -> int:
        """How many executions were started (the name rule's test)."""
        return len(self._started)

    # -- what the endpoint answers ----------------------------------------------------------------

    def run_invocation(self, identifier: str, event: Any) -> Invocation:
        """One of the service's handler invocations, in the function's processes."""
        if self._closing:
            raise _Refused(503, "ServiceException", "the local runtime is stopping")
        try:
            return self._invoke(self._function(identifier).logical_id, event)
        except RuntimeError as error:  # its pool closed: the runtime is stopping
            raise _Refused(503, "ServiceException", str(error)) from None

    def start_execution(self, identifier: str, name: str | None, payload: str) -> str:
        """A caller's Invoke of a durable function: its execution's ARN (a known one for a name used
        with the same payload)."""
        if self._closing:
            raise _Refused(503, "ServiceException", "the local runtime is stopping")
        function = self._function(identifier)
        if function.durable_timeout_seconds is None:
            raise _Refused(
                400, "InvalidParameterValueException", f"{function.name} is not run locally by an Invoke"
            )
        _, _, qualifier = identifier.rpartition(function.name)
        name = name or str(uuid.uuid4())
        with self._lock:
            known = self._started.get((function.name, name))
            if known is not None:
                if known[0] != payload:
                    raise _Refused(
                        409,
                        "DurableExecutionAlreadyStartedException",
                        f"execution {name} of {function.name} started with another payload",
                    )
                return known[1]
            answer = self._service(
                "POST",
                "/start-durable-execution",
                json.dumps(
                    {
                        "AccountId": self._provisioned.account,
                        "FunctionName": function.name,
                        "FunctionQualifier": qualifier.lstrip(":") or "$LATEST",
                        "ExecutionName": name,
                        "ExecutionTimeoutSeconds": function.durable_timeout_seconds,
                        "ExecutionRetentionPeriodDays": _RETENTION_DAYS,
                        "Input": payload,
                    }
                ).encode(),
                {"Content-Type": "application/json"},
            )
            if answer[0] >= 300:
                raise _Refused(answer[0], "ServiceException", answer[2].decode(errors="replace"))
            arn = str(json.loads(answer[2])["ExecutionArn"])
            self._started[(function.name, name)] = (payload, arn)
            return arn

    def _function(self, identifier: str) -> FunctionSpec:
        try:
            return self._provisioned.invoked(identifier)
        except LookupError as error:
            raise _Refused(404, "ResourceNotFoundException", str(error)) from None

    def _service(
        self, method: str, path: str, body: bytes | None, headers: Mapping[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        """A request to the service: its status, headers and body, an error's as well."""
        request = urllib.request.Request(  # noqa: S310 (the service on loopback)
            self._service_url + path, data=body, method=method, headers=dict(headers)
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 (loopback)
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), error.read()


def _handler_class(functions: DurableFunctions) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._answer()

        def do_POST(self) -> None:
            self._answer()

        def do_PUT(self) -> None:
            self._answer()

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the function processes' own logs are the console's

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            url = urlparse(self.path)
            try:
                if url.path.startswith(_DURABLE_API_PREFIX):
                    self._pass_on(body)
                elif url.path.startswith(_INVOKE_PREFIX) and url.path.endswith("/invocations"):
                    self._invoke(url.path, parse_qs(url.query), body)
                else:
                    raise _Refused(404, "UnknownOperationException", f"{url.path} is not served locally")
            except Exception as error:  # as Lambda's ServiceException: the caller may retry
                refused = (
                    error if isinstance(error, _Refused) else _Refused(500, "ServiceException", str(error))
                )
                self._send(
                    refused.status,
                    json.dumps({"Type": refused.error_type, "message": refused.message}).encode(),
                    {"X-Amzn-ErrorType": refused.error_type},
                )

        def _invoke(self, path: str, query: dict[str, list[str]], body: bytes) -> None:
            identifier = unquote(path[len(_INVOKE_PREFIX) : -len("/invocations")])
            if query.get("Qualifier"):
                identifier = f"{identifier}:{query['Qualifier'][-1]}"
            if self.headers.get(INVOCATION_MARKER_HEADER):
                invocation = functions.run_invocation(identifier, json.loads(body or b"{}"))
                if invocation.ok:
                    self._send(200, json.dumps(invocation.result).encode())
                else:
                    error = {"errorType": invocation.error_type, "errorMessage": invocation.error_message}
                    self._send(200, json.dumps(error).encode(), {"X-Amz-Function-Error": "Unhandled"})
                return
            name = self.headers.get("X-Amz-Durable-Execution-Name")
            arn = functions.start_execution(identifier, name, body.decode())
            self._send(202, b"", {"X-Amz-Durable-Execution-Arn": arn})

        def _pass_on(self, body: bytes) -> None:
            headers = {"Content-Type": self.headers.get("Content-Type", "application/json")}
            status, answer_headers, answer = functions._service(
                self.command, self.path, body or None, headers
            )
            extra = {"Content-Type": answer_headers.get("Content-Type", "application/json")}
            if status >= 400:
                with contextlib.suppress(ValueError, AttributeError):
                    extra["X-Amzn-ErrorType"] = str(json.loads(answer).get("Type", ""))
            self._send(status, answer, extra)

        def _send(self, status: int, body: bytes, headers: Mapping[str, str] | None = None) -> None:
            self.send_response(status)
            for key, value in {"Content-Type": "application/json", **(headers or {})}.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler
