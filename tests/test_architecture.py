"""The house has no circles: every module's imports (function-local ones included) are parsed, and no two
files of the project may import each other, directly or through others. docs/architecture.md draws
the layers this keeps."""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("dpcov", "mechanisms", "data", "experiments", "figures", "audits", "scripts")
# Layers, bottom up: a file may import only from its own layer or below (scripts/run.py on top).
LAYERS = [("data", "mechanisms"), ("experiments", "audits"), ("figures",), ("dpcov",), ("scripts", "run")]


def project_files() -> list[Path]:
    files = [ROOT / "run.py"]
    for package in PACKAGES:
        files += sorted((ROOT / package).rglob("*.py")) if (ROOT / package).is_dir() else []
    return files


SUBPACKAGES = ("mechanisms", "data", "experiments", "figures", "audits")  # installed as dpcov.<folder>


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if parts and parts[0] in SUBPACKAGES:
        parts = ["dpcov", *parts]
    return ".".join(parts)


def resolve(module: str, files: dict[str, Path], roots=("",)) -> Path | None:
    """The project file a dotted module name loads (None: outside the project)."""
    for root in roots:
        name = f"{root}.{module}" if root else module
        if name in files:
            return files[name]
    return None


def imported_modules(path: Path, files: dict[str, Path]) -> list[tuple[str, int, bool]]:
    """(module, line, inside a function) of every import in ``path``; relative imports resolved;
    ``from package import name`` counts the submodule package.name when it is a file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = []

    def visit(node, local):
        for child in ast.iter_child_nodes(node):
            inner = local or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend((alias.name, child.lineno, local) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".") if package else []
                    anchor = anchor[:len(anchor) - (child.level - 1)] if child.level > 1 else anchor
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in child.names:
                    sub = f"{base}.{alias.name}" if base else alias.name
                    found.append((sub if sub in files else base, child.lineno, local))
            visit(child, inner)

    visit(tree, False)
    return found


def import_graph() -> tuple[dict[tuple[str, str], int], list[tuple[str, str, int]]]:
    """File -> file edges ({(importer, imported): line}), and the function-local imports of project modules."""
    paths = project_files()
    files = {module_name(p): p for p in paths}
    edges, local_imports = {}, []
    for path in paths:
        here = str(path.relative_to(ROOT))
        roots = ("", "scripts") if path.parent.name == "scripts" else ("",)  # scripts put scripts/ on sys.path
        for module, line, local in imported_modules(path, files):
            target = resolve(module, files, roots)
            if target is None or target == path:
                continue
            there = str(target.relative_to(ROOT))
            edges.setdefault((here, there), line)
            if local:
                local_imports.append((here, there, line))
    return edges, local_imports


def cycles(edges: dict) -> list[list[str]]:
    """One cycle (a list of files, first repeated last) per strongly connected group of files."""
    nodes = sorted({f for edge in edges for f in edge})
    index = {f: i for i, f in enumerate(nodes)}
    rows, cols = zip(*[(index[a], index[b]) for a, b in edges]) if edges else ((), ())
    matrix = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(nodes), len(nodes)))
    _, labels = connected_components(matrix, directed=True, connection="strong")
    found = []
    for label in set(labels):
        group = {nodes[i] for i in np.flatnonzero(labels == label)}
        if len(group) < 2:
            continue
        start, path = min(group), [min(group)]
        while path[-1] != start or len(path) == 1:  # walk inside the group back to the start
            step = sorted(b for a, b in edges if a == path[-1] and b in group)
            nxt = start if start in step else next((b for b in step if b not in path), step[0])
            path.append(nxt)
            if len(path) > len(group) + 1:
                break
        found.append(path)
    return found


def layer(file: str) -> int:
    top = Path(file).parts[0].removesuffix(".py")
    return next(i for i, names in enumerate(LAYERS) if top in names)


def test_the_parser_sees_relative_and_function_local_imports():
    edges, _ = import_graph()
    assert ("experiments/runner.py", "experiments/instances.py") in edges  # from .instances import ...
    assert ("dpcov/commands/run.py", "figures/plot.py") in edges
    assert ("dpcov/commands/reproduce.py", "dpcov/commands/table.py") in edges
    assert ("run.py", "dpcov/commands/run.py") in edges
    assert cycles({("a", "b"): 1, ("b", "c"): 2, ("c", "a"): 3, ("c", "d"): 4}) == [["a", "b", "c", "a"]]


def test_no_import_cycle_between_files():
    edges, _ = import_graph()
    found = cycles(edges)
    described = [" -> ".join(f"{a} (line {edges.get((a, b), '?')})" for a, b in zip(c, c[1:])) + f" -> {c[0]}"
                 for c in found]
    assert not found, "import cycles:\n" + "\n".join(described)


def test_imports_only_go_down_the_layers():
    edges, _ = import_graph()
    upward = [f"{a}:{line} imports {b}" for (a, b), line in edges.items() if layer(b) > layer(a)]
    assert not upward, "imports that go up a layer:\n" + "\n".join(upward)


def test_no_project_import_is_tucked_into_a_function():
    """Function-local imports of the project's own modules hide the structure (and were how the one
    cycle hid): they must be at the top of the file. Third-party lazy imports are fine."""
    _, local_imports = import_graph()
    assert not local_imports, "\n".join(f"{a}:{line} imports {b} inside a function" for a, b, line in local_imports)


@pytest.mark.parametrize("edge", [("experiments/runner.py", "figures/plot.py"),
                                  ("experiments/theory.py", "experiments/runner.py")])
def test_the_old_cycle_is_gone(edge):
    edges, _ = import_graph()
    assert edge not in edges


def test_the_suite_folders_are_imported_as_dpcov_subpackages():
    """One installed name: code, tests and docs import dpcov.mechanisms, never a top-level mechanisms (which a
    user's own mechanisms.py or data.py would shadow)."""
    files = {module_name(p): p for p in project_files()}
    sources = project_files() + sorted((ROOT / "tests").rglob("*.py")) + sorted((ROOT / "docs").rglob("*.py"))
    bare = [f"{path.relative_to(ROOT)}:{line} imports {module}" for path in sources
            for module, line, _ in imported_modules(path, files) if module.split(".")[0] in SUBPACKAGES + ("conf",)]
    assert not bare, "\n".join(bare)
