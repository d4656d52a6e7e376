"""The public surface of goat_core: ``__all__`` is exactly what the package exposes."""

from __future__ import annotations

import importlib
import inspect

import pytest

import goat_core

MODULES = [
    "goat_core.errors",
    "goat_core.hookspecs",
    "goat_core.scope",
    "goat_core.contract",
    "goat_core.plugins",
    "goat_core.host",
    "goat_core.filestore",
    "goat_core.testing",
]


def test_all_equals_the_public_names_of_the_package() -> None:
    # the names are imported on first use (goat_core/_lazy.py): dir() lists them all
    public = {
        name
        for name in dir(goat_core)
        if not name.startswith("_") and not inspect.ismodule(getattr(goat_core, name))
    }
    assert set(goat_core.__all__) == public | {"__version__"}
    assert len(goat_core.__all__) == len(set(goat_core.__all__))


@pytest.mark.parametrize("name", goat_core.__all__)
def test_every_exported_name_resolves(name: str) -> None:
    assert getattr(goat_core, name) is not None


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("module", MODULES)
def test_submodule_all_names_resolve(module: str) -> None:
    mod = importlib.import_module(module)
    assert mod.__all__, f"{module} declares no __all__"
    for name in mod.__all__:
        assert hasattr(mod, name), f"{module}.__all__ lists missing {name!r}"


def test_package_reexports_are_the_defining_objects() -> None:
    from goat_core import contract, errors, hookspecs

    assert goat_core.hookimpl is hookspecs.hookimpl
    assert goat_core.Scope is contract.Scope
    assert goat_core.ScopeError is errors.ScopeError
    assert isinstance(goat_core.__version__, str) and goat_core.__version__
