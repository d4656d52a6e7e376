"""goat-redis's own tests: key layout, durability, AUTH, server refusals, settings."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import ValidationError
from redis_faults import RedisFaults
from redis_server import DURABLE, run_redis

from goat_core import AuthError, ProviderUnavailable, ReceiptStatus, Scope, StoreUnwritable
from goat_core.contract import MemoryWrite
from goat_core.host import GoatHome
from goat_core.testing import Fault, spec_factory
from goat_redis.plugin import SPEC, Settings, egress_urls

pytestmark = pytest.mark.anyio

LOOKALIKES = ["a", "ab", "a-b", "a.b", "a_b", "a0"]


def _write(text: str, title: str | None = None) -> MemoryWrite:
    return MemoryWrite(kind="remember", text=text, title=title)


def _factory(tmp_path, url: str, namespace: str, password: str | None = None):
    return spec_factory(
        SPEC,
        GoatHome.at(tmp_path / "home"),
        settings={"url": url, "namespace": namespace},
        get_credential=lambda name: password if name == "api_key" else None,
    )


async def test_every_key_lives_under_its_own_scope_prefix(tmp_path, redis_server, namespace):
    make = _factory(tmp_path, redis_server.url, namespace)
    scopes = [Scope.global_(), *(Scope.pen(p) for p in LOOKALIKES)]
    for scope in scopes:
        provider = await make(scope)
        try:
            await provider.remember(_write(f"shared word, from {scope.key}", title="Same title"))
        finally:
            await provider.close()
    keys = redis_server.cli("--scan", "--pattern", f"{namespace}:*").splitlines()
    prefixes = {f"{namespace}:global:", *(f"{namespace}:pen={p}:" for p in LOOKALIKES)}
    for key in keys:
        owners = [p for p in prefixes if key.startswith(p)]
        assert len(owners) == 1, f"{key} belongs to {owners}"
    assert {p for p in prefixes if any(k.startswith(p) for k in keys)} == prefixes
    for scope in scopes:
        provider = await make(scope)
        try:
            result = await provider.recall("shared word")
            assert [i.text for i in result.items] == [f"shared word, from {scope.key}"]
        finally:
            await provider.close()


async def test_titled_writes_append_to_one_page(tmp_path, redis_server, namespace):
    provider = await _factory(tmp_path, redis_server.url, namespace)(Scope.pen("docs"))
    try:
        first = await provider.remember(_write("We ship on Thursdays", title="Release rhythm"))
        second = await provider.remember(_write("Freeze on Wednesdays", title="RELEASE RHYTHM"))
        assert first.id == second.id
        page = await provider.get_page("release rhythm")
        assert "Thursdays" in page.body and "Freeze on Wednesdays" in page.body
        assert [p.title for p in (await provider.list_pages()).items] == ["Release rhythm"]
    finally:
        await provider.close()


async def test_a_half_sent_write_is_unknown_and_did_not_land(tmp_path, redis_server, namespace):
    provider = await _factory(tmp_path, redis_server.url, namespace)(Scope.global_())
    try:
        await provider.remember(_write("warm-up"))  # connected, durability known
        with RedisFaults().inject(Fault.DROP_CONNECTION, provider):
            receipt = await provider.remember(_write("never complete"))
        assert receipt.status is ReceiptStatus.UNKNOWN and receipt.reason
        assert (await provider.recall("never complete")).items == ()
    finally:
        await provider.close()


async def test_a_server_that_does_not_fsync_takes_no_writes(tmp_path, namespace):
    with run_redis(tmp_path / "plain") as server:  # no AOF: an answer is not durability
        provider = await _factory(tmp_path, server.url, namespace)(Scope.global_())
        try:
            health = await provider.check()
            assert not health.ok and health.cause == "incompatible"
            with pytest.raises(ProviderUnavailable, match="appendfsync"):
                await provider.remember(_write("not durable here"))
            assert server.cli("DBSIZE").strip() == "0"
        finally:
            await provider.close()


async def test_password_comes_from_the_credential_store(tmp_path, namespace):
    with run_redis(tmp_path / "auth", *DURABLE, password="s3cret-pass") as server:
        for wrong in (None, "nope"):
            provider = await _factory(tmp_path, server.url, namespace, wrong)(Scope.global_())
            try:
                health = await provider.check()
                assert not health.ok and health.cause == "auth", health
                assert "s3cret-pass" not in health.reason
                with pytest.raises(AuthError):
                    await provider.recall("anything")
            finally:
                await provider.close()
        provider = await _factory(tmp_path, server.url, namespace, "s3cret-pass")(Scope.global_())
        try:
            assert (await provider.check()).ok
            assert (await provider.remember(_write("behind AUTH"))).status is ReceiptStatus.STORED
            other = await _factory(tmp_path, server.url, namespace, "other")(Scope.global_())
            assert provider.transport_fingerprint() != other.transport_fingerprint()
            assert "s3cret-pass" not in provider.transport_fingerprint()
            await other.close()
        finally:
            await provider.close()


async def test_out_of_memory_is_store_unwritable_and_reads_go_on(tmp_path, namespace):
    with run_redis(tmp_path / "oom", *DURABLE) as server:
        provider = await _factory(tmp_path, server.url, namespace)(Scope.global_())
        try:
            await provider.remember(_write("kept before the limit"))
            server.cli("CONFIG", "SET", "maxmemory", "1")
            with pytest.raises(StoreUnwritable):
                await provider.remember(_write("over the limit"))
            assert [i.text for i in (await provider.recall("limit")).items] == [
                "kept before the limit"
            ]
        finally:
            await provider.close()


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1",  # no port
        "redis://127.0.0.1:6379/0",  # a path
        "redis://:pw@127.0.0.1:6379",  # a secret in settings
        "redis://cache.example.com:6379",  # plain text off loopback
        "http://127.0.0.1:6379",
    ],
)
def test_settings_refuse(url):
    with pytest.raises(ValidationError):
        Settings(url=url)


def test_settings_name_exactly_one_server():
    settings = Settings(url="rediss://cache.example.com:6380/", namespace="team")
    assert egress_urls(settings) == ["rediss://cache.example.com:6380"]
    assert egress_urls(Settings(url="redis://[::1]:6379")) == ["redis://[::1]:6379"]
    with pytest.raises(ValidationError):
        Settings(url="redis://127.0.0.1:6379", namespace="a:b")
    with pytest.raises(ValidationError):
        Settings(url="redis://127.0.0.1:6379", extra=1)


def test_plugin_module_is_cheap_to_import():
    code = (
        "import sys, goat_redis.plugin; "
        "assert 'goat_redis.provider' not in sys.modules, 'provider imported eagerly'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
