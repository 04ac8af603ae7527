"""The packages' shape, read from their source with ast (no import, no Dagster needed): no
import cycles, no private names imported across modules, no two modules sharing a
basename, no folder over 15 modules, no Dagster in the crawler core, the pipeline layer, the
storage layer or the demo web, and the layers importing downwards only (the command line
from nothing, the sensors from definitions.py alone)."""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from crawl_assets.crawler.settings import PROJECT_ROOT

PACKAGE = PROJECT_ROOT / "crawl_assets"
DAGSTER_FREE = ("crawl_assets.crawler", "crawl_assets.pipeline", "crawl_assets.storage")
# A folder a reader takes in at a glance: 15 modules and its __init__.py.
MOST_FILES_A_FOLDER = 16


@dataclass
class ImportGraph:
    modules: dict[str, Path] = field(default_factory=dict)  # dotted name -> file
    edges: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # within the package
    private: list[str] = field(default_factory=list)  # "a imports _x from b"
    external: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # module -> top-level names


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def read_graph(root: Path) -> ImportGraph:
    graph = ImportGraph()
    for path in sorted(root.rglob("*.py")):
        graph.modules[module_name(path, root)] = path
    for name, path in graph.modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    _add(graph, name, alias.name, [])
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: from the module's package, one level up per extra dot
                    package = name.split(".") if is_package else name.split(".")[:-1]
                    package = package[:len(package) - (node.level - 1)]
                    target = ".".join(package + ([node.module] if node.module else []))
                else:
                    target = node.module
                _add(graph, name, target, [a.name for a in node.names])
    return graph


def _add(graph: ImportGraph, importer: str, target: str, names: list[str]) -> None:
    if target.split(".")[0] != importer.split(".")[0]:
        graph.external[importer].add(target.split(".")[0])
        return
    for imported in names:
        if f"{target}.{imported}" in graph.modules:  # `from pkg import module`
            graph.edges[importer].add(f"{target}.{imported}")
        else:
            if target in graph.modules:
                graph.edges[importer].add(target)
            if imported.startswith("_") and not imported.startswith("__"):
                graph.private.append(f"{importer} imports {imported} from {target}")
    if not names and target in graph.modules:
        graph.edges[importer].add(target)


def cycles(graph: ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (or a module importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph.edges.get(node, ()):
                found.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def shared_basenames(graph: ImportGraph) -> dict[str, list[str]]:
    by_name = defaultdict(list)
    for name, path in graph.modules.items():
        if path.name not in ("__init__.py", "__main__.py"):
            by_name[path.stem].append(name)
    return {base: sorted(names) for base, names in by_name.items() if len(names) > 1}


def dagster_imports(graph: ImportGraph, prefixes=DAGSTER_FREE) -> list[str]:
    return sorted(module for module, names in graph.external.items()
                  if module.startswith(prefixes) and any(n == "dagster" or n.startswith("dagster_") for n in names))


# -- the package ----------------------------------------------------------------------------

def crowded_folders(root: Path, most: int = MOST_FILES_A_FOLDER) -> dict[str, int]:
    """Folders of the package holding more than `most` modules, with their count."""
    counts = {folder: len(list(folder.glob("*.py"))) for folder in {path.parent for path in root.rglob("*.py")}}
    return {str(folder.relative_to(root.parent)): n for folder, n in sorted(counts.items()) if n > most}


# The project's packages: the product, the demo web beside it, the sensors.
PACKAGES = {name: read_graph(PROJECT_ROOT / name) for name in ("crawl_assets", "demoweb", "sensors")}
GRAPH = PACKAGES["crawl_assets"]


def test_the_walk_sees_the_package():
    assert len(GRAPH.modules) > 40
    assert "crawl_assets.crawler.settings" in GRAPH.edges["crawl_assets.crawler.batches.batch"]
    assert "crawl_assets.pipeline.frontier_step" in GRAPH.edges["crawl_assets.defs.assets.frontier"]
    assert "demoweb.web" in PACKAGES["demoweb"].edges["demoweb.server"]


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycles(package):
    assert cycles(PACKAGES[package]) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_private_names_imported_from_another_module(package):
    assert PACKAGES[package].private == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_two_modules_share_a_basename(package):
    assert shared_basenames(PACKAGES[package]) == {}


@pytest.mark.parametrize("package", PACKAGES)
def test_no_folder_holds_more_than_15_modules(package):
    assert crowded_folders(PROJECT_ROOT / package) == {}


def test_the_core_the_steps_and_the_storage_import_nothing_from_dagster():
    assert dagster_imports(GRAPH) == []
    assert dagster_imports(PACKAGES["demoweb"], ("demoweb",)) == []
    assert "crawl_assets.defs.assets.fetch" in dagster_imports(GRAPH, ("crawl_assets.defs.assets",))


def test_the_layers_import_downwards():
    """Nothing but the command line imports the command line (it drives the Dagster layer);
    only definitions.py imports the sensors (they import the Dagster layer); the core, the
    steps and the storage import nothing of the layers above them, and the core nothing of the
    steps."""
    above = ("crawl_assets.defs", "crawl_assets.cli", "crawl_assets.analyst", "crawl_assets.deployment",
             "crawl_assets.definitions")
    upward = {(module, target) for module, targets in GRAPH.edges.items() for target in targets
              if module.startswith(DAGSTER_FREE) and (target.startswith(above) or (
                  module.startswith("crawl_assets.crawler") and target.startswith("crawl_assets.pipeline")))}
    assert upward == set()
    into_cli = {module for module, targets in GRAPH.edges.items()
                if any(target.startswith("crawl_assets.cli") for target in targets)}
    assert all(module.startswith("crawl_assets.cli.") for module in into_cli), into_cli
    assert [module for module, names in GRAPH.external.items() if "sensors" in names] == ["crawl_assets.definitions"]
    sensors_import = {node.module for path in (PROJECT_ROOT / "sensors").glob("*.py")
                      for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                      if isinstance(node, ast.ImportFrom) and node.module}
    assert not any(name.startswith("crawl_assets.cli") for name in sensors_import), sensors_import


# -- the checks themselves, on a made-up package ------------------------------------------------


def write_package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


def test_the_checks_find_what_they_forbid(tmp_path):
    package = write_package(tmp_path, {
        "__init__.py": "",
        "core/__init__.py": "",
        "core/a.py": "from .b import thing\n",
        "core/b.py": "def f():\n    from . import a  # a lazy import still closes the cycle\n",
        "core/c.py": "from pkg.core.a import _hidden\nimport dagster\n",
        "web/__init__.py": "",
        "web/c.py": "from ..core import c\nfrom ..core.b import __doc__\n",
    })
    graph = read_graph(package)
    assert cycles(graph) == [["pkg.core.a", "pkg.core.b"]]
    assert graph.private == ["pkg.core.c imports _hidden from pkg.core.a"]
    assert shared_basenames(graph) == {"c": ["pkg.core.c", "pkg.web.c"]}
    assert dagster_imports(graph, ("pkg.core",)) == ["pkg.core.c"]
    assert "pkg.core.c" in graph.edges["pkg.web.c"]
    assert crowded_folders(package, most=3) == {"pkg/core": 4}
