"""Fixtures for goat-markdown tests: a fresh GOAT home per test, providers built the way a
host builds them (through the spec's factory); the shared folder-store fixtures
(:mod:`goat_core.testing.fixtures`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from goat_core.host import GoatHome
from goat_core.testing.fixtures import folder_stores, home, vault  # noqa: F401 (fixtures)
from goat_markdown.plugin import spec

MakeStore = Callable[..., Any]

#: The repository root (this file is ``<repo>/plugins/markdown/tests/conftest.py``).
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def store(home: GoatHome) -> Iterator[MakeStore]:  # noqa: F811 (the imported fixture)
    """``store(root=None, scope=None) -> MarkdownProvider``; every store is closed after the
    test. Tests await its methods (``pytestmark = pytest.mark.anyio``)."""
    with folder_stores(spec(), home) as make:
        yield make


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
