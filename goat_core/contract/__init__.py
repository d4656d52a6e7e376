"""The provider contract: scopes, what a provider declares and returns, and the base class.

Everything a provider author and a host share lives here, and nothing else: the contract
imports no host module (the host's ``GoatHome`` reaches a provider as a
:class:`ProviderHome`). The rules behind each name are in docs/design.md (Scopes; Bindings
and providers; Writes and outcomes; Reads and truth; Browsing and links; Remote providers
and the supervisor).
"""

import typing

from goat_core import _lazy

if typing.TYPE_CHECKING:
    from goat_core.contract._embedder import Embedder, EmbedderSpec, embedder_cache_dir
    from goat_core.contract._extras import Access, ModelTool, PolicyGate, ProviderOperation
    from goat_core.contract._health import Health, HealthCause, Tone
    from goat_core.contract._home import APP_NAME, PLATFORM_DEFAULT, GoatHome
    from goat_core.contract._penid import PEN_ID_PATTERN, derive_pen_id, normalize_pen_id
    from goat_core.contract._provider import (
        Provider,
        ProviderContext,
        ProviderHome,
        ProviderSpec,
    )
    from goat_core.contract._records import (
        Connections,
        Edge,
        Link,
        LinkMap,
        LinkResolution,
        MemoryWrite,
        Page,
        PageList,
        PageSummary,
        PluginInfo,
        PluginLoadFailure,
        RecallItem,
        RecallResult,
        Receipt,
        ReceiptStatus,
        Reflection,
    )
    from goat_core.contract._reranker import Reranker, RerankerSpec, reranker_cache_dir
    from goat_core.contract._scope import (
        Derivation,
        Scope,
        ScopeKind,
        ScopeRequest,
        ScopeResolution,
    )
    from goat_core.contract._spec import (
        Binding,
        Capability,
        Consistency,
        CredentialSpec,
        ProjectRecord,
        credential_env_var,
    )
    from goat_core.contract._transfer import (
        COPIED_FROM,
        IMPORT_OPERATION,
        IMPORTED_FROM,
        PROVENANCE_KEYS,
        TransferItem,
        TransferOutcome,
        TransferPage,
        TransferReport,
    )

#: Each name's module, imported on first use (:func:`goat_core._lazy.lazy_module`).
_LAZY = {
    "goat_core.contract._embedder": (
        "Embedder",
        "EmbedderSpec",
        "embedder_cache_dir",
    ),
    "goat_core.contract._extras": (
        "Access",
        "ModelTool",
        "PolicyGate",
        "ProviderOperation",
    ),
    "goat_core.contract._health": (
        "Health",
        "HealthCause",
        "Tone",
    ),
    "goat_core.contract._home": (
        "APP_NAME",
        "PLATFORM_DEFAULT",
        "GoatHome",
    ),
    "goat_core.contract._provider": (
        "Provider",
        "ProviderContext",
        "ProviderHome",
        "ProviderSpec",
    ),
    "goat_core.contract._records": (
        "Connections",
        "Edge",
        "Link",
        "LinkMap",
        "LinkResolution",
        "MemoryWrite",
        "Page",
        "PageList",
        "PageSummary",
        "PluginInfo",
        "PluginLoadFailure",
        "RecallItem",
        "RecallResult",
        "Receipt",
        "ReceiptStatus",
        "Reflection",
    ),
    "goat_core.contract._reranker": (
        "Reranker",
        "RerankerSpec",
        "reranker_cache_dir",
    ),
    "goat_core.contract._penid": (
        "PEN_ID_PATTERN",
        "derive_pen_id",
        "normalize_pen_id",
    ),
    "goat_core.contract._scope": (
        "Derivation",
        "Scope",
        "ScopeKind",
        "ScopeRequest",
        "ScopeResolution",
    ),
    "goat_core.contract._spec": (
        "Binding",
        "Capability",
        "Consistency",
        "CredentialSpec",
        "ProjectRecord",
        "credential_env_var",
    ),
    "goat_core.contract._transfer": (
        "COPIED_FROM",
        "IMPORT_OPERATION",
        "IMPORTED_FROM",
        "PROVENANCE_KEYS",
        "TransferItem",
        "TransferOutcome",
        "TransferPage",
        "TransferReport",
    ),
}
__getattr__, __dir__ = _lazy.lazy_module(__name__, _LAZY)

__all__ = [
    "APP_NAME",
    "COPIED_FROM",
    "IMPORTED_FROM",
    "IMPORT_OPERATION",
    "PEN_ID_PATTERN",
    "PLATFORM_DEFAULT",
    "PROVENANCE_KEYS",
    "Access",
    "Binding",
    "Capability",
    "Connections",
    "Consistency",
    "CredentialSpec",
    "Derivation",
    "Edge",
    "Embedder",
    "EmbedderSpec",
    "GoatHome",
    "Health",
    "HealthCause",
    "Link",
    "LinkMap",
    "LinkResolution",
    "MemoryWrite",
    "ModelTool",
    "Page",
    "PageList",
    "PageSummary",
    "PluginInfo",
    "PluginLoadFailure",
    "PolicyGate",
    "ProjectRecord",
    "Provider",
    "ProviderContext",
    "ProviderHome",
    "ProviderOperation",
    "ProviderSpec",
    "RecallItem",
    "RecallResult",
    "Receipt",
    "ReceiptStatus",
    "Reflection",
    "Reranker",
    "RerankerSpec",
    "Scope",
    "ScopeKind",
    "ScopeRequest",
    "ScopeResolution",
    "Tone",
    "TransferItem",
    "TransferOutcome",
    "TransferPage",
    "TransferReport",
    "credential_env_var",
    "derive_pen_id",
    "embedder_cache_dir",
    "normalize_pen_id",
    "reranker_cache_dir",
]
