"""First invocation: the api's first POST /jobs in a fresh process, against a bare handler's first call.

Both run in a fresh interpreter from the byte-compiled bundle (see cold_start), with the function's
environment, against moto's server; the handler's module is imported before the clock starts, so the
figure is the set-up the first call pays (settings, clients, job-type lookup) plus the call itself. The
bare handler creates its boto3 clients on first use and replays the very calls POST /jobs made.
"""

import json

from bench import cold_start, submit
from bench.report import Figure, ratio_figure
from bench.stack import API, Stack, api_event

ROUNDS = 7
_CONTEXT = """
import json, os, time, uuid
class Context:
    function_name = "api"; memory_limit_in_mb = 256; aws_request_id = "bench"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:api"
    def get_remaining_time_in_millis(self): return 10_000
"""
_HANDLER = """
import lambdas.handlers.api as module
event = json.loads(os.environ["BENCH_EVENT"])
t = time.perf_counter(); response = module.handler(event, Context()); elapsed = time.perf_counter() - t
assert response["statusCode"] == 202, response
print(elapsed)
"""
_BARE = """
import boto3
calls, old_id = json.loads(os.environ["BENCH_CALLS"]), os.environ["BENCH_OLD_ID"]
made = {}
def handler(event, context):
    new_id = str(uuid.uuid4())
    for service, operation, params in calls:
        client = made.get(service) or made.setdefault(service, boto3.client(service))
        client._make_api_call(operation, json.loads(json.dumps(params).replace(old_id, new_id)))
    return {"statusCode": 202}
t = time.perf_counter(); handler({}, Context()); print(time.perf_counter() - t)
"""


def measure(stack: Stack) -> list[Figure]:
    stack.use(API)
    bundle = cold_start.bundle_dir()
    body = {"type": "send_email", "payload": _EMAIL}
    old_id, calls = submit.captured_calls(body)
    event = api_event(body)
    env = cold_start.lambda_env({**stack.env(API), "BENCH_EVENT": json.dumps(event)})
    env |= {"BENCH_CALLS": json.dumps(calls), "BENCH_OLD_ID": old_id}
    handler, bare = [], []
    for _ in range(ROUNDS):
        stack.drain()
        handler.append(float(cold_start.run_in_bundle(bundle, _CONTEXT + _HANDLER, True, env)))
        bare.append(float(cold_start.run_in_bundle(bundle, _CONTEXT + _BARE, True, env)))
    return [ratio_figure("first POST /jobs vs a bare handler's first", ("api", handler), ("bare", bare), 1.3)]


_EMAIL = {"to": ["someone@example.com"], "subject": "hello", "text": "first call"}
