"""The run-time egress audit of network providers' Python sockets
(goat_core/host/_egress_audit.py)."""

from __future__ import annotations

import importlib
import socket
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from goat_core.errors import ProviderUnavailable
from goat_core.host import _egress_audit
from goat_core.host._connect import announce_allowed


@pytest.fixture
def listener() -> Iterator[int]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


@pytest.fixture
def driver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """A package standing in for a provider's driver: it dials where it is told."""
    name = f"egress_probe_{uuid.uuid4().hex[:8]}"
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text(
        textwrap.dedent(
            """
            import logging
            import socket

            from goat_core.host._connect import announce_allowed

            def dial(port):
                with socket.create_connection(("127.0.0.1", port), timeout=2):
                    return "connected"

            def allow(url):  # what context.authorize announces, from the provider's frame
                announce_allowed(url)

            def log(message):
                logging.getLogger("egress-probe").warning(message)
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module(name)
    _egress_audit.watch(name)
    return module


def test_a_watched_package_cannot_dial_an_address_never_allowed(
    driver: ModuleType, listener: int
) -> None:
    with pytest.raises(ProviderUnavailable) as caught:
        driver.dial(listener)
    message = str(caught.value)
    assert f"127.0.0.1:{listener}" in message and "context.authorize" in message


def test_after_the_guard_allowed_the_url_the_driver_connects(
    driver: ModuleType, listener: int
) -> None:
    driver.allow(f"postgresql://127.0.0.1:{listener}/db")
    assert driver.dial(listener) == "connected"
    assert ("127.0.0.1", listener) in _egress_audit.allowed(driver.__name__)


def test_an_allowance_of_the_host_or_another_package_does_not_count(
    driver: ModuleType, listener: int
) -> None:
    announce_allowed(f"redis://127.0.0.1:{listener}")  # the host's own: no provider frame
    with pytest.raises(ProviderUnavailable):
        driver.dial(listener)


def test_ipv6_forms_of_one_address_are_one_address(driver: ModuleType, listener: int) -> None:
    driver.allow(f"redis://[::ffff:127.0.0.1]:{listener}")  # the kernel's form is 127.0.0.1
    assert driver.dial(listener) == "connected"
    assert _egress_audit.canonical_host("[0:0:0:0:0:0:0:1]") == "::1"


def test_a_log_handler_s_connect_is_the_host_s(
    driver: ModuleType, listener: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host ships logs over a socket; a provider's log line must not be refused."""
    import logging
    import logging.handlers

    handler = logging.handlers.SocketHandler("127.0.0.1", listener)
    errors: list[str] = []
    monkeypatch.setattr(handler, "handleError", lambda record: errors.append("lost"))
    logger = logging.getLogger("egress-probe")
    logger.addHandler(handler)
    try:
        driver.log("shipped")
    finally:
        logger.removeHandler(handler)
        handler.close()
    assert errors == []


def test_the_application_itself_is_never_watched() -> None:
    _egress_audit.watch("__main__")
    _egress_audit.watch("json")  # a stdlib name: never a provider's package
    assert not {"__main__", "json"} & _egress_audit._packages


def test_another_port_of_an_allowed_host_is_still_refused(
    driver: ModuleType, listener: int
) -> None:
    driver.allow(f"redis://127.0.0.1:{listener + 1 if listener < 65535 else 1}")
    with pytest.raises(ProviderUnavailable):
        driver.dial(listener)


def test_the_host_application_s_own_sockets_pass(driver: ModuleType, listener: int) -> None:
    with socket.create_connection(("127.0.0.1", listener), timeout=2):
        pass  # no provider frame on the stack: not the rule's business


def test_core_is_never_watched() -> None:
    _egress_audit.watch("goat_core")
    assert "goat_core" not in _egress_audit._packages


_PLUGIN = """
import socket
from typing import Any

import anyio
from pydantic import BaseModel

from goat_core import CredentialSpec, Health, ProviderSpec, hookimpl
from goat_core.contract import Capability, Provider, RecallResult


class Settings(BaseModel):
    server: str
    authorize_first: bool = False


def _dial(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


class Dialer(Provider):
    async def recall(self, query: str, *, limit: int = 10) -> RecallResult:
        settings: Any = self.context.settings
        if settings.authorize_first:
            await self.context.authorize(settings.server)
        port = int(settings.server.rsplit(":", 1)[1])
        await anyio.to_thread.run_sync(_dial, port)  # a driver of its own, on a thread
        return RecallResult(scope=self.scope.key, items=(), complete=True)

    async def check(self) -> Health:
        return Health.healthy("ok")


SPEC = ProviderSpec(
    name="dialer",
    display_name="Dialer",
    version="0",
    capabilities=frozenset({Capability.SCOPED_STORES}),
    settings_model=Settings,
    network=True,
    egress_urls=lambda s: [s.server],
    credentials=(CredentialSpec(name="api_key", description="unused"),),
    factory=Dialer,
)
Dialer.spec = SPEC


@hookimpl
def goat_register_providers():
    return [SPEC]
"""

_SCRIPT = """
import socket, sys
import anyio
from goat_core.contract import Scope
from goat_core.errors import ProviderUnavailable
from goat_core.host import Chat, GoatHome, MemoryHost
from goat_core.plugins import PluginSettings, Registry, make_plugin_manager, register_plugin
import dialer_plugin

async def main(home):
    pm = make_plugin_manager(PluginSettings(autoload=False))
    register_plugin(pm, dialer_plugin, "dialer")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0)); server.listen(8)
        url = f"tcp://127.0.0.1:{server.getsockname()[1]}"
        async with MemoryHost(home=GoatHome.at(home), registry=Registry(pm)) as host:
            for pen, first in (("plain", False), ("asks", True)):
                settings = {"server": url, "authorize_first": first}
                await host.bind(Scope.pen(pen), "dialer", settings, connect=False)
                scope = Scope.pen(pen)
                try:
                    await host.context_for(Chat(pen)).recall("x")
                    print(scope.key, "connected")
                except ProviderUnavailable as exc:
                    print(scope.key, "refused:", exc)

anyio.run(main, sys.argv[1])
"""


def test_a_host_refuses_a_provider_s_unauthorized_dial(tmp_path: Path) -> None:
    """End to end: MemoryHost builds a network provider whose own socket dials its bound
    server; without ``context.authorize`` first the connect raises, with it it connects."""
    import subprocess

    (tmp_path / "dialer_plugin.py").write_text(_PLUGIN)
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(tmp_path / "home")],
        cwd=tmp_path,
        env={**__import__("os").environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, proc.stderr
    assert lines[0].startswith("pen:plain refused: egress refused by GOAT: dialer_plugin "), lines
    assert "context.authorize" in lines[0]
    assert lines[1] == "pen:asks connected", lines
