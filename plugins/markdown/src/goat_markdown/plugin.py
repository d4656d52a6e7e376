"""Entry point of goat-markdown (``goat_core.plugins`` -> ``markdown``).

Cheap to import: it declares the provider and its settings; the provider module (YAML, the
SQLite search index) is imported only when a store is opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from goat_core.contract import Capability, Consistency, ProviderSpec
from goat_core.filestore import FolderStoreSettings, StoreRoot
from goat_core.hookspecs import hookimpl
from goat_markdown import __version__

if TYPE_CHECKING:
    from goat_core.contract import Provider, ProviderContext

__all__ = ["MarkdownSettings", "goat_register_providers", "spec"]


class MarkdownSettings(FolderStoreSettings):
    """Settings of a markdown store (``goat bind ... markdown --set root=PATH``)."""

    root: StoreRoot = Field(
        default=None,
        description=(
            "Folder holding the notes, e.g. an existing Obsidian vault; it must exist. "
            "Default: the scope's store under the GOAT home data folder "
            "(stores/global or stores/pens/<pen id>), created on first use."
        ),
    )


def _factory(context: ProviderContext) -> Provider:
    from goat_markdown.provider import MarkdownProvider

    return MarkdownProvider(context, spec=spec())


def spec() -> ProviderSpec:
    """The markdown provider's declaration (no I/O)."""
    return ProviderSpec(
        name="markdown",
        display_name="Markdown notes",
        version=__version__,
        description=(
            "A folder of Markdown notes per scope, with YAML frontmatter and Obsidian links; "
            "ranked full-text recall from an index kept under the GOAT home."
        ),
        capabilities=frozenset(
            {Capability.PAGES, Capability.MAP, Capability.FEEDBACK, Capability.SCOPED_STORES}
        ),
        consistency=Consistency.IMMEDIATE,
        settings_model=MarkdownSettings,
        factory=_factory,
        duplicate_policy="keep",
        title_lookup=True,
    )


@hookimpl
def goat_register_providers() -> list[ProviderSpec]:
    """The one provider this plugin ships: ``markdown``."""
    return [spec()]
