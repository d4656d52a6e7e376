"""Entry point of goat-hindsight (``goat_core.plugins`` -> ``hindsight``).

Cheap to import: settings and the spec only. The MCP client (``mcp`` costs about 0.7 s to
import) is imported by the factory when a provider is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from goat_core.contract import Capability, Consistency, CredentialSpec, ProviderSpec
from goat_core.hookspecs import hookimpl
from goat_hindsight import __version__
from goat_hindsight.settings import HindsightSettings, mcp_url, parse_settings

if TYPE_CHECKING:
    from goat_core.contract import Provider, ProviderContext

__all__ = [
    "API_KEY_HELP",
    "HindsightSettings",
    "egress_urls",
    "goat_register_providers",
    "spec",
]

#: Help text of the ``api_key`` credential (shown by ``goat bind`` and settings forms).
API_KEY_HELP = (
    "Hindsight API key, sent as `Authorization: Bearer <key>`; leave empty for a server "
    "without authentication. Hindsight Cloud's OAuth is not supported yet, so a Cloud user "
    "pastes an API key."
)


def egress_urls(settings: Any) -> list[str]:
    """The one URL prefix an explicit bind authorises: ``[f"{base}/mcp/{bank_id}/"]``.

    :param settings: a :class:`HindsightSettings` or raw settings (validated here).
    :raises ConfigError: invalid settings.
    """
    return [mcp_url(parse_settings(settings))]


def _factory(context: ProviderContext) -> Provider:
    from goat_hindsight.provider import HindsightProvider

    return HindsightProvider(context, spec=spec())


def spec() -> ProviderSpec:
    """The hindsight provider's declaration (no I/O)."""
    return ProviderSpec(
        name="hindsight",
        display_name="Hindsight shared bank",
        version=__version__,
        description=(
            "One existing bank on a Hindsight server, through its single-bank MCP endpoint "
            "{base_url}/mcp/{bank_id}/; the same shared bank whatever scope selects it."
        ),
        capabilities=frozenset(
            {
                Capability.PAGES,
                Capability.REFLECT,
                Capability.FEEDBACK,
                Capability.SHARED_BANK,
            }
        ),
        consistency=Consistency.EVENTUAL,
        settings_model=HindsightSettings,
        credentials=(CredentialSpec(name="api_key", description=API_KEY_HELP, required=False),),
        network=True,
        factory=_factory,
        egress_urls=egress_urls,
        max_input_chars=100_000,
        duplicate_policy="keep",
        counts_tokens=True,
        extracts_facts=True,
    )


@hookimpl
def goat_register_providers() -> list[ProviderSpec]:
    """The one provider this plugin ships: ``hindsight``."""
    return [spec()]
