"""The contract's capabilities are the ones core backs with an operation (docs/design.md,
Bindings and providers); a spec written to the first release still loads."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from goat_core import hookimpl
from goat_core.contract import Capability, Provider, ProviderSpec
from goat_core.plugins import PluginSettings, Registry, make_plugin_manager, register_plugin


class _Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _old_spec(capabilities: list[str]) -> ProviderSpec:
    return ProviderSpec(
        name="oldstyle",
        display_name="Old style",
        version="0.1.0",
        capabilities=capabilities,  # type: ignore[arg-type]  # as a first-release spec wrote it
        settings_model=_Settings,
        factory=Provider,
    )


def test_the_contract_has_only_backed_capabilities() -> None:
    assert {c.value for c in Capability} == {
        "pages",
        "map",
        "reflect",
        "feedback",
        "scoped_stores",
        "shared_bank",
    }
    for retired in ("lint", "ingest", "export"):
        with pytest.raises(ValueError, match=f"'{retired}' is not a valid Capability"):
            Capability(retired)
        assert not hasattr(Capability, retired.upper())


def test_an_old_spec_declaring_retired_capabilities_loads_and_warns_once() -> None:
    """``lint``, ``ingest`` and ``export`` as strings: the spec loads without them, and one
    DeprecationWarning names all three."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec = _old_spec(["pages", "lint", "ingest", "export", "scoped_stores"])
    assert spec.capabilities == frozenset({Capability.PAGES, Capability.SCOPED_STORES})
    assert [w.category for w in caught] == [DeprecationWarning]
    message = str(caught[0].message)
    assert message.startswith("capabilities 'export', 'ingest', 'lint' are no longer part")
    assert "are ignored" in message
    assert spec.supports("pages") and not spec.supports(Capability.MAP)
    assert not spec.supports("lint")  # a provider that still asks is told it is not declared
    with pytest.raises(ValueError):
        spec.supports("telepathy")


def test_a_spec_without_retired_capabilities_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spec = _old_spec(["pages", "scoped_stores"])
    assert spec.capabilities == frozenset({Capability.PAGES, Capability.SCOPED_STORES})


def test_retired_capabilities_never_stand_in_for_the_store_kind() -> None:
    """Dropping them leaves the rule intact: exactly one of scoped_stores and shared_bank."""
    with (
        warnings.catch_warnings(),
        pytest.raises(ValueError, match="exactly one of scoped_stores, shared_bank"),
    ):
        warnings.simplefilter("ignore", DeprecationWarning)
        _old_spec(["lint", "pages"])


def test_the_strict_loader_takes_an_old_spec() -> None:
    """A plugin whose spec declares ``lint`` registers its provider under strict loading."""

    class OldPlugin:
        @hookimpl
        def goat_register_providers(self) -> list[Any]:
            return [_old_spec(["pages", "lint", "scoped_stores"])]

    pm = make_plugin_manager(PluginSettings(autoload=False, strict=True))
    assert register_plugin(pm, OldPlugin(), "oldstyle")
    with pytest.warns(DeprecationWarning, match="'lint'"):
        providers = Registry(pm).providers()
    assert providers["oldstyle"].capabilities == frozenset(
        {Capability.PAGES, Capability.SCOPED_STORES}
    )
