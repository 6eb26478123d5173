"""A handler whose behaviour each message body chooses, to check the event source mapping one rule at a time.

Bodies are JSON: {"do": "ok"} (default), {"do": "fail"} (reported as a batch item failure),
{"do": "bogus"} (reports an identifier that is in no batch), {"do": "raise"}, {"do": "sleep", "seconds": s},
{"do": "respond", "response": ...} (returned as the whole response).
"""

import json
import os
import time
from typing import Any


def handler(event: dict[str, Any], context: Any) -> Any:
    records = event["Records"]
    actions = [json.loads(r["body"]) for r in records]
    for action in actions:
        if action.get("do") == "sleep":
            time.sleep(action["seconds"])
        if action.get("do") == "raise":
            raise RuntimeError("the handler failed on purpose")
        if action.get("do") == "respond":
            return action["response"]
    failures = [
        {"itemIdentifier": r["messageId"]}
        for r, a in zip(records, actions, strict=True)
        if a.get("do") == "fail"
    ]
    if any(a.get("do") == "bogus" for a in actions):
        failures.append({"itemIdentifier": "not-a-message-of-this-batch"})
    return {
        "batchItemFailures": failures,
        "pid": os.getpid(),
        "remainingMs": context.get_remaining_time_in_millis(),
    }
