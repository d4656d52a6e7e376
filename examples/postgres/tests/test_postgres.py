"""goat-postgres's own tests: row layout, bound text, passwords, durability, lost writes,
settings."""

from __future__ import annotations

import time

import pytest
from pg_faults import PgFaults
from pg_server import GUARDED
from pydantic import ValidationError

from goat_core import (
    AuthError,
    BadInput,
    CredentialError,
    NotFound,
    ProviderUnavailable,
    ReceiptStatus,
    Scope,
    StoreUnwritable,
)
from goat_core.contract import MemoryWrite
from goat_core.host import GoatHome
from goat_core.testing import Fault, spec_factory
from goat_postgres.plugin import SPEC, Settings, egress_urls

pytestmark = pytest.mark.anyio

LOOKALIKES = ["a", "ab", "a-b", "a.b", "a_b", "a0"]


def _write(text: str, title: str | None = None) -> MemoryWrite:
    return MemoryWrite(kind="remember", text=text, title=title)


def _factory(tmp_path, url: str, namespace: str, password: str | None = None, **settings):
    return spec_factory(
        SPEC,
        GoatHome.at(tmp_path / "home"),
        settings={"url": url, "namespace": namespace, **settings},
        get_credential=lambda name: password if name == "password" else None,
    )


def _count(pg_server, namespace: str) -> int:
    rows = pg_server.sql("SELECT count(*) FROM goat_notes WHERE namespace = %s", (namespace,))
    return int(rows[0][0])  # type: ignore[arg-type]


def _landed(pg_server, namespace: str, want: int, within_s: float = 10.0) -> bool:
    """Whether the count reaches ``want`` within ``within_s`` seconds (polled every 50 ms)."""
    deadline = time.monotonic() + within_s
    while _count(pg_server, namespace) != want:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


async def test_every_row_carries_its_own_namespace_and_scope(tmp_path, pg_server, namespace):
    make = _factory(tmp_path, pg_server.url, namespace)
    scopes = [Scope.global_(), *(Scope.pen(p) for p in LOOKALIKES)]
    for scope in scopes:
        provider = await make(scope)
        try:
            await provider.remember(_write(f"shared word, from {scope.key}", title="Same title"))
        finally:
            await provider.close()
    rows = pg_server.sql(
        "SELECT scope, count(*) FROM goat_notes WHERE namespace = %s GROUP BY scope", (namespace,)
    )
    assert dict(rows) == {scope.key: 1 for scope in scopes}
    for scope in scopes:
        provider = await make(scope)
        try:
            result = await provider.recall("shared word")
            assert [i.text for i in result.items] == [f"shared word, from {scope.key}"]
        finally:
            await provider.close()


async def test_hostile_text_is_stored_as_text(tmp_path, pg_server, namespace):
    hostile = "x'); DROP TABLE goat_notes; -- $1 %s %(q)s {} \\ `tick`"
    provider = await _factory(tmp_path, pg_server.url, namespace)(Scope.pen("docs"))
    try:
        receipt = await provider.remember(_write(hostile, title="'; DELETE FROM goat_notes; --"))
        assert receipt.status is ReceiptStatus.STORED
        page = await provider.get_page("'; DELETE FROM goat_notes; --")
        assert page.body == hostile
        assert [i.id for i in (await provider.recall("DROP TABLE")).items] == [receipt.id]
    finally:
        await provider.close()
    assert _count(pg_server, namespace) == 1


async def test_a_password_role_needs_its_password(tmp_path, pg_server, namespace):
    scope = Scope.global_()
    right = await _factory(tmp_path, pg_server.url, namespace, pg_server.password, user=GUARDED)(
        scope
    )
    wrong = await _factory(tmp_path, pg_server.url, namespace, "not-it", user=GUARDED)(scope)
    missing = await _factory(tmp_path, pg_server.url, namespace, None, user=GUARDED)(scope)
    try:
        assert (await right.check()).ok
        assert (await right.remember(_write("needs a password"))).status is ReceiptStatus.STORED
        for provider, error in ((wrong, AuthError), (missing, CredentialError)):
            health = await provider.check()
            assert not health.ok and health.cause == "auth", health
            with pytest.raises(error):
                await provider.remember(_write("never stored"))
    finally:
        for provider in (right, wrong, missing):
            await provider.close()
    assert _count(pg_server, namespace) == 1


async def test_pgpassword_in_the_environment_is_never_used(
    tmp_path, pg_server, namespace, monkeypatch
):
    monkeypatch.setenv("PGPASSWORD", pg_server.password)  # libpq's own fallback
    provider = await _factory(tmp_path, pg_server.url, namespace, None, user=GUARDED)(
        Scope.global_()
    )
    try:
        assert (await provider.check()).cause == "auth"
    finally:
        await provider.close()


async def test_a_server_without_fsync_refuses_every_write(tmp_path, pg_server, namespace):
    make = _factory(tmp_path, pg_server.url, namespace)
    pg_server.sql("ALTER SYSTEM SET fsync = off")
    pg_server.sql("SELECT pg_reload_conf()")
    try:
        time.sleep(0.5)  # the server rereads its configuration
        provider = await make(Scope.global_())
        try:
            health = await provider.check()
            assert health.cause == "incompatible" and "fsync" in health.reason, health
            with pytest.raises(ProviderUnavailable, match="nothing sent"):
                await provider.remember(_write("never stored"))
        finally:
            await provider.close()
    finally:
        pg_server.sql("ALTER SYSTEM RESET fsync")
        pg_server.sql("SELECT pg_reload_conf()")
        time.sleep(0.5)
    assert _count(pg_server, namespace) == 0


async def test_a_half_sent_write_lands_nothing(tmp_path, pg_server, namespace):
    provider = await _factory(tmp_path, pg_server.url, namespace)(Scope.global_())
    faults = PgFaults()
    try:
        await provider.check()  # connected, table in place
        with faults.inject(Fault.DROP_CONNECTION, provider):
            with pytest.raises(ProviderUnavailable, match="nothing was stored"):
                await provider.remember(_write("cut half-way"))
        assert faults.dropped_writes == 1
        assert (await provider.recall("half")).items == ()
    finally:
        await provider.close()
    assert _count(pg_server, namespace) == 0


async def test_a_commit_whose_answer_is_lost_is_unknown(tmp_path, pg_server, namespace):
    provider = await _factory(tmp_path, pg_server.url, namespace)(Scope.global_())
    try:
        with PgFaults().inject(Fault.WRITE_AFTER_SEND, provider):
            receipt = await provider.remember(_write("committed, answer lost"))
        assert receipt.status is ReceiptStatus.UNKNOWN, receipt
        assert receipt.reason and "COMMIT" in receipt.reason
    finally:
        await provider.close()
    # the client met the end of its read at once; the server runs the COMMIT it was sent
    # in its own time, so the row is awaited (10 s) rather than counted at once
    assert _landed(pg_server, namespace, 1)  # it did land: "unknown" was the honest answer


async def test_a_missing_database_is_not_found(tmp_path, pg_server, namespace):
    provider = await _factory(tmp_path, pg_server.url, namespace, database="nowhere")(
        Scope.global_()
    )
    try:
        health = await provider.check()
        assert health.cause == "not_found", health
    finally:
        await provider.close()


async def test_the_fingerprint_never_holds_the_password(tmp_path, pg_server, namespace):
    secret = "a-secret-password"
    make = _factory(tmp_path, pg_server.url, namespace, secret, user=GUARDED)
    provider = await make(Scope.global_())
    other = await _factory(tmp_path, pg_server.url, namespace, "another", user=GUARDED)(
        Scope.global_()
    )
    try:
        assert secret not in provider.transport_fingerprint()
        assert secret not in repr(provider) + repr(provider.transport)
        assert provider.transport_fingerprint() != other.transport_fingerprint()
    finally:
        await provider.close()
        await other.close()


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:5432",
        "postgresql://127.0.0.1",
        "postgresql://127.0.0.1:5432/goat",
        "postgresql://goat:pw@127.0.0.1:5432",
        "postgresql://127.0.0.1:5432?sslmode=disable",
    ],
)
def test_settings_refuse_what_is_not_a_server(url):
    with pytest.raises(ValidationError):
        Settings(url=url)


def test_settings_need_tls_off_loopback():
    with pytest.raises(ValidationError, match="TLS"):
        Settings(url="postgresql://db.example.com:5432", sslmode="disable")
    assert Settings(url="postgresql://db.example.com:5432").effective_sslmode == "verify-full"
    assert Settings(url="postgresql://127.0.0.1:5432").effective_sslmode == "disable"
    assert Settings(url="postgres://[::1]:5432").url == "postgresql://[::1]:5432"


def test_a_bind_authorises_exactly_its_server():
    settings = Settings(url="postgresql://127.0.0.1:5433", namespace="n")
    assert egress_urls(settings) == ["postgresql://127.0.0.1:5433"]


async def test_a_full_disk_is_store_unwritable_and_leaves_no_trigger(
    tmp_path, pg_server, namespace
):
    provider = await _factory(tmp_path, pg_server.url, namespace)(Scope.global_())
    try:
        with PgFaults().inject(Fault.DISK_FULL, provider):
            with pytest.raises(StoreUnwritable) as caught:
                await provider.remember(_write("never stored"))
        assert caught.value.reason == "full"
        assert (await provider.remember(_write("stored after"))).status is ReceiptStatus.STORED
    finally:
        await provider.close()
    assert pg_server.sql(
        "SELECT count(*) FROM pg_trigger WHERE tgname = 'goat_test_disk_full'"
    ) == [(0,)]
    assert _count(pg_server, namespace) == 1


async def test_a_nul_character_is_bad_input(tmp_path, pg_server, namespace):
    provider = await _factory(tmp_path, pg_server.url, namespace)(Scope.global_())
    try:
        with pytest.raises(BadInput):
            await provider.remember(_write("a\0b"))
        with pytest.raises(NotFound):
            await provider.get_page("a\0b")
    finally:
        await provider.close()
    assert _count(pg_server, namespace) == 0
