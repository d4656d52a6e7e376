"""The host: GOAT's scope rules over the provider plugins (docs/design.md, Scopes).

A host (the ``goat`` CLI, a chat app, an MCP server) asks a :class:`MemoryHost` for the
:class:`MemoryContext` of one :class:`Chat`; a context serves exactly one scope and its one
selected binding. :class:`SyncMemoryHost` runs the same API for synchronous callers.

Also here: the model-facing tools of a context (:func:`memory_tools`, :class:`ToolSet`),
GOAT's directories (:class:`GoatHome`), ``memory.json`` (:class:`Config`), the credential
store, the egress guard of remote providers and their connection :class:`Supervisor`.
The modules behind this package are private; import from ``goat_core.host``. Each name is
imported on first use (:func:`goat_core._lazy.lazy_module`), so ``GoatHome`` alone costs no
pydantic model.
"""

from __future__ import annotations

import typing

from goat_core import _lazy

if typing.TYPE_CHECKING:
    from goat_core.contract._home import APP_NAME, GoatHome
    from goat_core.host._config import Config, load_config, save_config
    from goat_core.host._connect import Endpoint, GuardedConnect
    from goat_core.host._context import MemoryContext, memory_tools
    from goat_core.host._credentials import CredentialStore
    from goat_core.host._egress import EGRESS_HEADER, check_egress, guarded_http_client
    from goat_core.host._egress_audit import canonical_host
    from goat_core.host._memoryhost import MemoryHost
    from goat_core.host._records import (
        DEFAULT_BINDING_ID,
        EMBEDDED_DEFAULT_PROVIDER,
        BindingStatus,
        BindOutcome,
        Chat,
        scope_label,
    )
    from goat_core.host._supervisor import Clock, RetryPolicy, SessionState, SlotStatus, Supervisor
    from goat_core.host._sync import SyncMemoryContext, SyncMemoryHost
    from goat_core.host._tools import FORBIDDEN_ARGUMENTS, CoreTool, ToolDefinition, ToolSet
    from goat_core.host._trivial import TRIVIAL_PROMPTS, is_trivial_prompt
    from goat_core.host._turn import TurnMemory, format_memory_block, turn_item_key

#: Each name's module, imported on first use (:func:`goat_core._lazy.lazy_module`).
_LAZY = {
    "goat_core.contract._home": (
        "APP_NAME",
        "GoatHome",
    ),
    "goat_core.host._config": (
        "Config",
        "load_config",
        "save_config",
    ),
    "goat_core.host._connect": (
        "Endpoint",
        "GuardedConnect",
    ),
    "goat_core.host._context": (
        "MemoryContext",
        "memory_tools",
    ),
    "goat_core.host._credentials": ("CredentialStore",),
    "goat_core.host._egress": (
        "EGRESS_HEADER",
        "check_egress",
        "guarded_http_client",
    ),
    "goat_core.host._egress_audit": ("canonical_host",),
    "goat_core.host._memoryhost": ("MemoryHost",),
    "goat_core.host._records": (
        "DEFAULT_BINDING_ID",
        "EMBEDDED_DEFAULT_PROVIDER",
        "BindingStatus",
        "BindOutcome",
        "Chat",
        "scope_label",
    ),
    "goat_core.host._supervisor": (
        "Clock",
        "RetryPolicy",
        "SessionState",
        "SlotStatus",
        "Supervisor",
    ),
    "goat_core.host._sync": (
        "SyncMemoryContext",
        "SyncMemoryHost",
    ),
    "goat_core.host._tools": (
        "FORBIDDEN_ARGUMENTS",
        "CoreTool",
        "ToolDefinition",
        "ToolSet",
    ),
    "goat_core.host._trivial": ("TRIVIAL_PROMPTS", "is_trivial_prompt"),
    "goat_core.host._turn": ("TurnMemory", "format_memory_block", "turn_item_key"),
}
__getattr__, __dir__ = _lazy.lazy_module(__name__, _LAZY)

__all__ = [
    "APP_NAME",
    "DEFAULT_BINDING_ID",
    "EGRESS_HEADER",
    "EMBEDDED_DEFAULT_PROVIDER",
    "FORBIDDEN_ARGUMENTS",
    "TRIVIAL_PROMPTS",
    "BindOutcome",
    "BindingStatus",
    "Chat",
    "Clock",
    "Config",
    "CoreTool",
    "CredentialStore",
    "Endpoint",
    "GoatHome",
    "GuardedConnect",
    "MemoryContext",
    "MemoryHost",
    "RetryPolicy",
    "SessionState",
    "SlotStatus",
    "Supervisor",
    "SyncMemoryContext",
    "SyncMemoryHost",
    "ToolDefinition",
    "ToolSet",
    "TurnMemory",
    "canonical_host",
    "check_egress",
    "format_memory_block",
    "guarded_http_client",
    "is_trivial_prompt",
    "load_config",
    "memory_tools",
    "save_config",
    "scope_label",
    "turn_item_key",
]
