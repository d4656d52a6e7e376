"""ProviderContext.connect: a guarded TCP connection for protocols that are not HTTP."""

from __future__ import annotations

import sys

import anyio
import pytest

from goat_core.contract import Binding
from goat_core.errors import BadInput, ProviderUnavailable
from goat_core.host._connect import ALLOWED_EVENT, GuardedConnect
from goat_core.host._egress import check_egress
from goat_core.plugins import PluginSettings, Registry, make_plugin_manager

pytestmark = pytest.mark.anyio

_seen: list[str] = []


def _hook(event: str, args: tuple[object, ...]) -> None:
    if event == ALLOWED_EVENT:
        _seen.append(str(args[0]))


sys.addaudithook(_hook)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _connect(*egress: str) -> GuardedConnect:
    registry = Registry(make_plugin_manager(PluginSettings(autoload=False)))
    binding = Binding(id="kv", provider="redisish", egress=egress)
    return GuardedConnect(lambda url: check_egress(registry, binding, url))


async def test_allowed_url_connects_and_is_announced() -> None:
    async def serve(stream: anyio.abc.SocketStream) -> None:
        await stream.send(b"+PONG\r\n")

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, serve)
        url = f"redis://127.0.0.1:{port}"
        stream = await _connect(url)(url + "/0", timeout=5)
        assert await stream.receive() == b"+PONG\r\n"
        await stream.aclose()
        tg.cancel_scope.cancel()
    assert url + "/0" in _seen


async def test_refused_url_never_reaches_the_network() -> None:
    before = list(_seen)
    with pytest.raises(ProviderUnavailable, match="egress refused by GOAT"):
        await _connect("redis://127.0.0.1:6379")("redis://127.0.0.2:6379")
    with pytest.raises(ProviderUnavailable, match="egress refused by GOAT"):
        await _connect("redis://127.0.0.1:6379")("postgresql://127.0.0.1:6379")
    assert _seen == before


async def test_url_needs_scheme_host_and_port() -> None:
    for url in ("127.0.0.1:6379", "redis://127.0.0.1", "redis://:6379"):
        with pytest.raises(BadInput):
            await _connect(url)(url)


async def test_a_closed_port_is_provider_unavailable() -> None:
    with anyio.fail_after(10):
        with pytest.raises(
            ProviderUnavailable, match=r"cannot connect to 127\.0\.0\.1:9: Connection refused"
        ):
            await _connect("redis://127.0.0.1:9")("redis://127.0.0.1:9", timeout=5)
