"""Deprecated: ``goat_core.models`` is an old path; import from :mod:`goat_core.contract`
instead.

This module was the contract's value objects, before goat_core was laid out in packages. It re-
exports its old names unchanged and warns (``DeprecationWarning``) when imported.
"""

import warnings

from goat_core.contract import (
    PEN_ID_PATTERN,
    Binding,
    Capability,
    Connections,
    Consistency,
    CredentialSpec,
    Derivation,
    Edge,
    Health,
    HealthCause,
    Link,
    LinkMap,
    LinkResolution,
    MemoryWrite,
    Page,
    PageList,
    PageSummary,
    PluginInfo,
    PluginLoadFailure,
    ProviderSpec,
    RecallItem,
    RecallResult,
    Receipt,
    ReceiptStatus,
    Reflection,
    Scope,
    ScopeKind,
    ScopeRequest,
    ScopeResolution,
    Tone,
    credential_env_var,
    derive_pen_id,
    normalize_pen_id,
)

__all__ = [
    "PEN_ID_PATTERN",
    "Binding",
    "Capability",
    "Connections",
    "Consistency",
    "CredentialSpec",
    "Derivation",
    "Edge",
    "Health",
    "HealthCause",
    "Link",
    "LinkMap",
    "LinkResolution",
    "MemoryWrite",
    "Page",
    "PageList",
    "PageSummary",
    "PluginInfo",
    "PluginLoadFailure",
    "ProviderSpec",
    "RecallItem",
    "RecallResult",
    "Receipt",
    "ReceiptStatus",
    "Reflection",
    "Scope",
    "ScopeKind",
    "ScopeRequest",
    "ScopeResolution",
    "Tone",
    "credential_env_var",
    "derive_pen_id",
    "normalize_pen_id",
]

__deprecated__ = "goat_core.contract"

warnings.warn(
    "goat_core.models is deprecated; import from goat_core.contract instead",
    DeprecationWarning,
    stacklevel=2,
)
