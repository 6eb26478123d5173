"""The X-Ray SDK is imported only for invocations X-Ray records."""

import subprocess
import sys

import pytest

from lambdas import observability

SAMPLED = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"


@pytest.mark.parametrize(
    ("env", "active"),
    [
        ({"LAMBDA_TASK_ROOT": "/var/task", "_X_AMZN_TRACE_ID": SAMPLED}, True),
        ({"LAMBDA_TASK_ROOT": "/var/task"}, True),
        ({"LAMBDA_TASK_ROOT": "/var/task", "_X_AMZN_TRACE_ID": SAMPLED.replace("=1", "=0")}, False),
        ({"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "true"}, False),
        ({"_X_AMZN_TRACE_ID": SAMPLED}, False),  # not in Lambda: no daemon to send to
    ],
)
def test_tracing_is_active_only_in_lambda_when_enabled_and_sampled(monkeypatch, env, active):
    for name in ("LAMBDA_TASK_ROOT", "_X_AMZN_TRACE_ID", "POWERTOOLS_TRACE_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert observability.tracing_active() is active


def test_an_untraced_invocation_calls_the_handler_without_building_a_tracer():
    lazy = observability.LazyTracer(service="test")
    handler = lazy.capture_lambda_handler(lambda event, context: {"echo": event})
    assert handler("x", None) == {"echo": "x"}
    assert lazy._tracer is None


_PROBE = """
import sys
from lambdas import observability
handler = observability.tracer.capture_lambda_handler(lambda event, context: {"echo": event})
response = handler("x", None)
print(sorted({m.split(".")[0] for m in sys.modules if m.startswith("aws_xray_sdk")}), response)
"""


def test_a_sampled_invocation_in_lambda_runs_under_the_real_tracer():
    # A subprocess: the X-Ray SDK patches botocore for the whole process it runs in.
    env = {"PATH": "", "AWS_DEFAULT_REGION": "us-east-1", "LAMBDA_TASK_ROOT": "/var/task"}
    env |= {"_X_AMZN_TRACE_ID": SAMPLED, "AWS_XRAY_CONTEXT_MISSING": "IGNORE_ERROR"}
    run = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, check=True)
    assert run.stdout.strip().splitlines()[-1] == "['aws_xray_sdk'] {'echo': 'x'}"


_RESPONSE_PROBE = """
from aws_xray_sdk.core.models.entity import Entity
from lambdas import observability
stored = []
Entity.put_metadata = lambda self, key, value, namespace="default": stored.append(key)
observability.tracer.capture_lambda_handler(lambda event, context: {"echo": event})("x", None)
observability.tracer.capture_lambda_handler_without_response(lambda event, context: {"secret": event})("x", None)
print(len([key for key in stored if key.endswith(" response")]))
"""


def test_the_without_response_handler_keeps_its_answer_out_of_the_trace():
    """Seen to fail (2 responses stored) with `capture_lambda_handler_without_response` passing
    `capture_response=True`."""
    env = {"PATH": "", "AWS_DEFAULT_REGION": "us-east-1", "LAMBDA_TASK_ROOT": "/var/task"}
    env |= {"_X_AMZN_TRACE_ID": SAMPLED, "AWS_XRAY_CONTEXT_MISSING": "IGNORE_ERROR"}
    probe = [sys.executable, "-c", _RESPONSE_PROBE]
    run = subprocess.run(probe, capture_output=True, text=True, env=env, check=True)
    assert run.stdout.strip().splitlines()[-1] == "1"


_API_PROBE = """
from lambdas import observability
used = []
observability.LazyTracer._traced = lambda self, handler, capture_response: used.append(capture_response) or handler
import lambdas.handlers.api
print(used)
"""


def test_the_api_function_traces_without_its_responses():
    """An api answer is a caller's jobs: X-Ray must not keep it. Seen to fail ([True]) with the api's
    `@tracer.capture_lambda_handler_without_response` as `@tracer.capture_lambda_handler`."""
    run = subprocess.run([sys.executable, "-c", _API_PROBE], capture_output=True, text=True, check=True)
    assert run.stdout.strip().splitlines()[-1] == "[False]"
