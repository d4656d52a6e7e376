"""Entry point of goat-wiki (``goat_core.plugins`` -> ``wiki``).

Cheap to import: it declares the provider, its settings and the ``goat wiki`` command group
(imported only when the ``goat`` CLI asks plugins for their commands). The provider module
(YAML, the SQLite search index) is imported only when a wiki is opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from goat_core.contract import Capability, Consistency, ProviderSpec
from goat_core.hookspecs import hookimpl
from goat_wiki import __version__
from goat_wiki.settings import DEFAULT_FOLDERS, WikiSettings

if TYPE_CHECKING:
    import click

    from goat_core.contract import Provider, ProviderContext

__all__ = [
    "DEFAULT_FOLDERS",
    "WikiSettings",
    "goat_register_commands",
    "goat_register_providers",
    "spec",
]


def _factory(context: ProviderContext) -> Provider:
    from goat_wiki.provider import WikiProvider

    return WikiProvider(context, spec=spec())


def spec() -> ProviderSpec:
    """The wiki provider's declaration (no I/O)."""
    return ProviderSpec(
        name="wiki",
        display_name="LLM wiki",
        version=__version__,
        description=(
            "An LLM wiki: immutable raw sources, pages a model writes with provenance, a "
            "schema, an index and a log the provider keeps true, lint, and Obsidian links."
        ),
        capabilities=frozenset(
            {
                Capability.PAGES,
                Capability.MAP,
                Capability.FEEDBACK,
                Capability.SCOPED_STORES,
            }
        ),
        consistency=Consistency.IMMEDIATE,
        settings_model=WikiSettings,
        factory=_factory,
        duplicate_policy="keep",
        title_lookup=True,
    )


@hookimpl
def goat_register_providers() -> list[ProviderSpec]:
    """The one provider this plugin ships: ``wiki``."""
    return [spec()]


@hookimpl
def goat_register_commands(cli: click.Group) -> None:
    """Add the ``goat wiki`` group (ingest, lint, write); its module is imported only here.

    :param cli: the root ``goat`` group.
    """
    from goat_wiki.cli import wiki

    cli.add_command(wiki)
