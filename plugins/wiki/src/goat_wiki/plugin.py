"""Entry point of goat-wiki (``goat_core.plugins`` -> ``wiki``).

Cheap to import: it declares the provider, its settings and the ``goat wiki`` command group
(imported only when the ``goat`` CLI asks plugins for their commands). The provider module
(YAML, the SQLite search index) is imported only when a wiki is opened.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from goat_core.errors import PathError
from goat_core.hookspecs import hookimpl
from goat_core.models import Capability, Consistency, ProviderSpec
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from goat_wiki import __version__

if TYPE_CHECKING:
    import click
    from goat_core.provider import Provider, ProviderContext

__all__ = [
    "DEFAULT_FOLDERS",
    "WikiSettings",
    "goat_register_commands",
    "goat_register_providers",
    "spec",
]

#: Page folders of a new wiki (the LLM Wiki pattern: summaries of sources, entities,
#: concepts, and syntheses that combine them).
DEFAULT_FOLDERS: tuple[str, ...] = ("sources", "entities", "concepts", "syntheses")

_FOLDER = re.compile(r"[^./\\\x00-\x1f:*?\"<>|][^/\\\x00-\x1f:*?\"<>|]{0,63}")
_FILE = re.compile(r"[^./\\\x00-\x1f:*?\"<>|][^/\\\x00-\x1f:*?\"<>|]{0,60}\.md")


class WikiSettings(BaseModel):
    """Settings of a wiki (``goat bind --pen w wiki --set root=PATH``).

    The provider's own files (``index.md``, ``log.md``, ``schema.md``) and the ``raw/``
    folder have a fallback name each: when a user's file or folder already has the usual
    name (a note without the provider's frontmatter marker, a folder without its manifest),
    it is never taken over; the fallback name is used instead and lint reports it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    root: Path | None = Field(
        default=None,
        description=(
            "Folder of the wiki, e.g. an existing Obsidian vault (its notes become the pages, "
            "in place); it must exist. Default: the scope's store under the GOAT home data "
            "folder, created on first use with the default layout."
        ),
    )
    folders: tuple[str, ...] = Field(
        default=DEFAULT_FOLDERS,
        description=(
            "Page folders of a new, empty wiki. A bound vault uses its own top-level folders "
            "plus default_folder."
        ),
    )
    default_folder: str = Field(
        default="syntheses", description="Where a page written without a folder goes."
    )
    index_file: str = Field(default="index.md", description="The page catalog.")
    index_fallback: str = Field(
        default="wiki-index.md", description="Catalog name when index_file is a user's note."
    )
    log_file: str = Field(default="log.md", description="The append-only operation log.")
    log_fallback: str = Field(
        default="wiki-log.md", description="Log name when log_file is a user's note."
    )
    schema_file: str = Field(default="schema.md", description="The conventions of the wiki.")
    schema_fallback: str = Field(
        default="wiki-schema.md", description="Schema name when schema_file is a user's note."
    )
    raw_folder: str = Field(default="raw", description="Folder of immutable ingested sources.")
    raw_fallback: str = Field(
        default="wiki-raw", description="Sources folder name when raw_folder is a user's folder."
    )

    @field_validator("root")
    @classmethod
    def _root(cls, value: Path | None) -> Path | None:
        """Absolute (``~`` expanded, relative to the current directory at bind time); refuses
        what the store would refuse (``goat_core.files.validate_store_root``)."""
        if value is None:
            return None
        from goat_core.files import validate_store_root

        absolute = Path(os.path.abspath(value.expanduser()))
        try:
            validate_store_root(absolute)
        except PathError as exc:
            raise ValueError(f"{exc} (rule {exc.rule})") from exc
        return absolute

    @field_validator("folders")
    @classmethod
    def _folders(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("folders: at least one page folder is needed")
        for name in value:
            if not _FOLDER.fullmatch(name):
                raise ValueError(
                    f"folders: {name!r} is not a plain folder name (no '/', no leading dot)"
                )
        if len({n.casefold() for n in value}) != len(value):
            raise ValueError("folders: names must differ ignoring case")
        return value

    @field_validator("default_folder", "raw_folder", "raw_fallback")
    @classmethod
    def _folder(cls, value: str) -> str:
        if not _FOLDER.fullmatch(value):
            raise ValueError(f"{value!r} is not a plain folder name (no '/', no leading dot)")
        return value

    @field_validator(
        "index_file",
        "index_fallback",
        "log_file",
        "log_fallback",
        "schema_file",
        "schema_fallback",
    )
    @classmethod
    def _file(cls, value: str) -> str:
        if not _FILE.fullmatch(value):
            raise ValueError(f"{value!r} is not a plain Markdown file name ending in .md")
        return value

    @model_validator(mode="after")
    def _distinct(self) -> WikiSettings:
        names = [
            self.index_file,
            self.index_fallback,
            self.log_file,
            self.log_fallback,
            self.schema_file,
            self.schema_fallback,
        ]
        if len({n.casefold() for n in names}) != len(names):
            raise ValueError("index, log and schema file names (and fallbacks) must all differ")
        if self.raw_folder.casefold() == self.raw_fallback.casefold():
            raise ValueError("raw_folder and raw_fallback must differ")
        return self


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
                Capability.LINT,
                Capability.INGEST,
                Capability.SCOPED_STORES,
            }
        ),
        consistency=Consistency.IMMEDIATE,
        settings_model=WikiSettings,
        factory=_factory,
        duplicate_policy="keep",
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
