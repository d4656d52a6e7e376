"""The provider conformance suite: :class:`ProviderConformanceTests` and its helpers."""

from goat_core.testing.conformance.base import (
    ConformanceBase,
    ProviderFactory,
    StoreSet,
    eventually,
    find,
    spec_factory,
    token,
)
from goat_core.testing.conformance.faults import (
    Fault,
    FaultInjector,
    FolderFaults,
    filesystem_fault,
)
from goat_core.testing.conformance.faulttests import FaultInjectionTests
from goat_core.testing.conformance.folder import FolderStoreConformanceTests
from goat_core.testing.conformance.guards import LAG_BOUND_S
from goat_core.testing.conformance.secrets import closing_server, refused_url
from goat_core.testing.conformance.suite import (
    BAD_PEN_IDS,
    QUERY_SYNTAX_CASES,
    ProviderConformanceTests,
    contract_violations,
)
from goat_core.testing.conformance.truth import LOOKALIKE_PEN_IDS

__all__ = [
    "BAD_PEN_IDS",
    "LAG_BOUND_S",
    "LOOKALIKE_PEN_IDS",
    "QUERY_SYNTAX_CASES",
    "ConformanceBase",
    "Fault",
    "FaultInjectionTests",
    "FaultInjector",
    "FolderFaults",
    "FolderStoreConformanceTests",
    "ProviderConformanceTests",
    "ProviderFactory",
    "StoreSet",
    "closing_server",
    "contract_violations",
    "eventually",
    "filesystem_fault",
    "find",
    "refused_url",
    "spec_factory",
    "token",
]
