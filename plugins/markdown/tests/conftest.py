"""Fixtures for goat-markdown tests: a fresh GOAT home per test, providers built the way a
host builds them (through the spec's factory)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from goat_core.home import GoatHome
from goat_core.models import Binding, Scope
from goat_core.provider import ProviderContext, SyncProvider

from goat_markdown.plugin import MarkdownSettings, spec

MakeStore = Callable[..., Any]


def make_context(
    home: GoatHome, root: Path | None = None, scope: Scope | None = None
) -> ProviderContext:
    settings = MarkdownSettings(root=root)
    return ProviderContext(
        scope=scope or Scope.global_(),
        binding=Binding(
            id="default",
            provider="markdown",
            settings=settings.model_dump(mode="json", exclude_none=True),
        ),
        settings=settings,
        home=home,
    )


@pytest.fixture
def home(tmp_path: Path) -> GoatHome:
    return GoatHome.at(tmp_path / "goat-home")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    return root


@pytest.fixture
def store(home: GoatHome) -> Iterator[MakeStore]:
    """``store(root=None, scope=None) -> SyncProvider``; every store is closed after the test."""
    opened: list[SyncProvider] = []

    def make(root: Path | None = None, scope: Scope | None = None) -> SyncProvider:
        sp = SyncProvider(lambda: spec().factory(make_context(home, root, scope)))
        opened.append(sp)
        return sp

    yield make
    for sp in opened:
        sp.close()
