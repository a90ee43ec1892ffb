"""The house rules of issue #10 that import-linter cannot say: module sizes, files directly in engine/, no import of
another module's private names, no import cycle among our modules, and a packaging list that covers every package.

The layer contracts themselves are import-linter's (pyproject ``[tool.importlinter]``, run by .ci/run).
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOPS = ("engine", "events", "projections")
MAX_LINES = 600


def _modules() -> dict[str, Path]:
    """``{dotted name under memengine: path}`` of every module of the shipped packages."""
    out: dict[str, Path] = {}
    for top in TOPS:
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out["memengine." + ".".join(parts)] = path
    return out


def _imports(name: str, path: Path) -> list[tuple[str, list[str], int]]:
    """``[(imported module, names, line)]`` of one module, relative imports resolved."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: list[tuple[str, list[str], int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base]) if base else ".".join(anchor)
            found.append((base, [a.name for a in node.names], node.lineno))
        elif isinstance(node, ast.Import):
            found.extend((a.name, [], node.lineno) for a in node.names)
    return found


def test_no_module_of_engine_is_over_600_lines() -> None:
    big = {str(p.relative_to(ROOT)): n for p in (ROOT / "engine").rglob("*.py")
           if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert big == {}, f"split these modules (issue #10: at most {MAX_LINES} lines): {big}"


def test_at_most_three_python_files_directly_in_engine() -> None:
    files = sorted(p.name for p in (ROOT / "engine").glob("*.py"))
    assert len(files) <= 3, files


def test_no_module_imports_another_modules_private_name() -> None:
    modules = _modules()
    offences = []
    for name, path in modules.items():
        for target, names, line in _imports(name, path):
            if target not in modules or target == name:
                continue
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private:
                offences.append(f"{path.relative_to(ROOT)}:{line} imports {private} from {target}")
    assert offences == []


def test_no_import_cycle_among_our_modules() -> None:
    """Module-level imports only (an import inside a function is still an arrow, but not a cycle at import time);
    TYPE_CHECKING blocks are skipped."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        deps: set[str] = set()
        for node in tree.body:  # top level only
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            for sub in ast.walk(node):
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    break
                targets: list[str] = []
                if isinstance(sub, ast.ImportFrom) and sub.module:
                    targets = [sub.module] + [f"{sub.module}.{a.name}" for a in sub.names]
                elif isinstance(sub, ast.Import):
                    targets = [a.name for a in sub.names]
                deps.update(t for t in targets if t in modules and t != name)
        graph[name] = deps
    # a package's __init__ importing its own submodules is not a cycle of interest; drop parent -> child arrows
    for name, deps in graph.items():
        graph[name] = {d for d in deps if not d.startswith(name + ".")}
    seen: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(n: str) -> None:
        seen[n] = 1
        stack.append(n)
        for d in sorted(graph.get(n, ())):
            if seen.get(d) == 1:
                cycles.append(stack[stack.index(d):] + [d])
            elif d not in seen:
                visit(d)
        stack.pop()
        seen[n] = 2

    for n in sorted(graph):
        if n not in seen:
            visit(n)
    assert cycles == [], cycles[:5]


def test_packaging_lists_every_package() -> None:
    """setuptools ships exactly the packages listed in pyproject (package-dir "memengine" = "."): a new package folder
    missing from the list would be left out of the wheel silently."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {"memengine"} | {"memengine." + ".".join(p.parent.relative_to(ROOT).parts)
                               for top in TOPS for p in (ROOT / top).rglob("__init__.py")}
    assert listed == on_disk
