"""Test fixtures for folder-store providers (markdown, wiki, or your own
:class:`~goat_core.filestore.FolderStoreProvider`).

Import the pytest fixtures into a ``conftest.py`` and build the store fixture on
:func:`folder_stores`::

    from goat_core.testing.fixtures import folder_stores, home, vault  # noqa: F401

    @pytest.fixture
    def store(home):
        with folder_stores(spec(), home) as make:
            yield make  # make(root=None, scope=None, **settings) -> the provider

    @pytest.mark.anyio
    async def test_recall(store, vault):
        md = store(root=vault)
        assert (await md.recall("quokkas")).items == []

- :func:`home`: a fresh, empty GOAT home per test; :func:`vault`: an empty folder to bind.
- :func:`folder_store_context`: a provider context the way a host builds one.
- :func:`locate_test_vault` / :func:`copy_test_vault`: the real Obsidian Help vault, found by
  one rule (README "Run the tests", ``.ci/run``) and copied so a test may change it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from goat_core.contract import Binding, GoatHome, Provider, ProviderContext, ProviderSpec, Scope

__all__ = [
    "VAULT_NAME",
    "copy_test_vault",
    "fill_disk",
    "folder_store_context",
    "folder_stores",
    "home",
    "locate_test_vault",
    "small_tmpfs",
    "vault",
]

#: The vault's folder name inside the shared data folder.
VAULT_NAME = "obsidian-help-en"


@pytest.fixture
def home(tmp_path: Path) -> GoatHome:
    """A fresh GOAT home under the test's temporary folder."""
    return GoatHome.at(tmp_path / "goat-home")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """An empty folder to bind as a store's ``root``."""
    root = tmp_path / "vault"
    root.mkdir()
    return root


def folder_store_context(
    spec: ProviderSpec,
    home: GoatHome,
    root: Path | None = None,
    scope: Scope | None = None,
    **settings: Any,
) -> ProviderContext:
    """The context a host gives a folder store: ``root`` and ``settings`` validated by
    ``spec.settings_model``, the binding ``default`` holding them, the global scope unless
    ``scope`` is given."""
    validated = spec.settings_model(root=root, **settings)
    return ProviderContext(
        scope=scope or Scope.global_(),
        binding=Binding(
            id="default",
            provider=spec.name,
            settings=validated.model_dump(mode="json", exclude_none=True),
        ),
        settings=validated,
        home=home,
    )


@contextmanager
def folder_stores(spec: ProviderSpec, home: GoatHome) -> Iterator[Callable[..., Any]]:
    """``make(root=None, scope=None, **settings) -> Provider``, building each store through
    ``spec.factory`` as a host does (on the calling thread); every store made is closed on
    exit (``anyio.run(provider.close)``: leave the context outside any event loop, as a
    pytest fixture's teardown is)."""
    opened: list[Provider] = []

    def make(root: Path | None = None, scope: Scope | None = None, **settings: Any) -> Any:
        provider = spec.factory(folder_store_context(spec, home, root, scope, **settings))
        opened.append(provider)
        return provider

    try:
        yield make
    finally:
        for provider in opened:
            anyio.run(provider.close)


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


def locate_test_vault(repo: Path, environ: Mapping[str, str] | None = None) -> Path:
    """The Obsidian Help vault the tests read, by one rule (README "Run the tests",
    ``.ci/run``):

    1. ``$GOAT_TEST_VAULT`` when set;
    2. else ``$GOAT_SHARED_DIR/data/obsidian-help-en`` when ``GOAT_SHARED_DIR`` is set;
    3. else ``<repo>/../shared/data/obsidian-help-en`` (CI puts ``shared/`` beside the clone).

    The first source that is set decides (a wrong explicit setting is reported, never
    silently replaced by a fallback).

    :param repo: the repository root (the folder holding ``pyproject.toml``).
    :param environ: the environment (default ``os.environ``).
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
    if _truthy(env.get("CI")):
        pytest.fail(f"{reason} (CI=true: CI always has shared/ beside the clone)", pytrace=False)
    pytest.skip(reason)


def copy_test_vault(repo: Path, dest: Path) -> Path:
    """A copy of the Obsidian Help vault at ``dest`` (symlinks copied as links), for a test
    that binds or changes it; skips or fails as :func:`locate_test_vault`.

    :returns: ``dest``.
    """
    shutil.copytree(locate_test_vault(repo), dest, symlinks=True)
    return dest


@contextmanager
def small_tmpfs(path: Path, size: str = "2m") -> Iterator[Path]:
    """A real tmpfs mounted at ``path`` (created if missing) for a full or read-only disk;
    ``size`` is tmpfs's ``-o size=`` value (options may follow: ``"2m,nr_inodes=3"``).
    Unmounted at the end. Skips the test when not root or when mounting is not permitted:
    pair it with a variant that injects the ``OSError`` so the rule is tested everywhere."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; the injected variants cover the rest")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"mount is not permitted here: {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill_disk(folder: Path) -> None:
    """Write zeros into ``folder/filler`` until its disk has no space left."""
    with open(folder / "filler", "wb", buffering=0) as out, contextlib.suppress(OSError):
        block = b"\0" * 65536
        while True:
            out.write(block)
            out.flush()
