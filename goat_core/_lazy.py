"""Package namespaces whose names import their module on first use (PEP 562).

A package ``__init__`` lists each re-exported name under its module and imports them for
type checkers only; ``import goat_core`` then costs nothing until a name is used, so the
``goat`` command can answer through a running server without importing pydantic. The
rule's test is tests/test_lazy_namespaces.py.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_module(
    package: str, table: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: ``table`` maps a module's full
    name to the names it gives. A name is imported once and then kept in the package's
    namespace; an unknown name raises :class:`AttributeError`, as a module does."""
    where = {name: module for module, names in table.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where})

    return __getattr__, __dir__
