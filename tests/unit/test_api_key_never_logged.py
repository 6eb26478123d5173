"""An API key's value never reaches the api function's logs, whatever logging is switched on."""

import json
import subprocess
import sys
from pathlib import Path

EVENT = Path(__file__).resolve().parents[1] / "events" / "api_post_job.json"
KEY_VALUE = json.loads(EVENT.read_text())["requestContext"]["identity"]["apiKey"]

# A fresh interpreter: Powertools reads POWERTOOLS_DEV and POWERTOOLS_LOGGER_LOG_EVENT at import.
PROBE = """
import json, sys
from lambdas.handlers import api
from local_runtime.context import LambdaContext
event = json.loads(open(sys.argv[1]).read())
event["path"] = event["resource"] = "/no/such/route"
response = api.handler(event, LambdaContext(function_name="api"))
print("STATUS", response["statusCode"])
"""


def test_the_key_value_is_in_no_line_even_with_event_logging_and_debug_on() -> None:
    # given every switch that writes the whole event out: the resolver's debug print and the logger's
    env = {
        "PATH": "",
        "POWERTOOLS_DEV": "true",
        "POWERTOOLS_LOGGER_LOG_EVENT": "true",
        "POWERTOOLS_LOG_LEVEL": "DEBUG",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    # when a request is handled
    run = subprocess.run(
        [sys.executable, "-c", PROBE, str(EVENT)], capture_output=True, text=True, env=env, check=True
    )
    output = run.stdout + run.stderr
    # then the event was written out (so this test sees what a log would hold), the key id with it,
    # and the key's value nowhere
    assert "STATUS 404" in output
    assert '"apiKeyId"' in output
    assert "k1e2y3i4d5" in output
    assert KEY_VALUE not in output
