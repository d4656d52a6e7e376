"""The lazy package namespaces of goat_core/_lazy.py: each package's table gives exactly the
names its type-checking imports give, every name resolves to its module's object, and
importing the packages imports no pydantic, structlog or click."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LAZY_PACKAGES = ["goat_core", "goat_core.contract", "goat_core.serve", "goat_core.cli"]


def _type_checking_imports(package: str) -> dict[str, set[str]]:
    """``module -> names`` of the ``from M import ...`` lines under ``if TYPE_CHECKING:``."""
    path = REPO / Path(*package.split(".")) / "__init__.py"
    out: dict[str, set[str]] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "typing.TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.module, ast.unparse(stmt)
                out.setdefault(stmt.module, set()).update(a.name for a in stmt.names)
    return out


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_the_table_names_what_the_type_checking_imports_name(package: str) -> None:
    module = importlib.import_module(package)
    table = {m: set(names) for m, names in module._LAZY.items()}
    assert table == _type_checking_imports(package)


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_name_is_its_modules_object(package: str) -> None:
    module = importlib.import_module(package)
    for source, names in module._LAZY.items():
        defining = importlib.import_module(source)
        for name in names:
            assert getattr(module, name) is getattr(defining, name), f"{package}.{name}"
            assert name in dir(module)


def test_an_unknown_name_is_an_attribute_error() -> None:
    import goat_core

    with pytest.raises(AttributeError, match="has no attribute 'NoSuchName'"):
        goat_core.NoSuchName  # noqa: B018
    assert not hasattr(goat_core, "NoSuchName")


def test_importing_the_packages_imports_no_heavy_library() -> None:
    code = (
        "import sys\n"
        + "".join(f"import {p}\n" for p in LAZY_PACKAGES)
        + "import goat_core.contract._home, goat_core.contract._penid, goat_core.serve._local\n"
        + "print(sorted(m for m in ('pydantic', 'structlog', 'click', 'mcp', 'anyio')"
        + " if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip() == "[]", out.stdout
