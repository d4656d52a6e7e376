"""GOAT memory over MCP and agent hooks: ``goat serve`` and ``goat hook claude-code``.

- :func:`resolve_serve_scope`: the one scope a server or hook serves (``--pen``,
  ``--global``, or ``--from-dir`` resolved as ``goat scope`` does, with an optional pin).
- :class:`ServedScope`: the tools and resources of that scope, all through its
  :class:`~goat_core.host.MemoryContext` (the policy path).
- :func:`build_server`: the MCP server of a served scope (imports ``mcp`` when called).
- :func:`run_stdio`, :func:`run_http`: the two transports (``goat-core[serve]``).
- :func:`run_hook`: Claude Code's UserPromptSubmit hook; never imports ``mcp``.

Importing this package imports no ``mcp``: the hook and the doctor use it without the
``serve`` extra.
"""

import typing

from goat_core import _lazy

if typing.TYPE_CHECKING:
    from goat_core.serve._hook import HOOK_EVENT, HookResult, clear_hook_state, run_hook
    from goat_core.serve._scope import (
        PIN_ENV,
        ServeScope,
        bind_hint,
        parse_pin,
        resolve_serve_scope,
    )
    from goat_core.serve._server import PROTOCOL_VERSIONS, SCOPE_URI, build_server, page_uri
    from goat_core.serve._stdio import run_stdio
    from goat_core.serve._tools import ServedScope, ServedTool, ToolOutcome

#: Each name's module, imported on first use (:func:`goat_core._lazy.lazy_module`).
_LAZY = {
    "goat_core.serve._hook": (
        "HOOK_EVENT",
        "HookResult",
        "clear_hook_state",
        "run_hook",
    ),
    "goat_core.serve._scope": (
        "PIN_ENV",
        "ServeScope",
        "bind_hint",
        "parse_pin",
        "resolve_serve_scope",
    ),
    "goat_core.serve._server": (
        "PROTOCOL_VERSIONS",
        "SCOPE_URI",
        "build_server",
        "page_uri",
    ),
    "goat_core.serve._stdio": ("run_stdio",),
    "goat_core.serve._tools": (
        "ServedScope",
        "ServedTool",
        "ToolOutcome",
    ),
}
__getattr__, __dir__ = _lazy.lazy_module(__name__, _LAZY)

__all__ = [
    "HOOK_EVENT",
    "PIN_ENV",
    "PROTOCOL_VERSIONS",
    "SCOPE_URI",
    "HookResult",
    "ServeScope",
    "ServedScope",
    "ServedTool",
    "ToolOutcome",
    "bind_hint",
    "build_server",
    "clear_hook_state",
    "page_uri",
    "parse_pin",
    "resolve_serve_scope",
    "run_hook",
    "run_stdio",
]
