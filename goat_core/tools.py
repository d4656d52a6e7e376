"""Deprecated: ``goat_core.tools`` is an old path; import from :mod:`goat_core.host` instead.

This module was part of the host before goat_core was laid out in packages (see
docs/architecture.md). It re-exports its old names unchanged and warns
(``DeprecationWarning``) when imported.
"""

import warnings

from goat_core.host import (
    FORBIDDEN_ARGUMENTS,
    CoreTool,
    ToolDefinition,
    ToolSet,
)
from goat_core.host._context import memory_tools

__all__ = [
    "FORBIDDEN_ARGUMENTS",
    "CoreTool",
    "ToolDefinition",
    "ToolSet",
    "memory_tools",
]

__deprecated__ = "goat_core.host"

warnings.warn(
    "goat_core.tools is deprecated; import from goat_core.host instead",
    DeprecationWarning,
    stacklevel=2,
)
