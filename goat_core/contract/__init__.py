"""The provider contract: scopes, what a provider declares and returns, and the base class.

Everything a provider author and a host share lives here, and nothing else: the contract
imports no host module (the host's ``GoatHome`` reaches a provider as a
:class:`ProviderHome`). The rules behind each name are in docs/design.md (Scopes; Bindings
and providers; Writes and outcomes; Reads and truth; Browsing and links; Remote providers
and the supervisor).
"""

from goat_core.contract._embedder import Embedder, EmbedderSpec, embedder_cache_dir
from goat_core.contract._extras import Access, ModelTool, PolicyGate, ProviderOperation
from goat_core.contract._health import Health, HealthCause, Tone
from goat_core.contract._home import APP_NAME, PLATFORM_DEFAULT, GoatHome
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
    PEN_ID_PATTERN,
    Derivation,
    Scope,
    ScopeKind,
    ScopeRequest,
    ScopeResolution,
    derive_pen_id,
    normalize_pen_id,
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
