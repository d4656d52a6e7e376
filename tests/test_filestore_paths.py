"""goat_core.filestore: its import paths (the package and its search index)."""

from __future__ import annotations

import inspect
import subprocess
import sys
from types import ModuleType

import pytest

import goat_core.filestore
import goat_core.filestore.search


@pytest.mark.parametrize("package", [goat_core.filestore, goat_core.filestore.search])
def test_package_all_is_exactly_its_public_names(package: ModuleType) -> None:
    public = {
        name
        for name, value in vars(package).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    lazy = set(getattr(package, "_LAZY", ()))  # loaded on first use (module __getattr__)
    assert set(package.__all__) == public | lazy
    assert all(getattr(package, name) is not None for name in lazy)
    assert len(package.__all__) == len(set(package.__all__))


def test_importing_the_toolkit_does_not_load_the_search_index() -> None:
    code = (
        "import sys, goat_core.filestore;"
        "print(sorted(m for m in ('sqlite3', 'yaml', 'goat_core.filestore.search')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
