"""Secrets on failure paths (docs/authors.md, Secrets on failure paths).

A provider that connects and holds a credential is made to fail three ways:

- ``refused``: nothing listens at the address (:func:`refused_url`);
- ``wrong_credential``: the server refuses the credential :attr:`goat_secret` gives;
- ``closed``: the server accepts the connection and closes it (:func:`closing_server`).

Its test class returns one factory per way from ``goat_connection_failures``. The suite
calls ``check``, ``recall`` and ``remember`` (and ``list_pages`` with ``pages``) on each, and
fails if the credential shows in any error (its text, repr, causes and traceback), health
reason, receipt, log line or the provider's repr, in any form
(:func:`goat_core.logs.secret_forms`: raw, URL- or JSON-escaped, base64, ``Bearer``; and
hex, or its first or last half, at least 8 characters).
"""

from __future__ import annotations

import logging
import socket
import threading
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pytest

from goat_core.contract import Capability, Health, MemoryWrite, ProviderSpec, Scope
from goat_core.errors import GoatError
from goat_core.testing.conformance.base import ConformanceBase, ProviderFactory

__all__ = ["FAILURES", "SecretTests", "closing_server", "refused_url"]

#: The ways a connection fails, in the order the tests run them.
FAILURES = ("refused", "wrong_credential", "closed")


def refused_url(scheme: str = "http") -> str:
    """``scheme://127.0.0.1:PORT`` where nothing listens (a port just freed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"{scheme}://127.0.0.1:{port}"


@contextmanager
def closing_server(
    scheme: str = "http", answer: Callable[[bytes], bytes] | None = None
) -> Iterator[str]:
    """A loopback server that accepts each connection, reads what arrives for a moment and
    closes it: unanswered, or after ``answer(received)`` (a refusal that quotes the request,
    as a hostile server may). Yields ``scheme://127.0.0.1:PORT``."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.2)
    done = threading.Event()

    def serve() -> None:
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(0.2)
                try:
                    received = conn.recv(65536)
                    if answer is not None:
                        conn.sendall(answer(received))
                except OSError:
                    pass

    thread = threading.Thread(target=serve, name="goat-closing-server", daemon=True)
    thread.start()
    try:
        yield f"{scheme}://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        done.set()
        thread.join()
        listener.close()


def _texts(exc: BaseException) -> list[str]:
    """Every text an error shows: message, repr, args, causes, the formatted traceback."""
    out = ["".join(traceback.format_exception(exc))]
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        out += [str(current), repr(current), *(repr(a) for a in current.args)]
        out += [repr(v) for v in vars(current).values()] if hasattr(current, "__dict__") else []
        current = current.__cause__ or current.__context__
    return out


class SecretTests(ConformanceBase):
    """Mixed into :class:`~goat_core.testing.ProviderConformanceTests`."""

    @pytest.fixture
    def goat_secret(self) -> str:
        """The credential the failing providers hold: unique per test, with characters that
        URL and JSON escaping change (``/``, ``+``, ``%``, ``=``)."""
        return f"gs-{uuid.uuid4().hex[:16]}/+%="

    @pytest.fixture
    def goat_connection_failures(self, goat_secret: str) -> Mapping[str, ProviderFactory] | None:
        """Override for a provider with ``network=True`` and a credential: return
        ``{failure: factory}`` for each of :data:`FAILURES`, every factory's
        ``get_credential`` giving ``goat_secret`` (``spec_factory(..., get_credential=...)``
        with :func:`refused_url`, :func:`closing_server` or a real server)."""
        return None

    @pytest.mark.parametrize("failure", FAILURES)
    async def test_credential_never_shown_on_failure(
        self,
        goat_spec: ProviderSpec,
        goat_connection_failures: Mapping[str, ProviderFactory] | None,
        goat_secret: str,
        failure: str,
        caplog: pytest.LogCaptureFixture,
        capfd: pytest.CaptureFixture[str],
    ) -> None:
        """On a refused connection, a refused credential and a closed connection, the
        credential shows nowhere: errors, health, receipts, logs, reprs.

        Troubleshooting: build error messages from the URL without its userinfo and from
        the server's reply with the credential removed; never format the request, its
        headers or the driver's connection string into an error.
        """
        spec = goat_spec
        if not spec.network or not spec.credentials:
            pytest.skip(
                f"provider {spec.name!r} declares no network use or no credential, so there "
                "is no connection that could show one"
            )
        if goat_connection_failures is None or failure not in goat_connection_failures:
            pytest.fail(
                f"provider {spec.name!r} connects with a credential, so its test class must "
                f"return a {failure!r} factory from goat_connection_failures "
                "(docs/authors.md, Secrets on failure paths)",
                pytrace=False,
            )
        caplog.set_level(logging.DEBUG)
        shown: list[str] = []
        health: Health | None = None
        provider = await goat_connection_failures[failure](Scope.global_())
        try:
            shown.append(repr(provider))
            health = await provider.check()
            shown += [health.reason or "", repr(health)]
            for name, call in self._calls(spec, provider):
                try:
                    answer = await call()
                except GoatError as exc:
                    shown += _texts(exc)
                except Exception as exc:
                    raise AssertionError(
                        f"a LIE: under a {failure} connection, {name} raised an untyped "
                        f"{type(exc).__name__}; raise a GoatError (ProviderUnavailable, "
                        "AuthError)"
                    ) from exc
                else:
                    shown.append(repr(answer))
        finally:
            await provider.close()
        out, err = capfd.readouterr()
        shown += [caplog.text, out, err]
        assert health is not None and not health.ok, (
            f"a LIE: under a {failure} connection, check() answered healthy: the failure path "
            "was not taken (does the fixture's factory really fail?)"
        )
        if failure == "wrong_credential":
            assert health.cause == "auth", (
                f"a LIE: a refused credential gave health cause {health.cause!r}; it is 'auth' "
                "(raise AuthError, or Health.from_error of one)"
            )
        self._assert_hidden(goat_secret, "\n".join(shown), failure)

    @staticmethod
    def _calls(spec: ProviderSpec, provider: Any) -> list[tuple[str, Any]]:
        calls = [
            ("recall", lambda: provider.recall("probe", limit=5)),
            ("remember", lambda: provider.remember(MemoryWrite(text="probe", source="t"))),
            ("check again", provider.check),  # a later check's reason counts too
        ]
        if spec.supports(Capability.PAGES):
            calls += [
                ("list_pages", lambda: provider.list_pages(limit=5)),
                ("get_page", lambda: provider.get_page("probe")),
                ("forget", lambda: provider.forget("probe")),
            ]
        if spec.supports(Capability.FEEDBACK):
            write = MemoryWrite(kind="feedback", text="probe", source="t")
            calls.append(("feedback", lambda: provider.feedback(write)))
        return calls

    @staticmethod
    def _assert_hidden(secret: str, text: str, failure: str) -> None:
        from goat_core.logs import secret_forms

        half = max(8, len(secret) // 2)
        forms = {*secret_forms(secret), secret[:half], secret[-half:]}
        raw = secret.encode()
        forms |= {raw.hex(), raw.hex().upper()}
        for form in sorted(forms, key=len, reverse=True):
            at = text.find(form)
            assert at < 0, (
                f"a LEAK: under a {failure} connection the credential shows as {form!r}: "
                f"...{text[max(0, at - 80) : at + len(form) + 40]}..."
            )
