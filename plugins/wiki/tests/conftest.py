"""Fixtures for goat-wiki tests: a fresh GOAT home per test, wikis built the way a host builds
them (through the spec's factory), closed after the test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from goat_core.home import GoatHome
from goat_core.models import Scope
from goat_core.provider import SyncProvider
from wiki_helpers import MakeWiki, make_context

from goat_wiki.plugin import spec


@pytest.fixture
def home(tmp_path: Path) -> GoatHome:
    return GoatHome.at(tmp_path / "goat-home")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    return root


@pytest.fixture
def wiki(home: GoatHome) -> Iterator[MakeWiki]:
    """``wiki(root=None, scope=None, **settings) -> SyncProvider``; closed after the test."""
    opened: list[SyncProvider] = []

    def make(root: Path | None = None, scope: Scope | None = None, **settings: Any) -> Any:
        sp = SyncProvider(lambda: spec().factory(make_context(home, root, scope, **settings)))
        opened.append(sp)
        return sp

    yield make
    for sp in opened:
        sp.close()
