"""The registry imports a type's module on the first lookup of its name, and only then."""

import sys
from pathlib import Path

import pytest

from lambdas.jobs import registry

_TYPE_MODULE = """
from pydantic import BaseModel
from lambdas.jobs.base import JobType

class Payload(BaseModel):
    n: int

JOB_TYPE = JobType({name!r}, Payload, lambda payload, context: payload.n)
"""


@pytest.fixture
def module_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _write(module_dir: Path, module: str, body: str) -> str:
    (module_dir / f"{module}.py").write_text(body)
    sys.modules.pop(module, None)
    return module


def test_a_type_registered_by_module_is_listed_without_importing_it_and_imported_on_lookup(module_dir: Path):
    module = _write(module_dir, "bench_lazy_type", _TYPE_MODULE.format(name="test_lazy"))
    registry.register_module("test_lazy", module)

    assert "test_lazy" in registry.names()
    assert module not in sys.modules
    job_type = registry.get("test_lazy")
    assert module in sys.modules
    assert job_type.name == "test_lazy"
    assert registry.get("test_lazy") is job_type
    assert "test_lazy" in {t.name for t in registry.public_types()}


def test_a_module_whose_type_has_another_name_is_refused(module_dir: Path):
    module = _write(module_dir, "bench_misnamed_type", _TYPE_MODULE.format(name="test_other"))
    registry.register_module("test_misnamed", module)
    with pytest.raises(ValueError, match="test_other"):
        registry.get("test_misnamed")


def test_a_module_without_a_type_is_no_type(module_dir: Path):
    module = _write(module_dir, "bench_helper_module", "VALUE = 1\n")
    registry.register_module("test_helper", module)
    with pytest.raises(registry.NotRegisteredError):
        registry.get("test_helper")
    assert "test_helper" not in registry.names()


def test_unregistering_forgets_a_type_not_yet_imported(module_dir: Path):
    module = _write(module_dir, "bench_forgotten_type", _TYPE_MODULE.format(name="test_forgotten"))
    registry.register_module("test_forgotten", module)
    registry.unregister("test_forgotten")
    with pytest.raises(registry.NotRegisteredError):
        registry.get("test_forgotten")
    assert module not in sys.modules
