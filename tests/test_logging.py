"""goat_core.logs: the CLI's structlog configuration never renders a secret."""

from __future__ import annotations

import asyncio
import http.server
import io
import json
import logging
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from hypothesis import given
from hypothesis import strategies as st

from goat_core import logs
from goat_core.errors import AuthError, BadInput
from goat_core.host import GoatHome
from goat_core.logs import REDACTED, RedactSecrets, configure, get_logger, register_secret


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    structlog.reset_defaults()
    structlog.contextvars.clear_contextvars()
    root.handlers[:] = handlers
    root.setLevel(level)


def _sentinel() -> str:
    return f"sk-sentinel-{uuid.uuid4().hex}"


def _log_failing_authenticated_call(key: str) -> None:
    """What a remote provider's failing call logs: request headers, an httpx2 line with the
    key in the query string, and an exception whose message contains the key."""
    log = get_logger("goat_hindsight", binding="pen-x")
    structlog.contextvars.bind_contextvars(request_key=key)
    log.info(
        "mcp.request",
        headers={"Authorization": f"Bearer {key}", "Accept": "application/json"},
        nested=[{"x-api-key": key}],
    )
    logging.getLogger("httpx2").warning(
        "HTTP Request: %s %s", "POST", f"https://h.example/mcp/b/?api_key={key} 401"
    )
    try:
        raise RuntimeError(f"server rejected key {key}")
    except RuntimeError:
        log.exception("mcp.failed", note=f"Authorization: Bearer {key}")
    try:
        raise ConnectionError(f"token={key}")
    except ConnectionError:
        logging.getLogger("mcp.client").exception("stdlib failure with %s", "context")
    structlog.contextvars.clear_contextvars()


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "console"])
def test_failing_authenticated_call_renders_no_secret(restore_logging: None, as_json: bool) -> None:
    key = _sentinel()
    register_secret(key)
    out = io.StringIO()
    configure(json=as_json, level="info", stream=out)
    _log_failing_authenticated_call(key)
    text = out.getvalue()
    assert key not in text
    # the lines were really rendered: the events, the traceback and the redaction marker
    for expected in ("mcp.request", "HTTP Request", "mcp.failed", "RuntimeError", REDACTED):
        assert expected in text
    assert "stdlib failure with context" in text and "ConnectionError" in text
    if as_json:
        lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
        request = next(line for line in lines if line["event"] == "mcp.request")
        assert request["headers"] == {"Authorization": REDACTED, "Accept": "application/json"}
        assert request["binding"] == "pen-x"


class _RefusingServer(http.server.BaseHTTPRequestHandler):
    """Answers every POST with 401 and echoes the Authorization header it got (as careless
    servers do), so the key is in the response text the provider puts in its error."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        body = json.dumps(
            {"error": "invalid credentials", "got": self.headers.get("Authorization", "")}
        ).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("WWW-Authenticate", 'Bearer realm="bank"')
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        return


@pytest.fixture
def refusing_server() -> Iterator[str]:
    """A loopback HTTP server on 127.0.0.1:<free port>; yields its base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _RefusingServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def debug_http_loggers() -> Iterator[None]:
    names = ("httpx2", "httpcore2")
    levels = {name: logging.getLogger(name).level for name in names}
    for name in names:
        logging.getLogger(name).setLevel(logging.DEBUG)
    yield
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "console"])
def test_real_failing_authenticated_call_logs_no_secret(
    restore_logging: None,
    debug_http_loggers: None,
    refusing_server: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    as_json: bool,
) -> None:
    """The logs of a failing authenticated call hold no secret (docs/design.md, Credentials
    and egress).

    The key takes the real path (credential store -> provider -> guarded httpx2 client ->
    loopback server answering 401 with the key echoed); httpx2/httpcore2 log at DEBUG; the
    provider raises AuthError with the response text and logs it with exc_info.
    """
    from goat_core.contract import Binding
    from goat_core.host import CredentialStore, guarded_http_client
    from goat_core.plugins import PluginSettings, Registry, make_plugin_manager

    monkeypatch.setattr(CredentialStore, "_keyring", lambda self: None)
    home = GoatHome.at(tmp_path / "home")
    binding = Binding(id="pen-x", provider="remote", egress=(refusing_server,))
    CredentialStore(home).set(binding.id, "api_key", _sentinel())
    out = io.StringIO()
    configure(json=as_json, level="debug", stream=out)
    key = CredentialStore(home).get(binding.id, "api_key")  # what a provider's context does
    assert key is not None
    registry = Registry(make_plugin_manager(PluginSettings(autoload=False)))
    log = get_logger("goat_remote", binding=binding.id)

    async def call() -> None:
        headers = {"Authorization": f"Bearer {key}"}
        async with guarded_http_client(registry, binding, headers=headers, timeout=10) as client:
            response = await client.post(f"{refusing_server}mcp", json={"method": "recall"})
        if response.status_code == 401:
            raise AuthError(f"the server refused the API key (401): {response.text}")

    with pytest.raises(AuthError) as caught:
        try:
            asyncio.run(call())
        except AuthError:
            log.exception("remote.call_failed", url=f"{refusing_server}mcp")
            logging.getLogger("goat_remote.stdlib").error("call failed", exc_info=True)
            raise
    assert key in str(caught.value)  # the secret really was in the error being logged
    text = out.getvalue()
    assert key not in text
    # the real traffic was logged: httpx2's request line, httpcore2's debug trace, the error
    assert "HTTP Request: POST" in text and "401" in text
    assert "send_request_headers" in text
    assert "remote.call_failed" in text and "AuthError" in text and "call failed" in text
    assert REDACTED in text
    if as_json:
        lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
        failed = next(line for line in lines if line["event"] == "remote.call_failed")
        assert failed["binding"] == "pen-x" and "AuthError" in failed["exception"]


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "console"])
def test_unregistered_key_is_caught_by_key_names_and_patterns(
    restore_logging: None, as_json: bool
) -> None:
    key = _sentinel()  # never registered: only key names and text patterns can catch it
    out = io.StringIO()
    configure(json=as_json, level="info", stream=out)
    log = get_logger("x")
    log.info("call", api_key=key, Authorization=f"Bearer {key}", cookie=key)
    log.info("url", url=f"https://h.example/mcp?token={key}&x=1")
    log.info("header line", line=f"X-API-Key: {key}")
    logging.getLogger("httpcore2").warning("auth: Bearer %s", key)
    text = out.getvalue()
    assert key not in text
    assert text.count(REDACTED) >= 6


def test_level_filters_and_default_stream_is_stderr(
    restore_logging: None, capsys: pytest.CaptureFixture[str]
) -> None:
    configure(level="warning")
    get_logger("x").info("hidden.info")
    get_logger("x").warning("shown.warning")
    logging.getLogger("httpx2").info("hidden stdlib info")
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "shown.warning" in captured.err
    assert "hidden" not in captured.err


def test_configure_twice_keeps_one_handler(restore_logging: None) -> None:
    first, second = io.StringIO(), io.StringIO()
    configure(stream=first)
    configure(json=True, stream=second)
    logging.getLogger("mcp").warning("once")
    assert first.getvalue() == ""
    assert second.getvalue().count('"once"') == 1


def test_unknown_level_is_bad_input(restore_logging: None) -> None:
    with pytest.raises(BadInput, match="unknown log level 'loud'"):
        configure(level="loud")


def test_redactor_blanks_objects_whose_repr_holds_a_secret() -> None:
    key = _sentinel()
    redact = RedactSecrets([key])

    class Holder:
        def __repr__(self) -> str:
            return f"Holder({key})"

    out = redact(None, "info", {"event": "x", "obj": Holder(), "raw": key.encode()})
    assert key not in repr(out)
    assert out["obj"] == f"Holder({REDACTED})"


def test_redactor_formats_leftover_exc_info() -> None:
    key = _sentinel()
    redact = RedactSecrets([key])
    try:
        raise ValueError(key)
    except ValueError as exc:
        out = redact(None, "error", {"event": "x", "exc_info": exc})
    assert "exc_info" not in out
    assert "ValueError" in out["exception"] and key not in out["exception"]


def test_short_values_are_not_registered() -> None:
    redact = RedactSecrets(["abc"])
    assert redact.scrub_text("abc def") == "abc def"


@given(
    prefix=st.text(max_size=20),
    suffix=st.text(max_size=20),
    key=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=8, max_size=40),
)
def test_registered_secret_never_survives_scrubbing(prefix: str, suffix: str, key: str) -> None:
    redact = RedactSecrets([key])
    text = redact.scrub_text(prefix + key + suffix)
    assert key not in text


def test_register_secret_feeds_the_process_redactor() -> None:
    key = _sentinel()
    register_secret(key)
    assert key not in logs._REDACTOR.scrub_text(f"plain text {key} here")


_UNCONFIGURED_HOST = """
import logging, sys
from goat_core.logs import get_logger, register_secret

log = get_logger("goat_hindsight.client")  # created at import time, as modules do
register_secret("sk-host-secret-7788")
log.warning("hindsight.disconnected", reason="HTTP 401 for sk-host-secret-7788",
            headers={"Authorization": "Bearer sk-host-secret-7788"})
log.info("hidden.by.default")
try:
    raise RuntimeError("server said: bad key sk-host-secret-7788")
except RuntimeError:
    log.exception("request.failed")
if sys.argv[1] == "configured":
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="HOST %(name)s %(message)s")
    log.bind(scope="pen:a").info("now.shown")
print("HOST-OUTPUT")
"""


@pytest.mark.parametrize("mode", ["bare", "configured"])
def test_an_unconfigured_host_never_gets_log_lines_on_stdout(mode: str) -> None:
    """A host that configured no structlog (an MCP server on stdio, say) keeps stdout for
    itself: GOAT's lines go to stdlib logging (stderr by default, the host's handlers when
    it has some), redacted as under the CLI."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", _UNCONFIGURED_HOST, mode],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "HOST-OUTPUT\n"
    assert "hindsight.disconnected" in proc.stderr and "HTTP 401" in proc.stderr
    assert "sk-host-secret-7788" not in proc.stderr and REDACTED in proc.stderr
    assert "hidden.by.default" not in proc.stderr  # below the default WARNING
    assert "request.failed" in proc.stderr and "RuntimeError: server said: bad key" in proc.stderr
    assert proc.stderr.count("Traceback") == 1  # rendered once, redacted, not re-attached
    if mode == "configured":
        assert "HOST goat_hindsight.client event='now.shown' scope='pen:a'" in proc.stderr


def test_redact_covers_every_form_a_server_may_echo() -> None:
    """docs/design.md, Credentials and egress: the key, its whole header value and its
    URL-encoded form; GOAT's own words ("a bearer token is required") stay readable."""
    from urllib.parse import quote

    from goat_core.logs import redact, register_secret

    key = "rk-echo/Key+3=aB!c9"
    register_secret(key)
    echoed = f"Authorization: Bearer {key}; url ?k={quote(key, safe='')} {quote(key)}"
    out = redact(echoed)
    assert key not in out and quote(key, safe="") not in out and quote(key) not in out
    assert out.count("[REDACTED]") == 3
    assert redact("a bearer token is required") == "a bearer token is required"
    assert redact("Bearer other-token-123") == "Bearer [REDACTED]"


def test_console_lines_show_control_characters_from_values(restore_logging: None) -> None:
    """A vault path holding an OSC "set window title" sequence is logged visibly on the
    console, never sent to the terminal; JSON lines keep the exact value (JSON escapes it)."""
    name = "unp\x1b]0;T\x1b\\.md"
    out = io.StringIO()
    configure(level="info", stream=out)
    get_logger("x").warning("markdown.note_unparsable", path=name)
    logging.getLogger("httpx2").warning("stdlib %s", name)
    text = out.getvalue()
    assert "\x1b" not in text
    assert text.count("unp\u241b]0;T\u241b\\.md") == 2
    out = io.StringIO()
    configure(json=True, level="info", stream=out)
    get_logger("x").warning("markdown.note_unparsable", path=name)
    assert json.loads(out.getvalue())["path"] == name


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: boom SECRET_TOKEN={k} mid-way",
        "GITHUB_TOKEN: {k}",
        "env MY-API-KEY={k}",
        "db_password={k};",
        "OPENAI_API_KEY = {k}",
        "client_secret={k}",
    ],
)
def test_prefixed_credential_names_are_blanked_in_text(text: str) -> None:
    """A credential named with a prefix (``SECRET_TOKEN=``, ``GITHUB_TOKEN:``), as an
    embedder's or a server's error text may carry it, is blanked like ``token=``; words that
    only contain such a name (``max_tokens=``, ``tokenizer=``) are left alone."""
    key = _sentinel()
    scrubbed = RedactSecrets().scrub_text(text.format(k=key))
    assert key not in scrubbed and REDACTED in scrubbed


def test_words_containing_a_credential_name_are_not_blanked() -> None:
    text = "max_tokens=100 tokenizer=fast passwords_checked=3"
    assert RedactSecrets().scrub_text(text) == text
