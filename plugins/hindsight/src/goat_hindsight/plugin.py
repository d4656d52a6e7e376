"""Entry point of goat-hindsight (``goat_core.plugins`` -> ``hindsight``).

Cheap to import: settings, the spec and the legacy decoder only. The MCP client (``mcp``
costs about 0.7 s to import) is imported by the factory when a provider is built.
"""

from __future__ import annotations

from collections.abc import Mapping
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
    "decode_legacy",
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

#: Keys of the older coding-agent style configuration (a workspace folder plus a reference
#: to ``~/.hindsight/coding-agent.json``); their presence makes a stored entry legacy.
LEGACY_KEYS = frozenset(
    {
        "workspace",
        "workspace_dir",
        "workspace_folder",
        "workspace_path",
        "folder",
        "config",
        "config_path",
        "config_file",
        "coding_agent_config",
    }
)
LEGACY_REASON = (
    "legacy coding-agent Hindsight binding (a workspace folder and ~/.hindsight/"
    "coding-agent.json) is no longer used; reconnect with `goat bind ... hindsight --set "
    "base_url=<server> --set bank_id=<bank>` (nothing is copied, merged or renamed)"
)


def egress_urls(settings: Any) -> list[str]:
    """The one URL prefix an explicit bind authorises: ``[f"{base}/mcp/{bank_id}/"]``.

    :param settings: a :class:`HindsightSettings` or raw settings (validated here).
    :raises ConfigError: invalid settings.
    """
    return [mcp_url(parse_settings(settings))]


def _mentions_coding_agent(value: Any) -> bool:
    if isinstance(value, str):
        path = value.replace("\\", "/")
        return (
            "coding-agent.json" in path or "/.hindsight/" in path or path.startswith(".hindsight")
        )
    if isinstance(value, Mapping):
        return any(_mentions_coding_agent(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_mentions_coding_agent(v) for v in value)
    return False


def decode_legacy(entry: Mapping[str, Any]) -> str | None:
    """Recognise a stored binding entry of the older coding-agent style.

    Returns a one-line reason (the entry is then kept byte for byte and fails closed with a
    message to reconnect) or ``None`` for a current entry (validated normally). Never
    rewrites, deletes or follows the referenced file.
    """
    settings = entry.get("settings")
    if isinstance(settings, Mapping):
        if LEGACY_KEYS & set(settings) or _mentions_coding_agent(settings):
            return LEGACY_REASON
    current = {"id", "provider", "settings", "enabled", "egress"}
    extra = {k: v for k, v in entry.items() if k not in current}
    if LEGACY_KEYS & set(extra) or _mentions_coding_agent(extra):
        return LEGACY_REASON
    return None


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
        legacy_decoder=decode_legacy,
        max_input_chars=100_000,
        duplicate_policy="keep",
        counts_tokens=True,
        extracts_facts=True,
    )


@hookimpl
def goat_register_providers() -> list[ProviderSpec]:
    """The one provider this plugin ships: ``hindsight``."""
    return [spec()]
