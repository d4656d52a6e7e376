"""Settings of a wiki (:class:`WikiSettings`): the root, the page folders of a new wiki and the
names of the provider's own files and sources folder, each with a fallback.

Cheap to import (the plugin entry point declares them); ``root`` is checked as every folder
store's (:data:`goat_core.filestore.StoreRoot`).
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator

from goat_core.filestore import FolderStoreSettings, StoreRoot

__all__ = ["DEFAULT_FOLDERS", "WikiSettings"]

#: Page folders of a new wiki (the LLM Wiki pattern: summaries of sources, entities,
#: concepts, and syntheses that combine them).
DEFAULT_FOLDERS: tuple[str, ...] = ("sources", "entities", "concepts", "syntheses")

_FOLDER = re.compile(r"[^./\\\x00-\x1f:*?\"<>|][^/\\\x00-\x1f:*?\"<>|]{0,63}")
_FILE = re.compile(r"[^./\\\x00-\x1f:*?\"<>|][^/\\\x00-\x1f:*?\"<>|]{0,60}\.md")


class WikiSettings(FolderStoreSettings):
    """Settings of a wiki (``goat bind --pen w wiki --set root=PATH``).

    The provider's own files (``index.md``, ``log.md``, ``schema.md``) and the ``raw/``
    folder have a fallback name each: when a user's file or folder already has the usual
    name (a note without the provider's frontmatter marker, a folder without its manifest),
    it is never taken over; the fallback name is used instead and lint reports it.
    """

    root: StoreRoot = Field(
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
