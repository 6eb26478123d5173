"""Cold starts stay lean: each function imports only what it needs."""

import json
import subprocess
import sys

import pytest

PROBE = """
import json, sys
import {module}
{after}
print(json.dumps({result}))
"""


def probe(module: str, after: str = "", result: str = "sorted(sys.modules)") -> set[str]:
    """`result` (a list of names) in a fresh interpreter: what this process imported must not count."""
    output = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module, after=after, result=result)],
        check=True,
        capture_output=True,
        text=True,
        env={"PATH": "", "POWERTOOLS_TRACE_DISABLED": "true", "AWS_DEFAULT_REGION": "us-east-1"},
    ).stdout
    return set(json.loads(output.splitlines()[-1]))


def modules_after_import(module: str, after: str = "") -> set[str]:
    return probe(module, after)


HANDLERS = [f"lambdas.handlers.{name}" for name in ("api", "worker", "dead_letter", "recovery")]


@pytest.mark.parametrize("handler", ["lambdas.handlers.dead_letter", "lambdas.handlers.recovery"])
def test_dead_letter_and_recovery_never_load_the_api_models_or_the_job_types(handler: str) -> None:
    loaded = modules_after_import(handler)
    assert "lambdas.models.api" not in loaded
    assert not any(name.startswith("lambdas.jobs") for name in loaded)
    assert "aws_lambda_powertools.event_handler.api_gateway" not in loaded
    assert "PIL" not in loaded


def test_the_worker_loads_a_job_type_on_its_first_lookup_without_its_heavy_dependencies() -> None:
    registered = modules_after_import(
        "lambdas.handlers.worker",
        "from lambdas.jobs.types import register_builtin_types; register_builtin_types()",
    )
    assert not any(name.startswith("lambdas.jobs.types.") for name in registered)
    looked_up = modules_after_import(
        "lambdas.handlers.worker",
        "from lambdas.jobs.types import register_builtin_types; register_builtin_types()\n"
        "from lambdas.jobs import registry; registry.get('process_file')",
    )
    assert {name for name in looked_up if name.startswith("lambdas.jobs.types.")} == {
        "lambdas.jobs.types.process_file"
    }
    assert "PIL" not in looked_up
    assert "lambdas.models.api" not in looked_up


@pytest.mark.parametrize("handler", ["lambdas.handlers.worker", "lambdas.handlers.dead_letter"])
def test_no_handler_imports_the_xray_sdk_while_tracing_is_off(handler: str) -> None:
    assert not any(name.startswith("aws_xray_sdk") for name in modules_after_import(handler))


@pytest.mark.parametrize(
    "handler", ["lambdas.handlers.dead_letter", "lambdas.handlers.recovery", "lambdas.handlers.schedules"]
)
def test_dead_letter_recovery_and_schedules_load_no_pydantic_with_their_module(
    handler: str,
) -> None:
    """Seen to fail for schedules with `settings` imported at its module's top again."""
    assert "pydantic" not in modules_after_import(handler)


def test_the_schedules_function_never_loads_the_apis_models() -> None:
    """Seen to fail with `lifecycle.requests.schedules` importing `SubmitJobRequest` at its top again."""
    loaded = modules_after_import("lambdas.handlers.schedules", "from lambdas.models import settings")
    assert "lambdas.models.api" not in loaded
    assert "lambdas.models.schedule_api" not in loaded


def test_a_schedules_tick_loads_no_job_type() -> None:
    """A firing stores a job its schedule's creation already checked: the tick needs no type's contract
    (which brings pydantic and every model it names). Seen to fail with the handler registering the
    built-in types on each call again."""
    loaded = modules_after_import(
        "lambdas.handlers.schedules",
        "from local_runtime.context import LambdaContext\n"
        "class NoSchedules:\n"
        "    def timings(self): return []\n"
        "lambdas.handlers.schedules._parts = lambda: lambdas.handlers.schedules._Parts(\n"
        "    NoSchedules(), None, None, 1)\n"
        "lambdas.handlers.schedules.handler({'tick': '2026-12-01T00:01:00Z'}, LambdaContext('schedules'))",
    )
    assert not any(name.startswith("lambdas.jobs") for name in loaded)
    assert "pydantic" not in loaded


# Not the api: Powertools' event_handler package loads whole, asyncio with it, as in any resolver's user.
@pytest.mark.parametrize("handler", [*HANDLERS[1:], "lambdas.handlers.schedules"])
def test_no_function_loads_asyncio_or_powertools_batch_utility(handler: str) -> None:
    """The queue consumers report their partial batch failures themselves: Powertools' batch utility
    loads asyncio and the Kafka, Kinesis and DynamoDB stream classes. Seen to fail for dead_letter with
    its `process_partial_response` put back."""
    loaded = modules_after_import(handler)
    assert "asyncio" not in loaded
    assert not any(name.startswith("aws_lambda_powertools.utilities.batch") for name in loaded)


def test_the_dead_letter_function_never_loads_powertools_parser_models() -> None:
    # Powertools' batch utility imports its pydantic parser models (~30 ms) if pydantic is already
    # loaded when the utility is; the handler loads neither that utility nor the parser.
    loaded = modules_after_import("lambdas.handlers.dead_letter", "import pydantic  # as a fan-out's alert")
    assert "pydantic" in loaded
    assert not any(name.startswith("aws_lambda_powertools.utilities.parser") for name in loaded)


@pytest.mark.parametrize("handler", HANDLERS)
def test_a_handler_loads_without_the_cycle_collector_and_freezes_what_it_loaded(handler: str) -> None:
    collected = probe(
        "gc",
        "runs = []\n"
        "gc.callbacks.append(lambda phase, info: runs.append(info['generation']) if phase == 'start' else None)\n"
        f"import {handler}",
        "[f'collections {len(runs)}', f'enabled {gc.isenabled()}', f'frozen {gc.get_freeze_count() > 10_000}']",
    )
    assert collected == {"collections 0", "enabled True", "frozen True"}


def test_the_functions_clients_come_from_one_session() -> None:
    made = probe(
        "boto3",
        "sessions = []\n"
        "original = boto3.session.Session.__init__\n"
        "def counted(self, *args, **kwargs):\n"
        "    sessions.append(self)\n"
        "    original(self, *args, **kwargs)\n"
        "boto3.session.Session.__init__ = counted\n"
        "from lambdas.store import clients\n"
        "clients.client('dynamodb'); clients.client('sqs'); clients.client('sns')",
        "[f'sessions {len(sessions)}']",
    )
    assert made == {"sessions 1"}


@pytest.mark.parametrize(
    ("handler", "loader"),
    [
        ("lambdas.handlers.dead_letter", "dead_letter"),
        ("lambdas.handlers.recovery", "recovery"),
        ("lambdas.handlers.schedules", "firing"),
    ],
)
def test_a_function_reads_its_settings_without_pydantic(handler: str, loader: str) -> None:
    """The functions whose first call needs nothing else of pydantic (docs/performance.md). Seen to fail
    with the settings declared as pydantic models again."""
    environment = {
        "JOBS_TABLE_NAME": "jobs",
        "QUEUE_URL": "https://queue",
        "ALERTS_TOPIC_ARN": "arn:aws:sns:us-east-1:123456789012:alerts",
        "SCHEDULES_TABLE_NAME": "schedules",
        "DEAD_LETTER_QUEUE_URLS": '{"https://queue": "https://dlq"}',
    }
    loaded = probe(
        handler,
        f"import os; os.environ.update({environment!r})\n"
        f"from lambdas.models import settings; settings.{loader}()",
    )
    assert "pydantic" not in loaded
