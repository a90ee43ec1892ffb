"""The house rules of issue #10 that import-linter cannot say: module sizes, files directly in engine/, no import of
another module's private names, no import cycle among our modules (lazy imports included, issue #31 item 4), and a
packaging list that covers every package.

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


def _imports(name: str, path: Path) -> list[tuple[str, list[str], int, bool]]:
    """``[(imported module, names, line, type_only)]`` of one module: every ``import`` / ``from ... import`` node of
    the file (module level, inside functions and methods, in ``try`` / ``if`` blocks), relative imports resolved;
    ``type_only``: inside an ``if TYPE_CHECKING:`` block."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    type_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            type_only.update(id(sub) for stmt in node.body for sub in ast.walk(stmt))
    found: list[tuple[str, list[str], int, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base]) if base else ".".join(anchor)
            found.append((base, [a.name for a in node.names], node.lineno, id(node) in type_only))
        elif isinstance(node, ast.Import):
            found.extend((a.name, [], node.lineno, id(node) in type_only) for a in node.names)
    return found


def import_graph() -> dict[str, dict[str, int]]:
    """``{module: {our module it imports at run time: line of the first such import}}``.

    Every import counts, at module level or inside a function (a lazy import hides a cycle, it does not remove it:
    issue #31 item 4). ``from a import b`` is an arrow to ``a`` and, where ``a.b`` is one of our modules, to
    ``a.b``. Left out: imports inside ``if TYPE_CHECKING:`` (never executed; import-linter's
    ``exclude_type_checking_imports`` says the same) and a package's arrows to its own submodules (an ``__init__``
    re-exporting its children is not a cycle of interest)."""
    modules = _modules()
    graph: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        deps: dict[str, int] = {}
        for target, names, line, type_only in _imports(name, path):
            if type_only:
                continue
            for dep in (target, *(f"{target}.{n}" for n in names)):
                if dep in modules and dep != name and not dep.startswith(name + "."):
                    deps.setdefault(dep, line)
        graph[name] = deps
    return graph


def import_cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One cycle path ``[a, b, ..., a]`` per strongly connected component of ``graph`` with more than one module
    (Tarjan), so every tangle is reported, not only the first one met."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, {})):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in sorted(graph):
        if v not in index:
            connect(v)
    cycles = []
    for component in components:
        start = min(component)
        # shortest way back to start inside the component (breadth first): the path a reader follows to break it
        previous: dict[str, str] = {}
        frontier = [start]
        while frontier and start not in previous:
            nxt = []
            for v in frontier:
                for w in sorted(graph[v]):
                    if w in component and w not in previous:
                        previous[w] = v
                        nxt.append(w)
            frontier = nxt
        path = [start]
        while path[-1] != start or len(path) == 1:
            path.append(previous[path[-1]])
        cycles.append(path[::-1])
    return sorted(cycles)


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
        for target, names, line, _type_only in _imports(name, path):
            if target not in modules or target == name:
                continue
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private:
                offences.append(f"{path.relative_to(ROOT)}:{line} imports {private} from {target}")
    assert offences == []


def test_no_import_cycle_among_our_modules() -> None:
    """No cycle among our modules, lazy imports included (issue #31 item 4: ``engine.read.recall`` imported
    ``recall_thread`` inside a method because ``recall_thread`` imported ``recall``). Shared pieces go to a module
    both can import one way (``engine/read/recall_fragments.py``)."""
    graph = import_graph()
    cycles = import_cycles(graph)
    shown = [" -> ".join(f"{a} (line {graph[a][b]})" for a, b in zip(c, c[1:], strict=False)) + f" -> {c[-1]}"
             for c in cycles]
    assert cycles == [], "import cycles (break each with a module both sides import):\n" + "\n".join(shown)


def test_the_cycle_check_sees_lazy_and_relative_imports(tmp_path: Path) -> None:
    """The check itself can fail: a cycle closed by an import inside a function, and one through a relative
    import, are both found and reported with their path."""
    graph = {"m.a": {"m.b": 3}, "m.b": {"m.a": 40}, "m.c": {"m.d": 1}, "m.d": {"m.e": 2}, "m.e": {"m.c": 9},
             "m.f": {"m.a": 1}}
    assert import_cycles(graph) == [["m.a", "m.b", "m.a"], ["m.c", "m.d", "m.e", "m.c"]]
    pkg = tmp_path / "p"
    pkg.mkdir()
    (pkg / "x.py").write_text("def f():\n    from . import y\n    from .y import z as _\n")
    found = _imports("memengine.p.x", pkg / "x.py")
    assert [(t, n, type_only) for t, n, _line, type_only in found] == [
        ("memengine.p", ["y"], False), ("memengine.p.y", ["z"], False)]
    (pkg / "w.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .y import Z\n")
    assert [x[3] for x in _imports("memengine.p.w", pkg / "w.py") if x[0] == "memengine.p.y"] == [True]


def test_packaging_lists_every_package() -> None:
    """setuptools ships exactly the packages listed in pyproject (package-dir "memengine" = "."): a new package folder
    missing from the list would be left out of the wheel silently."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {"memengine"} | {"memengine." + ".".join(p.parent.relative_to(ROOT).parts)
                               for top in TOPS for p in (ROOT / top).rglob("__init__.py")}
    assert listed == on_disk


#: Unit test files that test no single module, each with the reason it reads across packages (issue #31 item 5).
#: Everything else under tests/unit mirrors the package it tests: ``tests/unit/<package path>/test_<module>.py``.
CROSS_CUTTING = {
    "test_architecture.py": "the house rules over every package (sizes, imports, cycles, packaging, this layout)",
    "test_cli_conventions.py": "one convention across the CLI, the client's tools, the wire requests and the progress "
                               "lines (issue #15 item 5)",
    "test_hostile_text.py": "every string of every fact type through the codec, the client's checks and the wire "
                            "errors (issue #26 item 3)",
    "test_one_gate.py": "every code path of engine/derive that makes a memory item passes the one gate (issue #26 "
                        "item 5)",
    "docs/test_docs_coverage.py": "compares the README and docs/ with the CLI and the HTTP routes (issue #31 item 1)",
    "test_suppressions.py": "every noqa and type: ignore across the tree says why (issue #31 item 3)",
    "test_turns_withdrawn.py": "one fact, TurnsWithdrawn, through the codec and every read model's fold (issue #26 "
                               "item 6)",
}


def misplaced_unit_tests(unit: Path, root: Path) -> list[str]:
    """The ``test_*.py`` files under ``unit`` that do not mirror a module of ``root``: ``unit/<dir>/test_<name>.py``
    needs ``root/<dir>/<name>.py`` or a package ``root/<dir>/<name>/`` (at the top, one of the shipped packages),
    unless listed in ``CROSS_CUTTING``. Helpers that are not ``test_*.py`` files are not checked."""
    wrong = []
    for path in sorted(unit.rglob("test_*.py")):
        rel = path.relative_to(unit)
        if rel.as_posix() in CROSS_CUTTING:
            continue
        folder = root.joinpath(*rel.parts[:-1])
        name = path.stem.removeprefix("test_")
        top_ok = len(rel.parts) > 1 or name in TOPS
        if not (top_ok and ((folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file())):
            wrong.append(f"{rel.as_posix()}: no module {(folder / name).relative_to(root).as_posix()}(.py)")
    return wrong


def test_unit_tests_mirror_the_packages() -> None:
    """Issue #31 item 5: "where is the test of X" is one look. The tests of ``engine/read/context.py`` are in
    ``tests/unit/engine/read/test_context.py``; a file placed anywhere else fails here (move it, or add it to
    ``CROSS_CUTTING`` with the reason it reads across packages). Integration tests go by feature:
    ``tests/integration/<feature>/test_*.py``, never directly in tests/integration."""
    unit = Path(__file__).resolve().parent
    assert misplaced_unit_tests(unit, ROOT) == []
    loose = sorted(p.name for p in (unit.parent / "integration").glob("test_*.py"))
    assert loose == [], f"put these in a feature folder of tests/integration: {loose}"
    missing_init = sorted(str(d.relative_to(unit.parent)) for base in (unit, unit.parent / "integration")
                          for d in base.rglob("*") if d.is_dir() and d.name != "__pycache__"
                          and not (d / "__init__.py").is_file())
    assert missing_init == [], f"tests is a package: add __init__.py to {missing_init}"


def test_the_layout_check_can_fail(tmp_path: Path) -> None:
    """The layout check itself finds a test named after no module, one in a folder that mirrors nothing, and one at
    the top that is neither a shipped package nor cross-cutting; it accepts a module, a subpackage and a package."""
    root, unit = tmp_path / "root", tmp_path / "unit"
    (root / "engine" / "read" / "sub").mkdir(parents=True)
    (root / "engine" / "__init__.py").write_text("")
    (root / "engine" / "read" / "context.py").write_text("")
    (root / "engine" / "read" / "sub" / "__init__.py").write_text("")
    for rel in ("engine/read/test_context.py", "engine/read/test_sub.py", "test_engine.py", "test_one_gate.py",
                "engine/read/test_contex.py", "engine/nowhere/test_context.py", "test_context.py"):
        (unit / rel).parent.mkdir(parents=True, exist_ok=True)
        (unit / rel).write_text("")
    assert [w.split(":")[0] for w in misplaced_unit_tests(unit, root)] == [
        "engine/nowhere/test_context.py", "engine/read/test_contex.py", "test_context.py"]
