"""The source tree keeps the shape docs/architecture.md describes (issue 24).

Four checks, each read from the source with ``ast`` (nothing is imported):

- no file in ``src/`` is over 600 lines (docstrings and doctests count: they are read too);
- the modules of ``src/threadline`` import one another without a cycle, counting every
  import — top-level, under ``if TYPE_CHECKING:`` and inside functions — because a lazy
  import that closes a loop is a loop a reader has to keep in mind;
- the edge packages (``server``, ``client``, ``cli``, ``integrations``) import public modules,
  their own package's private modules and :mod:`threadline.internal`; never another package's
  underscore name or private module;
- docs/architecture.md names every package and top-level module.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
PACKAGE = SRC / "threadline"
MAX_LINES = 600
EDGES = ("threadline.server", "threadline.client", "threadline.cli", "threadline.integrations")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _package_of(module: str) -> str:
    return module if _is_package(module) else module.rpartition(".")[0]


@dataclass(frozen=True)
class Import:
    importer: str
    module: str  # the module named by the statement (resolved when relative)
    name: str | None  # the name taken from it by ``from module import name``
    line: int

    @property
    def target(self) -> str:
        """The module the import lands on: a submodule when ``name`` is one."""
        if self.name is not None and f"{self.module}.{self.name}" in MODULES:
            return f"{self.module}.{self.name}"
        return self.module


def _imports(module: str) -> Iterator[Import]:
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "threadline":
                    yield Import(module, alias.name, None, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = _package_of(module).split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            if base.split(".")[0] != "threadline":
                continue
            for alias in node.names:
                yield Import(module, base, alias.name, node.lineno)


ALL_IMPORTS = [imp for module in MODULES for imp in _imports(module)]


def test_the_walk_sees_the_tree() -> None:
    assert "threadline.session" in MODULES and "threadline.store" in MODULES
    assert any(imp.target == "threadline.errors" for imp in ALL_IMPORTS)


SOURCES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(SRC)))
def test_no_source_file_is_over_600_lines(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines; split it by concern"


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(edges.get(succ, ())))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_in_src() -> None:
    edges: dict[str, set[str]] = {module: set() for module in MODULES}
    for imp in ALL_IMPORTS:
        target = imp.target
        # ``import threadline.a.b`` runs every package on the way: the edge is to the module.
        if target in MODULES and target != imp.importer:
            edges[imp.importer].add(target)
    assert _cycles(edges) == []


def _private(module: str, name: str | None) -> bool:
    parts = module.split(".")
    if name is not None and f"{module}.{name}" in MODULES:
        parts.append(name)
        name = None
    dunder = name is not None and name.startswith("__") and name.endswith("__")
    return any(p.startswith("_") for p in parts) or (
        name is not None and name.startswith("_") and not dunder
    )


def _edge_package(module: str) -> str | None:
    for edge in EDGES:
        if module == edge or module.startswith(edge + "."):
            return edge
    return None


def test_edge_packages_use_no_other_packages_private_names() -> None:
    crossings = []
    for imp in ALL_IMPORTS:
        edge = _edge_package(imp.importer)
        if edge is None or _edge_package(imp.target) == edge:
            continue
        if _private(imp.module, imp.name):
            crossings.append(f"{imp.importer}:{imp.line} imports {imp.module} {imp.name or ''}")
    assert crossings == [], "use threadline.internal instead:\n" + "\n".join(crossings)


def test_privacy_rule_reads_names_and_paths() -> None:
    assert _private("threadline._state", "scope_of")
    assert _private("threadline.store", "_lazily")
    assert not _private("threadline.internal", "scope_of")
    assert not _private("threadline", "__version__")


def _documented_units() -> list[str]:
    """Every package and every top-level module, as docs/architecture.md names them."""
    units = []
    for module in MODULES:
        parts = module.split(".")
        if len(parts) == 2:
            units.append(parts[1] + ("/" if _is_package(module) else ".py"))
        elif len(parts) > 2 and _is_package(module):
            units.append("/".join(parts[1:]) + "/")
    return sorted(units)


def test_architecture_doc_names_every_package_and_top_level_module() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = []
    for unit in _documented_units():
        leaf = unit.rstrip("/").rsplit("/", 1)[-1]
        leaf = leaf if unit.endswith(".py") else leaf + "/"
        if unit not in doc and leaf not in doc:
            missing.append(unit)
    assert missing == [], f"docs/architecture.md does not mention: {missing}"


def test_architecture_doc_names_no_module_that_is_gone() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    tree = doc.split("```", 2)[1]  # the floor plan: the first fenced block
    paths = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")}
    named = {n for n in re.findall(r"[\w/]+\.py\b", tree) if not n.startswith("tests/")}
    gone = sorted(n for n in named if not any(p == n or p.endswith("/" + n) for p in paths))
    assert gone == [], f"docs/architecture.md names modules that do not exist: {gone}"
