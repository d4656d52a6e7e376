"""The old flat import paths of goat_core (docs/architecture.md, Old flat paths).

Each old module is a deprecated re-export: importing it warns once (``DeprecationWarning``)
naming the new path, and every name in its ``__all__`` is the very object at that path, so a
third-party provider written against the old paths still loads and passes. Nothing inside the
repository imports an old path any more.

The host's old modules (``goat_core.tools``, ``.home``, ``.config``, ``.credentials``,
``.egress``, ``.supervisor``) are checked once they have become deprecated re-exports of
``goat_core.host``; until then their case is skipped.
"""

from __future__ import annotations

import ast
import importlib
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class OldPath:
    old: str
    new: str
    #: a host module: checked only once it is a deprecated re-export (the host move)
    pending: bool = False


OLD_PATHS = [
    OldPath("goat_core.models", "goat_core.contract"),
    OldPath("goat_core.provider", "goat_core.contract"),
    OldPath("goat_core.search", "goat_core.filestore.search"),
    OldPath("goat_core.pages", "goat_core.filestore"),
    OldPath("goat_core.files", "goat_core.filestore"),
    OldPath("goat_core.frontmatter", "goat_core.filestore"),
    OldPath("goat_core.links", "goat_core.filestore"),
    OldPath("goat_core.manager", "goat_core.plugins"),
    OldPath("goat_core.registry", "goat_core.plugins"),
    OldPath("goat_core.maphtml", "goat_core.cli._maphtml"),
    OldPath("goat_core.default_plugins", "goat_core.plugins.builtin"),
    OldPath("goat_core.default_plugins.scope", "goat_core.plugins.builtin._scope"),
    OldPath("goat_core.default_plugins.egress", "goat_core.plugins.builtin._egress"),
    OldPath("goat_core.tools", "goat_core.host"),
    OldPath("goat_core.home", "goat_core.host"),
    OldPath("goat_core.config", "goat_core.host._config"),
    OldPath("goat_core.credentials", "goat_core.host._credentials"),
    OldPath("goat_core.egress", "goat_core.host._egress"),
    OldPath("goat_core.supervisor", "goat_core.host._supervisor"),
]

#: Modules that still import old paths until the host move lands (then this list is empty).
HOST_MODULES_NOT_YET_MOVED: frozenset[str] = frozenset()

# StoreWorker moved to the filestore toolkit, not to the contract
_ELSEWHERE = {("goat_core.provider", "StoreWorker"): "goat_core.filestore"}


def _fresh_import(name: str) -> tuple[ModuleType, list[warnings.WarningMessage]]:
    """Import ``name`` as if for the first time and record its warnings; the module object
    the rest of the session uses is put back afterwards (a real module imported twice would
    give two copies of its classes)."""
    parent_name, _, child = name.rpartition(".")
    parent = importlib.import_module(parent_name)
    saved = sys.modules.pop(name, None)
    saved_attr = getattr(parent, child, None)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module = importlib.import_module(name)
    finally:
        if saved is not None:
            sys.modules[name] = saved
            setattr(parent, child, saved_attr if saved_attr is not None else saved)
    return module, caught


def _deprecations(caught: list[warnings.WarningMessage], old: str) -> list[str]:
    return [
        str(w.message)
        for w in caught
        if issubclass(w.category, DeprecationWarning) and str(w.message).startswith(old + " ")
    ]


@pytest.mark.parametrize("path", OLD_PATHS, ids=lambda p: p.old)
def test_old_path_warns_and_reexports_the_same_objects(path: OldPath) -> None:
    module, caught = _fresh_import(path.old)
    warned = _deprecations(caught, path.old)
    if path.pending and (not hasattr(module, "__deprecated__") or not warned):
        pytest.skip(f"{path.old} is not a deprecated re-export yet (the host move)")
    assert len(warned) == 1, f"importing {path.old} should warn once, got {warned}"
    assert path.new in warned[0], f"the warning should name {path.new}: {warned[0]!r}"
    assert module.__deprecated__ == path.new
    assert module.__doc__ and module.__doc__.startswith("Deprecated:")
    names = module.__all__
    assert isinstance(names, list)
    for name in names:
        new = importlib.import_module(_ELSEWHERE.get((path.old, name), path.new))
        assert getattr(module, name) is getattr(new, name), f"{path.old}.{name}"


def test_every_deprecated_module_is_listed() -> None:
    """A module that declares ``__deprecated__`` is one of :data:`OLD_PATHS`."""
    listed = {p.old for p in OLD_PATHS}
    found = set()
    for file in (REPO / "goat_core").rglob("*.py"):
        tree = ast.parse(file.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__deprecated__" for t in node.targets
            ):
                rel = file.relative_to(REPO).with_suffix("")
                parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
                found.add(".".join(parts))
    assert found <= listed, f"deprecated modules missing from OLD_PATHS: {found - listed}"
    assert {p.old for p in OLD_PATHS if not p.pending} <= found


def _imported_modules(tree: ast.Module) -> set[str]:
    """Every module an ``import`` anywhere in ``tree`` names (``from a import b`` names
    ``a`` and ``a.b``)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{alias.name}" for alias in node.names)
    return out


def _source_files() -> list[Path]:
    files = [*(REPO / "goat_core").rglob("*.py")]
    for plugin in (REPO / "plugins").iterdir():
        for sub in ("src", "tests", "benchmarks"):
            if (plugin / sub).is_dir():
                files.extend((plugin / sub).rglob("*.py"))
    files.extend((REPO / "tests").rglob("*.py"))
    files.extend((REPO / "benchmarks").rglob("*.py"))
    return files


def test_nothing_in_the_repository_imports_an_old_path() -> None:
    old = {p.old for p in OLD_PATHS if not p.pending}
    # the host modules, once they are re-exports (their old paths then must not be imported)
    for p in OLD_PATHS:
        if p.pending:
            module = sys.modules.get(p.old) or importlib.import_module(p.old)
            if hasattr(module, "__deprecated__"):
                old.add(p.old)
    exempt = {
        *HOST_MODULES_NOT_YET_MOVED,
        "tests/test_deprecated_paths.py",
        # these import the old paths on purpose, to test them
        "tests/test_exports.py",
        "tests/test_filestore_paths.py",
    }
    offenders = []
    for file in _source_files():
        rel = file.relative_to(REPO).as_posix()
        if rel in exempt or ".venv" in file.parts:
            continue
        module_name = ".".join(file.relative_to(REPO).with_suffix("").parts)
        if module_name.removesuffix(".__init__") in old:
            continue  # an old module itself
        tree = ast.parse(file.read_text(encoding="utf-8"))
        for name in sorted(_imported_modules(tree) & old):
            offenders.append(f"{rel} imports {name}")
    assert not offenders, "\n".join(offenders)
