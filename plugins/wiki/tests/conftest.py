"""Fixtures for goat-wiki tests: a fresh GOAT home per test, wikis built the way a host builds
them (through the spec's factory), closed after the test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from goat_core.home import GoatHome
from goat_core.models import Scope
from goat_core.provider import SyncProvider
from wiki_helpers import MakeWiki, make_context

from goat_wiki.plugin import spec

# Property tests check behaviour, never speed: on a loaded, shared CI machine one example that
# touches the disk (fsync) or waits for the scheduler can outlast hypothesis's default 200 ms
# deadline, which fails the run with DeadlineExceeded or "Unreliable test timings" although the
# code is correct. ``--hypothesis-profile`` on the command line still takes precedence.
hypothesis.settings.register_profile(
    "goat", deadline=None, suppress_health_check=[hypothesis.HealthCheck.too_slow]
)
hypothesis.settings.load_profile("goat")


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
