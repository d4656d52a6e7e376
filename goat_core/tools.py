"""Former home of the model-facing memory tools, now in :mod:`goat_core.host`: re-exports the names
this module had (import them from :mod:`goat_core.host`)."""

from goat_core.host._context import memory_tools
from goat_core.host._tools import (
    FORBIDDEN_ARGUMENTS,
    CoreTool,
    ToolDefinition,
    ToolSet,
)

__all__ = [
    "FORBIDDEN_ARGUMENTS",
    "CoreTool",
    "ToolDefinition",
    "ToolSet",
    "memory_tools",
]
