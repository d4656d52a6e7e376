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
from goat_core.testing.conformance.suite import (
    BAD_PEN_IDS,
    QUERY_SYNTAX_CASES,
    ProviderConformanceTests,
    contract_violations,
)

__all__ = [
    "BAD_PEN_IDS",
    "QUERY_SYNTAX_CASES",
    "ConformanceBase",
    "ProviderConformanceTests",
    "ProviderFactory",
    "StoreSet",
    "contract_violations",
    "eventually",
    "find",
    "spec_factory",
    "token",
]
