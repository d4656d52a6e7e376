"""goat_core.egress: every request of a remote provider passes goat_authorize_egress."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from pydantic import BaseModel, ConfigDict

from goat_core import hookimpl
from goat_core.contract import (
    Binding,
    Capability,
    Health,
    Provider,
    ProviderContext,
    ProviderSpec,
    Scope,
)
from goat_core.errors import ProviderUnavailable
from goat_core.host import GoatHome, load_config, save_config
from goat_core.host._egress import EGRESS_HEADER, check_egress, guarded_http_client
from goat_core.plugins import PluginSettings, Registry, make_plugin_manager, register_plugin

PREFIX = "https://h.example/mcp/goat/"
BOUND = Binding(id="pen-alpha", provider="remote", egress=(PREFIX,))


@pytest.fixture
def registry() -> Registry:
    return Registry(make_plugin_manager(PluginSettings(autoload=False)))


def _with_plugin(registry: Registry, plugin: object, name: str) -> Registry:
    assert register_plugin(registry.pm, plugin, name)
    return registry


class Veto:
    @hookimpl
    def goat_authorize_egress(self, binding: Binding, url: str) -> bool | None:
        return False if "/forbidden" in url else None


class AsyncRule:
    @hookimpl
    def goat_authorize_egress(self, binding: Binding, url: str) -> Any:
        async def decide() -> bool:
            return True

        return decide()


class Recorder:
    def __init__(self) -> None:
        self.urls: list[str] = []

    @hookimpl
    def goat_authorize_egress(self, binding: Binding, url: str) -> bool | None:
        self.urls.append(url)
        return None


# -- the rule, through the registry -------------------------------------------------------------
@pytest.mark.parametrize(
    "url",
    [
        PREFIX,
        "https://h.example/mcp/goat",
        "https://h.example/mcp/goat/tools?cursor=2",
        "HTTPS://H.EXAMPLE/mcp/goat/x",
    ],
)
def test_default_rule_allows_urls_under_a_bound_prefix(registry: Registry, url: str) -> None:
    assert registry.authorize_egress(BOUND, url) is True
    check_egress(registry, BOUND, url)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://other.example/mcp/goat/", "another host"),
        ("https://h.example.evil.test/mcp/goat/", "a host with the bound host as prefix"),
        ("https://h.example:8443/mcp/goat/", "another port"),
        ("http://h.example/mcp/goat/", "another scheme"),
        ("https://h.example/mcp/goatee", "a sibling path"),
        ("https://h.example/mcp/", "the parent path"),
        ("https://h.example/", "the root"),
        ("https://user:pw@h.example/mcp/goat/", "userinfo"),
        ("https://user@h.example/mcp/goat/", "a user name"),
    ],
)
def test_default_rule_refuses(registry: Registry, url: str, why: str) -> None:
    assert registry.authorize_egress(BOUND, url) is False, why
    with pytest.raises(ProviderUnavailable, match="egress refused by GOAT"):
        check_egress(registry, BOUND, url)


def test_default_rule_refuses_a_binding_without_egress(registry: Registry) -> None:
    assert registry.authorize_egress(Binding(id="global", provider="markdown"), PREFIX) is False


def test_disabled_binding_is_refused(registry: Registry) -> None:
    disabled = BOUND.model_copy(update={"enabled": False})
    assert registry.authorize_egress(disabled, PREFIX) is False
    with pytest.raises(ProviderUnavailable, match="binding 'pen-alpha' is disabled"):
        check_egress(registry, disabled, PREFIX)


def test_a_plugin_returning_false_vetoes(registry: Registry) -> None:
    _with_plugin(registry, Veto(), "veto")
    assert registry.authorize_egress(BOUND, PREFIX + "ok") is True
    assert registry.authorize_egress(BOUND, PREFIX + "forbidden") is False


def test_an_awaitable_returning_plugin_raises_type_error(registry: Registry) -> None:
    _with_plugin(registry, AsyncRule(), "async-rule")
    with pytest.raises(TypeError, match="plugin 'async-rule' returned an awaitable"):
        registry.authorize_egress(BOUND, PREFIX)


def test_check_egress_resolves_dot_segments_and_refuses_encoded_ones(registry: Registry) -> None:
    with pytest.raises(
        ProviderUnavailable, match=r"https://h\.example/mcp/admin is not authorised"
    ):
        check_egress(registry, BOUND, PREFIX + "../admin")
    with pytest.raises(ProviderUnavailable, match="has a dot segment"):
        check_egress(registry, BOUND, PREFIX + "%2E%2e/admin")


def test_check_egress_message_hides_query_and_userinfo(registry: Registry) -> None:
    with pytest.raises(ProviderUnavailable) as info:
        check_egress(registry, BOUND, "https://k:s3cr3t-pass@other.example/x?api_key=s3cr3t-key")
    message = str(info.value)
    assert "s3cr3t" not in message
    assert "https://other.example/x is not authorised for binding 'pen-alpha'" in message


def test_check_egress_refuses_an_invalid_url(registry: Registry) -> None:
    with pytest.raises(ProviderUnavailable, match="the URL is invalid"):
        check_egress(registry, BOUND, "https://[::1/x")


# -- the guarded client -------------------------------------------------------------------------
class Upstream:
    """An ``httpx2.MockTransport`` handler recording what reached the "network"."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.seen.append(str(request.url))
        if request.url.path.endswith("/redirect"):
            return httpx2.Response(302, headers={"location": "https://evil.example/steal"})
        return httpx2.Response(200, json={"ok": True})


@pytest.fixture
def upstream() -> Upstream:
    return Upstream()


def _client(registry: Registry, upstream: Upstream, binding: Binding = BOUND, **kw: Any) -> Any:
    return guarded_http_client(registry, binding, transport=httpx2.MockTransport(upstream), **kw)


@pytest.mark.anyio
async def test_allowed_request_reaches_the_transport(
    registry: Registry, upstream: Upstream
) -> None:
    async with _client(registry, upstream) as client:
        response = await client.post(PREFIX, json={"jsonrpc": "2.0"})
    assert response.status_code == 200
    assert upstream.seen == [PREFIX]


@pytest.mark.anyio
async def test_refused_request_gets_403_and_never_leaves(
    registry: Registry, upstream: Upstream
) -> None:
    async with _client(registry, upstream) as client:
        response = await client.get("https://other.example/mcp/goat/?api_key=k-secret-1")
    assert response.status_code == 403
    assert response.headers[EGRESS_HEADER] == "refused"
    assert response.json() == {
        "error": "egress refused by GOAT: https://other.example/mcp/goat/ is not authorised "
        "for binding 'pen-alpha'"
    }
    assert upstream.seen == []


@pytest.mark.anyio
async def test_every_request_is_asked(registry: Registry, upstream: Upstream) -> None:
    recorder = Recorder()
    _with_plugin(registry, recorder, "recorder")
    async with _client(registry, upstream, base_url=PREFIX) as client:
        await client.get("a")
        await client.get("b")
        await client.get("https://other.example/")
    assert recorder.urls == [PREFIX + "a", PREFIX + "b", "https://other.example/"]
    assert upstream.seen == [PREFIX + "a", PREFIX + "b"]


@pytest.mark.anyio
async def test_each_redirect_hop_is_checked(registry: Registry, upstream: Upstream) -> None:
    async with _client(registry, upstream, follow_redirects=True) as client:
        response = await client.get(PREFIX + "redirect")
    assert response.status_code == 403
    assert upstream.seen == [PREFIX + "redirect"]


@pytest.mark.anyio
async def test_disabled_binding_gets_403(registry: Registry, upstream: Upstream) -> None:
    disabled = BOUND.model_copy(update={"enabled": False})
    async with _client(registry, upstream, disabled) as client:
        response = await client.get(PREFIX)
    assert response.status_code == 403
    assert "binding 'pen-alpha' is disabled" in response.json()["error"]
    assert upstream.seen == []


@pytest.mark.anyio
async def test_vetoed_request_gets_403(registry: Registry, upstream: Upstream) -> None:
    _with_plugin(registry, Veto(), "veto")
    async with _client(registry, upstream) as client:
        assert (await client.get(PREFIX + "forbidden")).status_code == 403
        assert (await client.get(PREFIX + "fine")).status_code == 200
    assert upstream.seen == [PREFIX + "fine"]


@pytest.mark.anyio
async def test_a_failing_check_fails_closed_without_raising(
    registry: Registry, upstream: Upstream
) -> None:
    _with_plugin(registry, AsyncRule(), "async-rule")
    async with _client(registry, upstream) as client:
        response = await client.get(PREFIX)
    assert response.status_code == 403
    assert "egress check failed (TypeError" in response.json()["error"]
    assert upstream.seen == []


def test_client_options_that_would_bypass_the_guard_are_refused(registry: Registry) -> None:
    with pytest.raises(TypeError, match="mounts= would bypass"):
        guarded_http_client(registry, BOUND, mounts={"all://": None})
    with pytest.raises(TypeError, match="verify configure the default transport"):
        guarded_http_client(
            registry, BOUND, transport=httpx2.MockTransport(Upstream()), verify=False
        )


@pytest.mark.anyio
async def test_proxy_goes_through_the_guard(registry: Registry, upstream: Upstream) -> None:
    client = guarded_http_client(registry, BOUND, proxy="http://127.0.0.1:9")
    try:
        assert client._mounts == {}  # nothing mounted beside the guarded transport
        response = await client.get("https://other.example/")
        assert response.status_code == 403
    finally:
        await client.aclose()


# -- loopback: a real server on 127.0.0.1 -------------------------------------------------------
class _Handler(http.server.BaseHTTPRequestHandler):
    seen: list[str]

    def do_GET(self) -> None:
        self.seen.append(self.path)
        body = b'{"hello": "world"}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def loopback() -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []
    handler = type("Handler", (_Handler,), {"seen": seen})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.mark.anyio
async def test_loopback_server_sees_only_allowed_requests(
    registry: Registry, loopback: tuple[str, list[str]]
) -> None:
    base, seen = loopback
    binding = Binding(id="global", provider="remote", egress=(f"{base}/mcp/bank/",))
    async with guarded_http_client(registry, binding, timeout=5) as client:
        allowed = await client.get(f"{base}/mcp/bank/tools")
        refused = await client.get(f"{base}/admin")
    assert allowed.status_code == 200 and allowed.json() == {"hello": "world"}
    assert refused.status_code == 403
    assert seen == ["/mcp/bank/tools"]


# -- nothing connects before an explicit connect ------------------------------------------------
class RemoteSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    base_url: str


class RemoteProvider(Provider):
    def __init__(self, context: ProviderContext) -> None:
        super().__init__(context)
        assert context.http_client is not None
        self.client = context.http_client(base_url=context.settings.base_url)  # type: ignore[attr-defined]

    async def check(self) -> Health:
        response = await self.client.get("mcp/goat/")
        return Health.healthy() if response.status_code == 200 else Health.broken("refused")

    async def close(self) -> None:
        await self.client.aclose()


def _throwaway_spec() -> ProviderSpec:
    spec = ProviderSpec(
        name="throwaway-remote",
        display_name="Throwaway remote",
        version="0",
        capabilities=frozenset({Capability.SHARED_BANK}),
        settings_model=RemoteSettings,
        network=True,
        factory=RemoteProvider,
        egress_urls=lambda settings: [f"{settings.base_url}/mcp/goat/"],
    )
    RemoteProvider.spec = spec
    return spec


@pytest.mark.anyio
async def test_loading_listing_reading_and_building_open_no_connection(
    no_network: list[str], tmp_path: Path
) -> None:
    home = GoatHome.at(tmp_path / "goat")
    save_config(home, load_config(home).with_binding(Scope.global_(), BOUND))

    pm = make_plugin_manager(PluginSettings(autoload=True))  # real entry points
    registry = Registry(pm)
    registry.plugin_infos()
    providers = registry.providers()
    config = load_config(home)

    spec = _throwaway_spec()
    binding = config.selected(Scope.global_())
    assert binding is not None
    settings = spec.settings_model.model_validate({"base_url": "https://h.example"})
    context = ProviderContext(
        scope=Scope.global_(),
        binding=binding,
        settings=settings,
        home=home,
        http_client=functools.partial(guarded_http_client, registry, binding),
    )
    provider = spec.factory(context)
    assert isinstance(provider, RemoteProvider)
    check_egress(registry, binding, "https://h.example/mcp/goat/")
    await provider.close()
    assert no_network == []
    assert isinstance(providers, dict)


@pytest.mark.anyio
async def test_no_network_fixture_catches_a_real_connection_attempt(
    no_network: list[str], registry: Registry
) -> None:
    """Control for the test above: the fixture does see a connection the guard allowed."""
    async with guarded_http_client(registry, BOUND) as client:
        with pytest.raises(httpx2.ConnectError):
            await client.get(PREFIX)
    assert no_network and no_network[0].startswith("getaddrinfo h.example")


@pytest.mark.no_network
def test_no_network_marker_blocks_inet_but_not_unix_sockets() -> None:
    import socket

    with pytest.raises(OSError, match="network access blocked"):
        socket.create_connection(("127.0.0.1", 9))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        with pytest.raises(OSError, match="network access blocked"):
            sock.connect(("127.0.0.1", 9))
    left, right = socket.socketpair(socket.AF_UNIX)
    with left, right:
        left.sendall(b"x")
        assert right.recv(1) == b"x"
