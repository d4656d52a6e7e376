"""Import only the parts of the ``mcp`` SDK that serving needs (start-up time).

``import mcp.server.stdio`` first runs ``mcp/__init__.py``, which imports the whole client
(``Client``, ``ClientSession``, ``ClientSessionGroup``, the stdio client), and
``mcp/server/__init__.py``, which imports ``MCPServer`` (the high-level server) as well as
the low-level one. A stdio server needs none of that. On a 2-core machine ``goat serve
--pen x`` has answered ``initialize`` and ``tools/list`` over stdio after a median 866 ms
with :func:`lean_import` and 970 ms without it (40 runs each, interleaved; CPU time, 11 runs
each: 840 ms against 915 ms): start-up time decides whether a host's handshake window is
met.

:func:`lean_import` puts those two packages in ``sys.modules`` *uninitialised* (their
``__path__`` set, their ``__init__`` not yet run), so ``import mcp.server.lowlevel`` and
``import mcp.server.stdio`` load just those modules. The first time anything asks either
package for a name its ``__init__`` defines (``from mcp import Client``, ``mcp.types``), the
package's ``__init__`` runs then, in full (PEP 562 module ``__getattr__``), so code that
imports ``mcp`` later, a plugin's or a test's, sees the package it expects.

Nothing is done when ``mcp`` is already imported, or when the SDK is not laid out as
expected (then the ordinary import happens).
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

#: The packages whose ``__init__`` is deferred, parents first.
DEFERRED = ("mcp", "mcp.server")

_lock = threading.RLock()


def _completing(module: ModuleType, spec: Any) -> Callable[[str], Any]:
    """A module ``__getattr__`` that runs the package's ``__init__`` on first use."""

    def __getattr__(name: str) -> Any:  # PEP 562
        with _lock:
            if module.__dict__.get("__getattr__") is __getattr__:
                del module.__dict__["__getattr__"]
                spec.loader.exec_module(module)
        try:
            return module.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}") from None

    return __getattr__


def lean_import() -> bool:
    """Defer the ``__init__`` of :data:`DEFERRED` (see the module docstring).

    :returns: whether the packages are now deferred (``False``: ``mcp`` was already
        imported, or is not importable this way; the ordinary import then applies).
    """
    with _lock:
        if DEFERRED[0] in sys.modules:
            return False
        added: list[str] = []
        try:
            for name in DEFERRED:
                spec = importlib.util.find_spec(name)
                if spec is None or spec.loader is None or not spec.submodule_search_locations:
                    raise ImportError(f"{name} is not a package")
                module = importlib.util.module_from_spec(spec)
                module.__getattr__ = _completing(module, spec)  # type: ignore[method-assign]
                sys.modules[name] = module
                added.append(name)
                parent, _, child = name.rpartition(".")
                if parent:
                    setattr(sys.modules[parent], child, module)
        except (ImportError, ValueError, AttributeError):
            for name in added:
                sys.modules.pop(name, None)
            return False
        return True
