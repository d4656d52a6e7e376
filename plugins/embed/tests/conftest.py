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
