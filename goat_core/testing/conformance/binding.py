"""The settings round trip: bind through the real config path, reload, use the binding
(docs/design.md, Bindings and providers: memory.json holds bindings; a Binding is a
configured provider instance)."""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import pytest

from goat_core.contract import Consistency, ReceiptStatus, Scope
from goat_core.errors import GoatError
from goat_core.testing.conformance.base import BindInfo, ConformanceBase, item_text, token

__all__ = ["BindingTests"]


class BindingTests(ConformanceBase):
    """Mixed into :class:`~goat_core.testing.ProviderConformanceTests`."""

    async def test_settings_round_trip_through_bind(self, goat_provider_factory: Any) -> None:
        """The settings the suite's factory uses survive ``goat bind``: saved to
        ``memory.json`` (by field name, defaults left out), loaded back and validated again
        by the settings model (aliases and defaults included), they give an equal settings
        object, and a host that reads the saved file remembers and recalls through the
        binding.

        Troubleshooting: a field with a pydantic ``alias`` needs
        ``ConfigDict(populate_by_name=True)`` (or ``validate_by_name=True``), because saved
        settings are written and read by field name; a default must be a constant (no
        ``default_factory`` that differs per call); every settings value must be
        JSON-serialisable.
        """
        info: BindInfo | None = getattr(goat_provider_factory, "goat_bind", None)
        if info is None:
            pytest.skip(
                f"{type(self).__name__}'s goat_provider_factory was not built with "
                "spec_factory, so the suite does not know which settings to bind"
            )
        spec = info.spec
        if spec.credentials and any(c.required for c in spec.credentials):
            pytest.skip(f"provider {spec.name!r} requires a credential; the round trip binds none")
        word = token("bound")
        pen = f"roundtrip-{uuid.uuid4().hex[:6]}"
        from goat_core.testing.conformance.guards import suspended

        with suspended():  # the host's own work (memory.json, keyring) is not the provider's
            outcome = await anyio.to_thread.run_sync(
                _round_trip, info, self.entry_point_name, pen, word, self._wait(spec)
            )
        assert outcome is None, outcome

    def _wait(self, spec: Any) -> float:
        return self.eventual_timeout if spec.consistency is Consistency.EVENTUAL else 0.0


def _round_trip(info: BindInfo, entry_point: str, pen: str, word: str, wait: float) -> str | None:
    """Bind, reload, re-validate and use; ``None`` or what went wrong (on a worker thread:
    the host does its own file I/O and runs its own event loop)."""
    import time

    from goat_core.host import Chat, SyncMemoryHost, load_config
    from goat_core.plugins import PluginSettings, Registry, make_plugin_manager

    spec = info.spec
    scope = Scope.pen(pen)
    harm = "a LOSS (every command after `goat bind` fails: the user's binding is unusable)"

    def registry() -> Registry:
        return Registry(make_plugin_manager(PluginSettings(load=(entry_point,), strict=True)))

    raw = dict(info.settings)
    expected = spec.settings_model.model_validate(raw)
    with SyncMemoryHost(home=info.home, registry=registry()) as host:
        host.bind(scope, spec.name, raw, connect=False)
    try:
        saved = load_config(info.home).selected(scope)
    except GoatError as exc:
        return f"{harm}: memory.json written by bind cannot be read back: {exc}"
    if saved is None:
        return f"{harm}: bind saved no binding for {scope.key}"
    try:
        again = spec.settings_model.model_validate(saved.settings)
    except Exception as exc:
        return (
            f"{harm}: the saved settings {saved.settings!r} fail the settings model when read "
            f"back ({type(exc).__name__}: {str(exc).splitlines()[0]}); saved settings are "
            "validated by field name: give an aliased field populate_by_name=True"
        )
    if again != expected:
        return (
            f"{harm}: settings change on the way through memory.json: given {raw!r} "
            f"validate to {expected!r}, read back to {again!r}"
        )
    with SyncMemoryHost(home=info.home, registry=registry()) as host:
        context = host.context_for(Chat(project_id=pen))
        try:
            receipt = context.remember(f"{word} remembered through a saved binding")
        except GoatError as exc:
            return f"{harm}: remember through the saved binding raised {type(exc).__name__}: {exc}"
        if receipt.status not in {ReceiptStatus.STORED, ReceiptStatus.QUEUED}:
            return f"{harm}: remember through the saved binding answered {receipt.status.value!r}"
        deadline = time.monotonic() + wait
        while True:
            try:
                result = context.recall(word, limit=10)
            except GoatError as exc:
                return f"{harm}: recall through the saved binding raised {exc}"
            if any(word in item_text(i) for i in result.items):
                return None
            if time.monotonic() >= deadline:
                return (
                    f"{harm}: a write through the saved binding answered "
                    f"{receipt.status.value!r}, but recall of {word!r} finds nothing"
                )
            time.sleep(0.1)
