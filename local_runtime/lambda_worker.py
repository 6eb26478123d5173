"""One warm execution environment: a process that imports a handler once and runs invocations.

Started by `lambda_pool` with the function's environment. Like the Lambda Python runtime it imports
the handler module before the first invocation (the init phase) and keeps it, and everything the
module cached, until the process is stopped. Invocations arrive as JSON lines on stdin; results go
back as JSON lines on the file descriptor named by OFFLOAD_LOCAL_RESPONSE_FD, so that the handler's
own stdout (its logs) stays a log stream.
"""

import importlib
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any, TextIO

from local_runtime.context import LambdaContext

RESPONSE_FD_ENV = "OFFLOAD_LOCAL_RESPONSE_FD"
# Test-only: modules imported in every environment before the handler (e.g. job types of the tests).
EXTRA_MODULES_ENV = "OFFLOAD_LOCAL_EXTRA_MODULES"


def _error(error: BaseException, error_type: str | None = None) -> dict[str, Any]:
    return {
        "ok": False,
        "errorType": error_type or type(error).__name__,
        "errorMessage": str(error),
        "stackTrace": traceback.format_exception(error),
    }


def _load_handler() -> Callable[[Any, Any], Any]:
    for module in filter(None, os.environ.get(EXTRA_MODULES_ENV, "").split(",")):
        importlib.import_module(module.strip())
    module_name, _, function_name = os.environ["_HANDLER"].rpartition(".")
    handler: Callable[[Any, Any], Any] = getattr(importlib.import_module(module_name), function_name)
    return handler


def _context(request: dict[str, Any]) -> LambdaContext:
    return LambdaContext(
        function_name=os.environ["AWS_LAMBDA_FUNCTION_NAME"],
        memory_limit_in_mb=int(os.environ["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"]),
        timeout_seconds=request["timeoutMs"] / 1000,
        region=os.environ["AWS_REGION"],
        account=request["account"],
        aws_request_id=request["requestId"],
    )


def _invoke(handler: Callable[[Any, Any], Any], request: dict[str, Any]) -> dict[str, Any]:
    try:
        result = handler(request["event"], _context(request))
    except Exception as error:
        # The Lambda runtime logs an unhandled error before reporting it.
        print(f"[ERROR] {type(error).__name__}: {error}", file=sys.stderr, flush=True)
        traceback.print_exception(error, file=sys.stderr)
        return _error(error)
    try:
        return {"ok": True, "result": json.loads(json.dumps(result))}
    except (TypeError, ValueError) as error:
        return _error(error, "Runtime.MarshalError")


def _send(channel: TextIO, message: dict[str, Any]) -> None:
    channel.write(json.dumps(message) + "\n")
    channel.flush()


def main() -> None:
    channel = os.fdopen(int(os.environ[RESPONSE_FD_ENV]), "w")
    started = time.monotonic()
    try:
        handler = _load_handler()
    except Exception as error:
        _send(channel, {"ready": False, **_error(error, "Runtime.ImportModuleError")})
        return
    _send(channel, {"ready": True, "initMs": round((time.monotonic() - started) * 1000, 1)})
    for line in sys.stdin:
        request = json.loads(line)
        _send(channel, {"requestId": request["requestId"], **_invoke(handler, request)})


if __name__ == "__main__":
    main()
