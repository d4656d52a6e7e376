"""The layout rules of docs/architecture.md, checked on the source.

- (function size is ruff's C901 and PLR0915, configured in pyproject.toml);
- the imports among the modules of goat_core and each plugin's ``src`` form no cycle: every
  import counts, at module level (``if TYPE_CHECKING:`` ones included) or inside a function;
- each public package has one ``__all__`` whose names all resolve, and private modules
  (``_name.py``) declare none;
- a plugin imports goat_core only through its public packages;
- each layer of goat_core imports only the layers the table of docs/architecture.md lists,
  the bottom module ``goat_core.fileio`` only the standard library, ``goat_core.errors`` and
  filelock, and a layer above filestore imports filestore only where it needs the folder store
  itself.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

PUBLIC_PACKAGES = [
    "goat_core",
    "goat_core.contract",
    "goat_core.plugins",
    "goat_core.filestore",
    "goat_core.filestore.search",
    "goat_core.cli",
    "goat_core.testing",
    "goat_core.host",  # checked once it is a package
]

#: The single public modules, each with its own ``__all__``.
PUBLIC_MODULES = ["goat_core.errors", "goat_core.fileio", "goat_core.hookspecs", "goat_core.logs"]

#: What a plugin's own code may import from goat_core.
PLUGIN_IMPORTS = frozenset(
    {
        "goat_core",
        "goat_core.contract",
        "goat_core.fileio",
        "goat_core.plugins",
        "goat_core.filestore",
        "goat_core.filestore.search",
        "goat_core.cli",
        "goat_core.testing",
        "goat_core.errors",
        "goat_core.hookspecs",
        "goat_core.logs",
    }
)


# -- the module graph -------------------------------------------------------------------------
def module_name(rel: str) -> str:
    """``goat_core/filestore/_files.py`` -> ``goat_core.filestore._files``; a package's
    ``__init__.py`` is the package."""
    parts = rel.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _module_level(body: Iterable[ast.stmt]) -> Iterable[ast.stmt]:
    """The statements run when the module is imported: the top level, and the bodies of
    top-level ``if`` (``TYPE_CHECKING`` included), ``try`` and ``with``; not functions or
    classes."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _module_level(node.body)
            yield from _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _module_level(block)
            for handler in node.handlers:
                yield from _module_level(handler.body)
        elif isinstance(node, ast.With):
            yield from _module_level(node.body)


def import_graph(sources: Mapping[str, str]) -> dict[str, set[str]]:
    """The import graph among ``sources`` (relative path -> source text): every import, at
    module level or inside a function. ``from a import b`` is an edge to the module ``a.b``
    if there is one, else to ``a``; the implicit import of parent packages is not an edge."""
    trees = {module_name(rel): ast.parse(text) for rel, text in sources.items()}
    packages = {module_name(rel) for rel in sources if rel.endswith("__init__.py")}
    modules = set(trees)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name in modules:
        for node in ast.walk(trees[name]):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = name if name in packages else name.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        here = here.rpartition(".")[0]
                    base = f"{here}.{base}" if base else here
                # ``from a import b``: the module ``a.b`` if there is one (``a`` is then only
                # its parent package), else a name defined in ``a``
                subs = [f"{base}.{alias.name}" for alias in node.names]
                targets = [sub if sub in trees else base for sub in subs]
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """One cycle (``[a, b, ..., a]``) for each strongly connected component with more than
    one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
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
            visit(v)

    found = []
    for component in components:
        start = min(component)
        # shortest way back to start inside the component (breadth first)
        paths = {start: [start]}
        queue = [start]
        cycle: list[str] | None = None
        while queue and cycle is None:
            v = queue.pop(0)
            for w in sorted(graph[v] & component):
                if w == start:
                    cycle = [*paths[v], start]
                    break
                if w not in paths:
                    paths[w] = [*paths[v], w]
                    queue.append(w)
        assert cycle is not None
        found.append(cycle)
    return sorted(found)


def _sources(root: Path, under: str) -> dict[str, str]:
    return {
        path.relative_to(root).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted((root / under).rglob("*.py"))
    }


def _plugin_sources() -> dict[str, str]:
    out: dict[str, str] = {}
    for src in sorted((REPO / "plugins").glob("*/src")):
        out.update(_sources(REPO, src.relative_to(REPO).as_posix()))
    return out


# -- (b) import cycles ------------------------------------------------------------------------
def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = import_graph(
        {
            "p/__init__.py": "",
            "p/a.py": "from p import b\n",
            "p/b.py": "import typing\nif typing.TYPE_CHECKING:\n    from p.c import X\n",
            "p/c.py": "def f():\n    from .a import Y\n",
        }
    )
    assert graph["p.c"] == {"p.a"}  # an import inside a function is an edge too
    assert cycles(graph) == [["p.a", "p.b", "p.c", "p.a"]]


def _tree_sources() -> dict[str, str]:
    """goat_core and every plugin's package, each by its import path."""
    out = _sources(REPO, "goat_core")
    for rel, text in _plugin_sources().items():
        out[rel.split("/src/", 1)[1]] = text
    return out


def test_the_tree_has_no_import_cycle() -> None:
    found = cycles(import_graph(_tree_sources()))
    assert not found, "import cycles: " + "; ".join(" -> ".join(c) for c in found)


# -- (c) public packages and __all__ ----------------------------------------------------------
def _all_assignments(tree: ast.Module) -> int:
    return sum(
        1
        for node in _module_level(tree.body)
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
        )
        or (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == "__all__"
        )
    )


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_public_package_has_one_all_and_every_name_resolves(package: str) -> None:
    init = REPO / package.replace(".", "/") / "__init__.py"
    if not init.is_file():
        pytest.skip(f"{package} is not a package yet")
    assert _all_assignments(ast.parse(init.read_text(encoding="utf-8"))) == 1
    module = importlib.import_module(package)
    names = module.__all__
    assert len(names) == len(set(names)), f"{package}.__all__ repeats a name"
    missing = [name for name in names if getattr(module, name, None) is None]
    assert not missing, f"{package}.__all__ names what it does not define: {missing}"


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_public_module_has_one_all_and_every_name_resolves(module: str) -> None:
    path = REPO / (module.replace(".", "/") + ".py")
    assert _all_assignments(ast.parse(path.read_text(encoding="utf-8"))) == 1
    names = importlib.import_module(module).__all__
    assert len(names) == len(set(names)), f"{module}.__all__ repeats a name"
    missing = [name for name in names if not hasattr(importlib.import_module(module), name)]
    assert not missing, f"{module}.__all__ names what it does not define: {missing}"


def test_private_modules_declare_no_all() -> None:
    offenders = [
        rel
        for rel, text in _sources(REPO, "goat_core").items()
        if Path(rel).name.startswith("_")
        and not Path(rel).name.startswith("__")
        and _all_assignments(ast.parse(text))
    ]
    assert not offenders, f"private modules with an __all__: {offenders}"


# -- (d) what plugins import ------------------------------------------------------------------
def _goat_core_imports(tree: ast.Module) -> Iterable[tuple[int, str]]:
    """``(line, module)`` of every import of goat_core, anywhere in the module; ``from a
    import b`` names ``a.b`` when ``b`` is a module of goat_core."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "goat_core":
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] != "goat_core":
                continue
            yield node.lineno, node.module
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                if (REPO / sub.replace(".", "/")).is_dir() or (
                    REPO / (sub.replace(".", "/") + ".py")
                ).is_file():
                    yield node.lineno, sub


def test_plugins_import_goat_core_only_through_public_packages() -> None:
    offenders = [
        f"{rel}:{line} imports {name}"
        for rel, text in _plugin_sources().items()
        for line, name in _goat_core_imports(ast.parse(text))
        if name not in PLUGIN_IMPORTS
    ]
    assert not offenders, "\n".join(offenders)


#: Plugin tests that test goat_core's own internals with a plugin's data, and why.
PRIVATE_IMPORTS_ALLOWED = {
    # goat_core's fetch path needs goat-embed's pinned weights (the seeded cache) to serve
    "plugins/embed/tests/test_fetch.py": "the fetch internals of goat embedders fetch",
}


def test_plugin_tests_import_no_private_goat_core_module() -> None:
    offenders = []
    for tests in sorted((REPO / "plugins").glob("*/tests")):
        for rel, text in _sources(REPO, tests.relative_to(REPO).as_posix()).items():
            if rel in PRIVATE_IMPORTS_ALLOWED:
                continue
            for line, name in _goat_core_imports(ast.parse(text)):
                if any(part.startswith("_") for part in name.split(".")):
                    offenders.append(f"{rel}:{line} imports {name}")
    assert not offenders, "\n".join(offenders)


# -- (e) layers ------------------------------------------------------------------------------
#: What every layer may import: the bottom of docs/architecture.md's picture.
BOTTOM = frozenset({"errors", "fileio", "logs", "_version", "_lazy"})

#: Each layer of goat_core (a top-level module or package; ``__init__`` is the facade) and the
#: layers it may import besides the bottom and itself: docs/architecture.md, the table.
LAYERS: dict[str, frozenset[str]] = {
    "errors": frozenset(),
    "fileio": frozenset(),
    "logs": frozenset(),
    "_version": frozenset(),
    "_lazy": frozenset(),
    "contract": frozenset(),
    "hookspecs": frozenset({"contract"}),
    "scope": frozenset({"contract"}),
    "plugins": frozenset({"contract", "hookspecs", "scope"}),
    "filestore": frozenset({"contract"}),
    "host": frozenset({"contract", "hookspecs", "plugins", "scope", "filestore"}),
    "serve": frozenset({"contract", "host", "plugins", "scope"}),
    "cli": frozenset({"contract", "filestore", "host", "plugins", "scope", "serve"}),
    "testing": frozenset({"contract", "hookspecs", "host", "plugins"}),
    "__init__": frozenset({"contract", "filestore", "hookspecs", "plugins"}),
}

#: The modules above filestore that import it, and what of the folder store each needs; file
#: I/O alone comes from goat_core.fileio.
FILESTORE_USERS = {
    "goat_core": "the facade re-exports StoreWorker",
    "goat_core.cli._maphtml": "the Obsidian link parser, for the map",
    "goat_core.host._okf": "frontmatter parsing and rendering of OKF bundle notes",
}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_module_of_goat_core_has_a_layer() -> None:
    unknown = sorted({_layer(m) for m in import_graph(_sources(REPO, "goat_core"))} - set(LAYERS))
    assert not unknown, f"layers missing from LAYERS (and docs/architecture.md): {unknown}"


def test_each_layer_imports_only_the_layers_below_it() -> None:
    offenders = [
        f"{module} imports {target}"
        for module, targets in sorted(import_graph(_sources(REPO, "goat_core")).items())
        for target in sorted(targets)
        if _layer(target) != _layer(module)
        and _layer(target) not in BOTTOM | LAYERS.get(_layer(module), frozenset())
    ]
    assert not offenders, "\n".join(offenders)


def test_the_bottom_module_fileio_imports_only_the_stdlib_errors_and_filelock() -> None:
    import sys

    tree = ast.parse((REPO / "goat_core" / "fileio.py").read_text(encoding="utf-8"))
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and not node.level
    }
    allowed = {"goat_core.errors", "filelock"}
    outside = sorted(
        name
        for name in imported
        if name not in allowed and name.split(".")[0] not in sys.stdlib_module_names
    )
    assert not outside, f"goat_core.fileio imports {outside}"


def test_above_filestore_only_the_folder_store_users_import_it() -> None:
    graph = import_graph(_sources(REPO, "goat_core"))
    users = {
        module
        for module, targets in graph.items()
        if _layer(module) != "filestore" and any(_layer(t) == "filestore" for t in targets)
    }
    assert users == set(FILESTORE_USERS), (
        f"import file I/O from goat_core.fileio; new users: {sorted(users - set(FILESTORE_USERS))}"
        f", gone: {sorted(set(FILESTORE_USERS) - users)}"
    )


# -- citations --------------------------------------------------------------------------------
#: What a citation of a document outside the repository, or of issue text, looks like. Cite
#: ``docs/design.md, <Section>`` instead. ``shared/data/...`` is where the test vault is looked
#: up, not a citation.
OUTSIDE_CITATIONS = re.compile(
    r"\bDESIGN\b"  # DESIGN section N, DESIGN.md
    r"|\bSTYLE section"
    r"|\bshared/(?!data/)[A-Za-z]"  # shared/research, shared/hindsight ...
    r"|\b[Ii]ssues?\s+(?:\d|#\d|items?\b|\")"  # issue 6, issue #6, issue item 3, issue "X"
)


def test_docstrings_cite_only_files_in_the_repository() -> None:
    files = [*(REPO / "goat_core").rglob("*.py"), *(REPO / "tests").rglob("*.py")]
    for plugin in sorted((REPO / "plugins").iterdir()):
        for sub in ("src", "tests", "benchmarks"):
            files.extend((plugin / sub).rglob("*.py"))
    offenders = []
    for file in sorted(files):
        rel = file.relative_to(REPO).as_posix()
        if rel == "tests/test_architecture.py":
            continue
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
            if OUTSIDE_CITATIONS.search(line):
                offenders.append(f"{rel}:{number}: {line.strip()}")
    assert not offenders, "cite docs/design.md, <Section> instead:\n" + "\n".join(offenders)
