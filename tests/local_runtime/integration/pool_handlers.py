"""Handlers for the warm-pool tests: the event says how the invocation ends."""

import os
import signal
import sys
import time
from typing import Any


def handler(event: dict[str, Any], context: Any) -> Any:
    if "exit" in event:
        sys.exit(event["exit"])  # the interpreter shuts down: its pipes close before the process ends
    if event.get("kill"):
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(event.get("sleep", 0))
    return {"pid": os.getpid()}
