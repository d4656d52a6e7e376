"""The shared provider conformance suite (goat-core's ``testing`` extra:
``pip install '.[testing]'`` in a GOAT checkout).

A provider distribution subclasses :class:`ProviderConformanceTests` in its own tests::

    from goat_core.testing import ProviderConformanceTests

    class TestJsonConformance(ProviderConformanceTests):
        entry_point_name = provider_name = "jsonfile"

        @pytest.fixture
        def goat_provider_factory(self, tmp_path):
            return spec_factory(SPEC, GoatHome.at(tmp_path))

See ``docs/authors.md`` for the whole recipe. Importing this package registers assertion
rewriting for the suite and imports nothing else; the suite itself loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

pytest.register_assert_rewrite("goat_core.testing.conformance")

if TYPE_CHECKING:
    from goat_core.testing._remote import (
        RemoteServer,
        assert_no_secret,
        remote_mcp_server,
        secret_forms,
    )
    from goat_core.testing.conformance import (
        ConformanceBase,
        Fault,
        FaultInjectionTests,
        FaultInjector,
        FolderFaults,
        FolderStoreConformanceTests,
        ProviderConformanceTests,
        ProviderFactory,
        StoreSet,
        closing_server,
        eventually,
        refused_url,
        spec_factory,
    )
    from goat_core.testing.policies import HideByName, HidePages, HideReads, RefuseWrites

__all__ = [
    "ConformanceBase",
    "Fault",
    "FaultInjectionTests",
    "FaultInjector",
    "FolderFaults",
    "FolderStoreConformanceTests",
    "HideByName",
    "HidePages",
    "HideReads",
    "ProviderConformanceTests",
    "ProviderFactory",
    "RefuseWrites",
    "RemoteServer",
    "StoreSet",
    "assert_no_secret",
    "closing_server",
    "eventually",
    "refused_url",
    "remote_mcp_server",
    "secret_forms",
    "spec_factory",
]


def __getattr__(name: str) -> Any:
    if name in {"HideByName", "HidePages", "HideReads", "RefuseWrites"}:
        from goat_core.testing import policies

        return getattr(policies, name)
    if name in {"RemoteServer", "assert_no_secret", "remote_mcp_server", "secret_forms"}:
        from goat_core.testing import _remote

        return getattr(_remote, name)
    if name in __all__:
        from goat_core.testing import conformance

        return getattr(conformance, name)
    raise AttributeError(f"module 'goat_core.testing' has no attribute {name!r}")
