"""The layers of `lambdas/`, read from the source: (testing ->) handlers -> lifecycle -> jobs -> store
-> models.

A module imports only from its own layer or the ones below it; `lambdas/config.py`,
`lambdas/observability.py` and `lambdas/redaction.py` serve every layer. So a job type cannot build the store itself (it asks its
context), the store cannot reach into the job types, and the lifecycle knows the job types only through
their contract (`lambdas/jobs/base.py`'s `JobType`, the registry), never a type's own module.
"""

import ast
from pathlib import Path

import pytest

LAMBDAS = Path(__file__).resolve().parents[2] / "lambdas"
# lowest first; `testing` (the job types' test kit for users) stands on all, and nothing stands on it.
LAYERS = ("models", "store", "jobs", "lifecycle", "handlers", "testing")
SHARED = {"config", "observability", "redaction"}


def _module_name(path: Path, root: Path = LAMBDAS) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path, root: Path = LAMBDAS) -> set[str]:
    """Every `lambdas...` module the file imports, wherever the import is (functions, TYPE_CHECKING)."""
    found: set[str] = set()
    name = _module_name(path, root)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the file's package
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            found.update(f"{base}.{alias.name}" for alias in node.names)
            found.add(base)
    return {name for name in found if name == "lambdas" or name.startswith("lambdas.")}


def layer_of(module: str) -> str | None:
    """The layer a `lambdas.<part>...` module belongs to; None for the shared modules (and the package)."""
    parts = module.split(".")
    if len(parts) < 2 or parts[1] in SHARED:
        return None
    if parts[1] not in LAYERS:
        raise AssertionError(f"{module} is in no layer: add its folder to LAYERS or SHARED")
    return parts[1]


def violations(path: Path, root: Path = LAMBDAS) -> list[str]:
    name = _module_name(path, root)
    imported = sorted(_imported(path, root))
    own = layer_of(name)
    if own is None:
        return [f"{name} (shared) imports {m}" for m in imported if layer_of(m) is not None]
    return [
        f"{name} ({own}) imports {module} ({layer})"
        for module in imported
        if (layer := layer_of(module)) is not None and LAYERS.index(layer) > LAYERS.index(own)
    ]


SOURCES = sorted(LAMBDAS.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=[str(p.relative_to(LAMBDAS)) for p in SOURCES])
def test_no_module_imports_a_higher_layer(path: Path) -> None:
    assert violations(path) == []


def store_reached_by_a_job_module(path: Path, root: Path = LAMBDAS) -> list[str]:
    """Stricter for `jobs/` than the order alone: a job type reaches data only through its context."""
    return sorted(m for m in _imported(path, root) if layer_of(m) == "store")


JOB_SOURCES = sorted((LAMBDAS / "jobs").rglob("*.py"))


@pytest.mark.parametrize("path", JOB_SOURCES, ids=[str(p.relative_to(LAMBDAS)) for p in JOB_SOURCES])
def test_no_job_module_imports_the_store(path: Path) -> None:
    assert store_reached_by_a_job_module(path) == []


def job_types_reached_by_a_lifecycle_module(path: Path, root: Path = LAMBDAS) -> list[str]:
    """The lifecycle knows job types only through their contract (`lambdas/jobs/base.py`, the registry):
    never a type's module, its payload or its helpers."""
    return sorted(
        m for m in _imported(path, root) if m == "lambdas.jobs.types" or m.startswith("lambdas.jobs.types.")
    )


LIFECYCLE_SOURCES = sorted((LAMBDAS / "lifecycle").rglob("*.py"))


@pytest.mark.parametrize(
    "path", LIFECYCLE_SOURCES, ids=[str(p.relative_to(LAMBDAS)) for p in LIFECYCLE_SOURCES]
)
def test_no_lifecycle_module_imports_a_job_type(path: Path) -> None:
    """Seen to fail on `lifecycle/requests/reads.py` while it imported `webhook_delivery` for the children's ids."""
    assert job_types_reached_by_a_lifecycle_module(path) == []


def test_the_rules_see_a_violation(tmp_path: Path) -> None:
    # A job type that builds its own store and peeks at the worker: both rules name it, in any import form.
    root = tmp_path / "lambdas"
    bad = root / "jobs" / "types" / "_layer_probe.py"
    bad.parent.mkdir(parents=True)
    bad.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    import lambdas.lifecycle.attempt.worker\n"
        "def run():\n"
        "    from lambdas.store.jobs import JobStore\n"
        "    from ...store import clients\n"
    )
    assert violations(bad, root) == [
        "lambdas.jobs.types._layer_probe (jobs) imports lambdas.lifecycle.attempt.worker (lifecycle)"
    ]
    assert store_reached_by_a_job_module(bad, root) == [
        "lambdas.store",
        "lambdas.store.clients",
        "lambdas.store.jobs",
        "lambdas.store.jobs.JobStore",
    ]
    peek = root / "lifecycle" / "_layer_probe.py"
    peek.parent.mkdir(parents=True)
    peek.write_text("def ids():\n    from lambdas.jobs.types.webhook_delivery import delivery_id\n")
    assert job_types_reached_by_a_lifecycle_module(peek, root) == [
        "lambdas.jobs.types.webhook_delivery",
        "lambdas.jobs.types.webhook_delivery.delivery_id",
    ]


def item_names_outside_the_store(path: Path) -> list[str]:
    """Outside `lambdas/store`, an item's attribute names and key formats are the codec's: a module may use
    `schema`'s indexes and `codec`'s functions, never an attribute name (`schema.JOBS_PK`, `codec.RUN_AT`)."""
    tree = ast.parse(path.read_text(), str(path))
    modules = {"lambdas.store.schema": "schema", "lambdas.store.codec": "codec"}
    aliases: dict[str, str] = {}  # a local name bound to schema or codec
    used: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "lambdas.store":
            aliases.update({a.asname or a.name: a.name for a in node.names if a.name in modules.values()})
        elif isinstance(node, ast.ImportFrom) and node.module in modules:
            used.extend((modules[node.module], alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            aliases.update({a.asname: modules[a.name] for a in node.names if a.name in modules and a.asname})
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            used.append((aliases[node.value.id], node.attr))
    return sorted(
        f"{module}.{name}"
        for module, name in used
        if not (name.islower() or (module == "schema" and (name == "Index" or name.endswith("_INDEX"))))
    )


OUTSIDE_STORE = sorted(p for p in LAMBDAS.rglob("*.py") if (LAMBDAS / "store") not in p.parents)


@pytest.mark.parametrize("path", OUTSIDE_STORE, ids=[str(p.relative_to(LAMBDAS)) for p in OUTSIDE_STORE])
def test_no_module_outside_the_store_names_an_item_attribute(path: Path) -> None:
    """Seen to fail on `lifecycle/requests/reads.py` with its list keys written as `f"{schema.OWNER_SHARD}..."`."""
    assert item_names_outside_the_store(path) == []


def test_the_item_rule_sees_an_attribute_name(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from lambdas.store import codec, schema\n"
        "from lambdas.store.codec import RUN_AT, millis\n"
        "key = {schema.JOBS_PK: 'j'}, schema.CREATED_INDEX, codec.status_key, codec.COUNTERS_SUFFIX\n"
    )
    assert item_names_outside_the_store(probe) == ["codec.COUNTERS_SUFFIX", "codec.RUN_AT", "schema.JOBS_PK"]


SENDS = {"send_message", "send_message_batch"}
SENDER = LAMBDAS / "store" / "queue.py"


def messages_sent_outside_the_queue(root: Path = LAMBDAS) -> list[str]:
    """Every call of SQS's SendMessage or SendMessageBatch under `lambdas/` but in `lambdas/store/queue.py`:
    one module decides where a job's message goes (queue, delay, group) and sends it; every other asks
    `JobQueue`, so a change to routing touches one file."""
    sender = root / "store" / "queue.py"
    return sorted(
        f"{path.relative_to(root.parent)}:{node.lineno} {node.func.attr}"
        for path in root.rglob("*.py")
        if path != sender
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SENDS
    )


def test_only_the_job_queue_sends_a_message() -> None:
    """Seen to fail with `lifecycle/attempt/capabilities.py` sending its children's messages with
    `clients.client("sqs").send_message(...)` beside `queue.send_new`."""
    assert SENDER.exists()
    assert messages_sent_outside_the_queue() == []


def test_the_sender_rule_sees_a_second_sender(tmp_path: Path) -> None:
    root = tmp_path / "lambdas"
    (root / "store").mkdir(parents=True)
    (root / "store" / "queue.py").write_text("def send(sqs):\n    sqs.send_message(QueueUrl='q')\n")
    (root / "lifecycle").mkdir()
    (root / "lifecycle" / "elsewhere.py").write_text(
        "from lambdas.store import clients\n"
        "def later(ids):\n"
        "    clients.client('sqs').send_message_batch(QueueUrl='q', Entries=ids)\n"
    )
    assert messages_sent_outside_the_queue(root) == ["lambdas/lifecycle/elsewhere.py:3 send_message_batch"]
