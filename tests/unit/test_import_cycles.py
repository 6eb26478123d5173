"""No import cycle among the product's modules (`lambdas`, `infra`, `local_runtime`, `offload_cli`), read
from the source, so an import inside a function counts as much as one at the top: a cycle says two
modules are one concern, or that a third one is missing.

Seen to fail on `lambdas/lifecycle` while `bulk`, `fan_out` and `ops` imported each other (through
imports inside functions), on `jobs/registry.py`'s look-up of the built-in types through
`jobs/types`, and on `local_runtime/s3_post_policy.py` reading the credentials from `moto_server`.
"""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("lambdas", "infra", "local_runtime", "offload_cli")


def modules(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def import_graph(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """Each module's imports of the others, wherever they stand (functions, TYPE_CHECKING blocks). A name
    imported from a package is its submodule when there is one, else the package itself."""
    known = modules(root, packages)

    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(resolve(alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{anchor}.{base}" if base else anchor
                targets.update(resolve(f"{base}.{alias.name}") for alias in node.names)
        graph[name] = {target for target in targets if target is not None and target != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            following = next(edges, None)
            if following is not None:
                if following not in index:
                    index[following] = low[following] = len(index)
                    stack.append(following)
                    on_stack.add(following)
                    work.append((following, iter(sorted(graph[following]))))
                elif following in on_stack:
                    low[node] = min(low[node], index[following])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_no_import_cycle_in_product_code() -> None:
    assert cycles(import_graph(ROOT)) == []


def test_a_cycle_through_an_import_inside_a_function_is_found(tmp_path: Path) -> None:
    root = tmp_path
    (root / "lambdas" / "lifecycle").mkdir(parents=True)
    (root / "lambdas" / "__init__.py").write_text("")
    (root / "lambdas" / "lifecycle" / "__init__.py").write_text("")
    (root / "lambdas" / "lifecycle" / "a.py").write_text("from lambdas.lifecycle.b import B\n")
    (root / "lambdas" / "lifecycle" / "b.py").write_text("def later():\n    from . import c\n")
    (root / "lambdas" / "lifecycle" / "c.py").write_text(
        "def later():\n    from lambdas.lifecycle import a\n"
    )
    (root / "lambdas" / "lifecycle" / "d.py").write_text("import lambdas.lifecycle.a\n")

    assert cycles(import_graph(root, ("lambdas",))) == [
        ["lambdas.lifecycle.a", "lambdas.lifecycle.b", "lambdas.lifecycle.c"]
    ]


REASON = re.compile(r"\b(loads?|loaded|loading|imported|cold start)\b")


def _unexplained(node: ast.AST, lines: list[str], docs: tuple[str, ...], inside: bool) -> list[int]:
    """The lines of the imports under `node` that give no reason (see `unexplained_imports_in_functions`)."""
    found = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            doc = (ast.get_docstring(child) or "").lower()
            found += _unexplained(child, lines, (*docs, doc), inside or not isinstance(child, ast.ClassDef))
        elif isinstance(child, ast.Import | ast.ImportFrom) and inside:
            commented = any("#" in line for line in lines[max(child.lineno - 2, 0) : child.end_lineno])
            if not commented and not any(REASON.search(doc) for doc in docs):
                found.append(child.lineno)
        else:
            found += _unexplained(child, lines, docs, inside)
    return found


def unexplained_imports_in_functions(root: Path = ROOT / "lambdas") -> list[str]:
    """Imports inside a function under `root` that give no reason: none of a `#` comment on the import or
    the line above it, nor a docstring of its function, class or module that speaks of loading or cold
    start. Without a cycle to break (`test_no_import_cycle_in_product_code` counts these imports too), an
    import belongs at the top unless keeping it out of a function's import is measured to pay."""
    found = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text()
        tree = ast.parse(source, str(path))
        module_doc = (ast.get_docstring(tree) or "").lower()
        lines = source.splitlines()
        found += [
            f"{path.relative_to(root.parent)}:{n}" for n in _unexplained(tree, lines, (module_doc,), False)
        ]
    return found


def test_every_import_inside_a_function_says_why() -> None:
    """Seen to fail with the comment on `_timeouts`'s import of `webhook_http` (`jobs/types/webhook_delivery.py`)
    removed."""
    assert unexplained_imports_in_functions() == []


def test_an_import_inside_a_function_without_a_reason_is_found(tmp_path: Path) -> None:
    root = tmp_path / "lambdas"
    root.mkdir()
    (root / "a.py").write_text(
        '"""A module."""\n'
        "import json\n"
        "def bare():\n"
        "    import io\n"
        "def commented():\n"
        "    # PIL loads with the first thumbnail only\n"
        "    from PIL import Image\n"
        "class C:\n"
        "    def explained(self):\n"
        '        """The SDK loads on the first call."""\n'
        "        import csv\n"
        "    def silent(self):\n"
        "        from lambdas import b\n"
    )
    assert unexplained_imports_in_functions(root) == ["lambdas/a.py:4", "lambdas/a.py:13"]
