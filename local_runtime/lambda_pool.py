"""Warm execution environments for one function: worker processes that keep their imports.

Like Lambda, a pool runs at most `max_environments` invocations at once, reuses an idle environment
when there is one (a warm start) and starts a new process otherwise (a cold start). An invocation that
runs past the function's timeout has its process killed, as Lambda does, and the next invocation
starts a fresh one. A process that ends during an invocation (exit, signal) is reported as
`Runtime.ExitError` with its exit status or signal, as Lambda reports it; only an invocation that
outlives its timeout is `Sandbox.Timedout`.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from local_runtime.context import DEFAULT_ACCOUNT
from local_runtime.lambda_worker import RESPONSE_FD_ENV

# Lambda gives the init phase (imports, module-level code) 10 seconds of its own.
INIT_TIMEOUT_SECONDS = 10.0
# How long a process that closed its response pipe may take to finish exiting.
EXIT_GRACE_SECONDS = 5.0
EXIT_ERROR = "Runtime.ExitError"
IMPORT_ERROR = "Runtime.ImportModuleError"

LogSink = Callable[[str, str], None]  # (function name, one line the function wrote)


@dataclass(frozen=True)
class Invocation:
    request_id: str
    ok: bool
    result: Any = None
    error_type: str | None = None
    error_message: str | None = None
    cold_start: bool = False
    timed_out: bool = False
    duration_ms: float = 0.0


@dataclass(frozen=True)
class FunctionConfig:
    name: str
    handler: str
    timeout_seconds: float
    memory_mb: int
    environment: Mapping[str, str]
    account: str = DEFAULT_ACCOUNT


class _Exited(Exception):
    """The environment's process is gone (or going): the invocation crashed, it did not time out."""


class _Environment:
    """One worker process and its two pipes."""

    def __init__(self, config: FunctionConfig, log_sink: LogSink) -> None:
        read_fd, write_fd = os.pipe()
        env = {
            **config.environment,
            "_HANDLER": config.handler,
            "AWS_LAMBDA_FUNCTION_NAME": config.name,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(config.memory_mb),
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{config.name}",
            RESPONSE_FD_ENV: str(write_fd),
            "PYTHONUNBUFFERED": "1",
        }
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "local_runtime.lambda_worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                pass_fds=(write_fd,),
                text=True,
                # Its own session: Ctrl-C in the terminal reaches the runtime, which stops the pool.
                start_new_session=True,
            )
        finally:
            os.close(write_fd)
        self._responses = read_fd
        self._buffer = b""
        self._killed = False
        self._kill_lock = threading.Lock()
        for stream in (self.process.stdout, self.process.stderr):
            threading.Thread(target=_pump, args=(stream, config.name, log_sink), daemon=True).start()

    def read(self, timeout: float) -> dict[str, Any] | None:
        """The next message from the process, or None when it did not answer in time.

        Raises `_Exited` when the process closed its end: it exited, or is exiting. Only that
        end-of-file tells a crash from a timeout; `poll()` may still see the process alive then.
        """
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            try:
                readable, _, _ = select.select([self._responses], [], [], remaining)
                if not readable:
                    return None
                chunk = os.read(self._responses, 65536)
            except (OSError, ValueError):
                raise _Exited from None  # killed while waiting (the pool is closing)
            if not chunk:
                raise _Exited
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        message: dict[str, Any] = json.loads(line)
        return message

    def exit_status(self) -> str:
        """How the process ended, in the words of Lambda's `Runtime exited with error: ...`."""
        try:
            code = self.process.wait(EXIT_GRACE_SECONDS)
        except subprocess.TimeoutExpired:  # it closed its pipe but lingers: end it as Lambda would
            self.process.kill()
            code = self.process.wait()
        if code >= 0:
            return f"exit status {code}"
        return f"signal: {(signal.strsignal(-code) or str(-code)).lower()}"

    def send(self, request: dict[str, Any]) -> None:
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise _Exited from None

    def kill(self) -> None:
        with self._kill_lock:
            if self._killed:
                return
            self._killed = True
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        os.close(self._responses)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


def _pump(stream: Any, function_name: str, log_sink: LogSink) -> None:
    try:
        for line in stream:
            log_sink(function_name, line.rstrip("\n"))
    except (ValueError, OSError):
        pass  # the stream was closed when the environment was killed


class FunctionPool:
    """Runs invocations of one function in warm worker processes, at most `max_environments` at once."""

    def __init__(self, config: FunctionConfig, max_environments: int, log_sink: LogSink) -> None:
        if max_environments < 1:
            raise ValueError("a pool needs at least one environment")
        self.config = config
        self._log_sink = log_sink
        self._idle: list[_Environment] = []
        self._busy: set[_Environment] = set()
        self._slots = threading.BoundedSemaphore(max_environments)
        self._lock = threading.Lock()
        self._closed = False
        # Bumped by `recycle`: an environment of an older generation is not reused.
        self._generation = 0
        self._generations: dict[_Environment, int] = {}
        self.cold_starts = 0
        self.invocations = 0
        self.timeouts = 0

    def invoke(self, event: Any, request_id: str | None = None) -> Invocation:
        """Run one invocation to its end; blocks while every environment is busy."""
        request_id = request_id or str(uuid.uuid4())
        with self._slots:
            environment, cold = self._acquire()
            started = time.monotonic()
            try:
                outcome = self._run(environment, cold, request_id, event)
            except BaseException:
                self._discard(environment)
                raise
            elapsed = round((time.monotonic() - started) * 1000, 1)
            invocation = Invocation(request_id=request_id, cold_start=cold, duration_ms=elapsed, **outcome)
            if invocation.timed_out or invocation.error_type in {EXIT_ERROR, IMPORT_ERROR}:
                self._discard(environment)
            else:
                self._release(environment)
            return invocation

    def _acquire(self) -> tuple[_Environment, bool]:
        with self._lock:
            if self._closed:
                raise RuntimeError(f"the pool of {self.config.name} is closed")
            self.invocations += 1
            if self._idle:
                environment = self._idle.pop()
                self._busy.add(environment)
                return environment, False
            self.cold_starts += 1
            environment = _Environment(self.config, self._log_sink)
            self._busy.add(environment)
            self._generations[environment] = self._generation
            return environment, True

    def _run(self, environment: _Environment, cold: bool, request_id: str, event: Any) -> dict[str, Any]:
        timeout = self.config.timeout_seconds
        try:
            if cold:
                ready = environment.read(INIT_TIMEOUT_SECONDS)
                if ready is None or not ready.get("ready"):
                    message = (ready or {}).get("errorMessage", "the environment did not start in time")
                    return {"ok": False, "error_type": IMPORT_ERROR, "error_message": message}
            environment.send(
                {
                    "requestId": request_id,
                    "event": event,
                    "timeoutMs": int(timeout * 1000),
                    "account": self.config.account,
                }
            )
            response = environment.read(timeout)
        except _Exited:
            message = f"RequestId: {request_id} Error: Runtime exited with error: {environment.exit_status()}"
            return {"ok": False, "error_type": EXIT_ERROR, "error_message": message}
        if response is None:
            with self._lock:
                self.timeouts += 1
            return {
                "ok": False,
                "timed_out": True,
                "error_type": "Sandbox.Timedout",
                "error_message": f"Task timed out after {timeout:.2f} seconds",
            }
        if response.get("ok"):
            return {"ok": True, "result": response.get("result")}
        return {
            "ok": False,
            "error_type": response.get("errorType"),
            "error_message": response.get("errorMessage"),
        }

    def _release(self, environment: _Environment) -> None:
        with self._lock:
            self._busy.discard(environment)
            if self._closed or self._generations.get(environment) != self._generation:
                self._generations.pop(environment, None)
                environment.kill()
            else:
                self._idle.append(environment)

    def _discard(self, environment: _Environment) -> None:
        with self._lock:
            self._busy.discard(environment)
            self._generations.pop(environment, None)
        environment.kill()

    def recycle(self) -> None:
        """The code changed: idle environments stop now, busy ones when their invocation ends (none is
        cut short), and the next invocation starts a fresh process that imports the code as it is now."""
        with self._lock:
            self._generation += 1
            idle, self._idle = self._idle, []
            for environment in idle:
                self._generations.pop(environment, None)
        for environment in idle:
            environment.kill()

    def close(self) -> None:
        """Stop every environment, including those running an invocation."""
        with self._lock:
            self._closed = True
            environments = [*self._idle, *self._busy]
            self._idle.clear()
        for environment in environments:
            environment.kill()
