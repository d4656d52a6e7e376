"""Fixtures for goat-markdown tests: a fresh GOAT home per test, providers built the way a
host builds them (through the spec's factory)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from goat_core.home import GoatHome
from goat_core.models import Binding, Scope
from goat_core.provider import ProviderContext, SyncProvider

from goat_markdown.plugin import MarkdownSettings, spec

MakeStore = Callable[..., Any]

#: The repository root (this file is ``<repo>/plugins/markdown/tests/conftest.py``).
REPO = Path(__file__).resolve().parents[3]
#: The vault's folder name inside the shared data folder.
VAULT_NAME = "obsidian-help-en"


def locate_test_vault(repo: Path = REPO, environ: Mapping[str, str] | None = None) -> Path:
    """The Obsidian Help vault the tests read, by the same rule as the core tests
    (``tests/conftest.py``; README "Run the tests", ``.ci/run``):

    1. ``$GOAT_TEST_VAULT`` when set;
    2. else ``$GOAT_SHARED_DIR/data/obsidian-help-en`` when ``GOAT_SHARED_DIR`` is set;
    3. else ``<repo>/../shared/data/obsidian-help-en`` (CI puts ``shared/`` beside the clone).

    The first source that is set decides (a wrong explicit setting is reported, never
    silently replaced by a fallback).

    :returns: the vault folder.
    :raises pytest.skip.Exception: the folder is absent, with a reason naming what was tried.
    :raises pytest.fail.Exception: the same, under ``CI=true``: CI always has the vault.
    """
    env = os.environ if environ is None else environ
    tried: list[str] = []
    if env.get("GOAT_TEST_VAULT"):
        path = Path(env["GOAT_TEST_VAULT"]).expanduser()
        tried.append(f"GOAT_TEST_VAULT={path}")
    else:
        tried.append("GOAT_TEST_VAULT (unset)")
        if env.get("GOAT_SHARED_DIR"):
            path = Path(env["GOAT_SHARED_DIR"]).expanduser() / "data" / VAULT_NAME
            tried.append(f"$GOAT_SHARED_DIR/data/{VAULT_NAME} = {path}")
        else:
            tried.append("GOAT_SHARED_DIR (unset)")
            path = repo.resolve().parent / "shared" / "data" / VAULT_NAME
            tried.append(f"<repo>/../shared/data/{VAULT_NAME} = {path}")
    if path.is_dir():
        return path
    reason = f"the Obsidian Help vault is not a folder at {path}; tried: {'; '.join(tried)}"
    if (env.get("CI") or "").strip().lower() in {"1", "true", "yes", "on"}:
        pytest.fail(f"{reason} (CI=true: CI always has shared/ beside the clone)", pytrace=False)
    pytest.skip(reason)


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
