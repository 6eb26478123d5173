"""The built-in types as the registry sees them."""

import subprocess
import sys

import pytest
from pydantic import ValidationError

from lambdas.jobs import registry
from lambdas.jobs.types import register_builtin_types
from tests.support.doc_example import install_example_type


def test_registering_is_idempotent_and_the_delivery_type_is_not_public():
    register_builtin_types()
    register_builtin_types()
    assert {"send_email", "webhook_fanout", "webhook_delivery", "process_file"} <= set(registry.names())
    public = {t.name for t in registry.public_types()}
    assert {"send_email", "webhook_fanout", "process_file"} <= public
    assert "webhook_delivery" not in public


def test_registering_loads_neither_pillow_nor_requests():
    # The API function registers every type to validate payloads; it must not pay for their heavy deps.
    code = (
        "import sys\n"
        "from lambdas.jobs.types import register_builtin_types\n"
        "register_builtin_types()\n"
        "print(sorted(m for m in ('PIL', 'requests') if m in sys.modules))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_payload_models_forbid_unknown_fields_and_accept_camel_case():
    for name in ("send_email", "webhook_fanout", "webhook_delivery", "process_file"):
        register_builtin_types()
        model = registry.get(name).payload_model
        assert model.model_config.get("extra") == "forbid", name
        assert model.model_config.get("populate_by_name") is True, name


def test_the_documented_example_becomes_a_type_by_adding_its_module(monkeypatch, tmp_path):
    name = install_example_type(monkeypatch, tmp_path)
    register_builtin_types()

    job_type = registry.get(name)
    assert job_type.public
    payload = job_type.payload_model.model_validate(
        {"key": "uploads/9b2e4c1a-6f0d-4e8b-a1c2-3d4e5f607182/notes.txt", "countWords": False}
    )
    assert payload.count_words is False
    with pytest.raises(ValidationError):
        job_type.payload_model.model_validate({"key": "elsewhere/notes.txt"})
