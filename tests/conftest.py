"""Shared fixtures of the core tests. Keep this small: test modules own their fixtures.

``no_network`` (or ``@pytest.mark.no_network``) blocks IPv4/IPv6 connections and DNS
lookups for one test and records every attempt; unix sockets (the event loop's self-pipe)
keep working. :func:`locate_test_vault` finds the real Obsidian Help vault.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import hypothesis
import pytest

# Property tests check behaviour, never speed: on a loaded, shared CI machine one example that
# touches the disk (fsync) or waits for the scheduler can outlast hypothesis's default 200 ms
# deadline, which fails the run with DeadlineExceeded or "Unreliable test timings" although the
# code is correct. ``--hypothesis-profile`` on the command line still takes precedence.
hypothesis.settings.register_profile(
    "goat", deadline=None, suppress_health_check=[hypothesis.HealthCheck.too_slow]
)
hypothesis.settings.load_profile("goat")


class NetworkBlocked(OSError):
    """Raised instead of opening an internet connection while ``no_network`` is active."""


class NetworkAttempts(list[str]):
    """What the code under test tried to reach, e.g. ``["connect 10.0.0.1:443"]``."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "no_network: block and record IPv4/IPv6 connections (unix sockets allowed)"
    )


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[NetworkAttempts]:
    """Block ``socket.connect``/``connect_ex``/``create_connection``/``getaddrinfo`` for
    AF_INET and AF_INET6; yield the list of attempts (each one also raises
    :class:`NetworkBlocked` in the code under test)."""
    attempts = NetworkAttempts()
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def blocked(what: str) -> NetworkBlocked:
        attempts.append(what)
        return NetworkBlocked(f"network access blocked in this test: {what}")

    def connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            raise blocked(f"connect {address[0]}:{address[1]}")
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            raise blocked(f"connect {address[0]}:{address[1]}")
        return real_connect_ex(self, address)

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        raise blocked(f"create_connection {address[0]}:{address[1]}")

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode("idna") if isinstance(host, bytes) else host
        raise blocked(f"getaddrinfo {name}:{port}")

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "create_connection", create_connection)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield attempts


@pytest.fixture(autouse=True)
def _no_network_marker(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("no_network") is not None:
        request.getfixturevalue("no_network")


@pytest.fixture(autouse=True)
def _no_os_keyring() -> Iterator[None]:
    """Tests never reach the machine's keyring (a SecretService without a D-Bus session would
    make every credential read wait out the 3 s keyring timeout): the ``fail`` backend is
    active unless a test sets its own, and whatever was active is restored afterwards."""
    import keyring
    import keyring.backends.fail

    previous = keyring.get_keyring()
    keyring.set_keyring(keyring.backends.fail.Keyring())
    yield
    keyring.set_keyring(previous)


@pytest.fixture(autouse=True)
def _fresh_logging() -> Iterator[None]:
    """No global state between tests: a test that configures logging (the CLI does, through
    ``goat_core.logs.configure``) must not change what the next test's logs capture."""
    import logging

    import structlog

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    structlog.reset_defaults()
    root.handlers[:] = handlers
    root.setLevel(level)


# -- the real Obsidian Help vault ----------------------------------------------------------------
# One rule for every test tree: goat_core.testing.fixtures.locate_test_vault.
from goat_core.testing.fixtures import VAULT_NAME, locate_test_vault  # noqa: E402, F401
