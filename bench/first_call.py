"""First invocation: the api's first POST /jobs in a fresh process, against a bare handler's first call.

Both run in a fresh interpreter from the byte-compiled bundle (see cold_start), with the function's
environment, against moto's server; the handler's module is imported before the clock starts, so the
figure is the set-up the first call pays (settings, clients, job-type lookup) plus the call itself. The
bare handler creates its boto3 clients on first use and replays the very calls POST /jobs made.

A second figure, not a goal, adds each side's import to its first call (the api module against
`import boto3`): what a cold start costs in all, so that work moved between the import and the first
call shows in one of the two goals and cancels out here.
"""

import json
from dataclasses import replace

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
t = time.perf_counter(); import lambdas.handlers.api as module; imported = time.perf_counter() - t
event = json.loads(os.environ["BENCH_EVENT"])
t = time.perf_counter(); response = module.handler(event, Context()); elapsed = time.perf_counter() - t
assert response["statusCode"] == 202, response
print(imported, elapsed)
"""
_BARE = """
t = time.perf_counter(); import boto3; imported = time.perf_counter() - t
calls, old_id = json.loads(os.environ["BENCH_CALLS"]), os.environ["BENCH_OLD_ID"]
made = {}
def handler(event, context):
    new_id = str(uuid.uuid4())
    for service, operation, params in calls:
        client = made.get(service) or made.setdefault(service, boto3.client(service))
        client._make_api_call(operation, json.loads(json.dumps(params).replace(old_id, new_id)))
    return {"statusCode": 202}
t = time.perf_counter(); handler({}, Context()); print(imported, time.perf_counter() - t)
"""


def measure(stack: Stack) -> list[Figure]:
    stack.use(API)
    bundle = cold_start.bundle_dir()
    body = {"type": "send_email", "payload": _EMAIL}
    old_id, calls = submit.captured_calls(body)
    event = api_event(body)
    env = cold_start.lambda_env({**stack.env(API), "BENCH_EVENT": json.dumps(event)})
    env |= {"BENCH_CALLS": json.dumps(calls), "BENCH_OLD_ID": old_id}
    handler: list[tuple[float, float]] = []
    bare: list[tuple[float, float]] = []
    for _ in range(ROUNDS):
        stack.drain()
        for samples, code in ((handler, _HANDLER), (bare, _BARE)):
            imported, first = cold_start.run_in_bundle(bundle, _CONTEXT + code, True, env).split()
            samples.append((float(imported), float(first)))
    first_call = ratio_figure(
        "first POST /jobs vs a bare handler's first",
        ("api", [c for _, c in handler]),
        ("bare", [c for _, c in bare]),
        1.3,
    )
    in_all = ratio_figure(
        "import + first POST /jobs vs boto3 + bare's",
        ("api", [i + c for i, c in handler]),
        ("bare", [i + c for i, c in bare]),
        1.3,
    )
    return [first_call, replace(in_all, checked=False)]


_EMAIL = {"to": ["someone@example.com"], "subject": "hello", "text": "first call"}
