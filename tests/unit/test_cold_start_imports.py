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


@pytest.mark.parametrize("handler", ["lambdas.handlers.dead_letter", "lambdas.handlers.recovery"])
def test_dead_letter_and_recovery_never_load_the_api_models_or_the_job_types(handler: str) -> None:
    loaded = modules_after_import(handler)
    assert "lambdas.models.api" not in loaded
    assert not any(name.startswith("lambdas.jobs") for name in loaded)
    assert "aws_lambda_powertools.event_handler" not in loaded
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


def test_the_api_loads_its_routes_but_nothing_a_route_loads_when_it_first_runs() -> None:
    loaded = modules_after_import("lambdas.handlers.api")
    assert "aws_lambda_powertools.event_handler" in loaded
    assert "lambdas.models.api" in loaded
    # The store (and boto3 with it), the lifecycle and the job types load on a route's first call;
    # the OpenAPI document's models only when the document is generated.
    assert "boto3" not in loaded
    assert not any(name.startswith("lambdas.store.") for name in loaded - {"lambdas.store.errors"})
    assert "lambdas.lifecycle.submit" not in loaded
    assert "lambdas.jobs.registry" not in loaded
    assert not any(name.startswith("lambdas.jobs.types") for name in loaded)
    assert "aws_lambda_powertools.event_handler.openapi.models" not in loaded


def test_a_function_builds_the_validator_of_its_own_settings_model_only() -> None:
    built = probe(
        "lambdas.handlers.recovery",
        "from lambdas.models import settings, uploads\n"
        "settings.RecoverySettings.load({'JOBS_TABLE_NAME': 'jobs', 'QUEUE_URL': 'https://queue'})\n"
        "models = [m for m in [*vars(settings).values(), *vars(uploads).values()] if isinstance(m, type)]",
        "[m.__name__ for m in models if getattr(m, '__pydantic_complete__', False)]",
    )
    assert built == {"RecoverySettings"}
