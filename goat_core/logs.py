"""Logging: structlog for everything, with secrets redacted before anything is rendered.

Libraries (goat_core and plugins) only call :func:`get_logger`. The ``goat`` CLI calls
:func:`configure` once, which sets up this chain (docs/design.md, Credentials and egress)::

    merge_contextvars -> add_log_level -> TimeStamper(utc) -> format_exc_info
        -> RedactSecrets -> JSONRenderer | ConsoleRenderer

``format_exc_info`` runs *before* the redactor because ``ConsoleRenderer`` would otherwise
format a traceback itself after every processor ran, leaking secrets in exception messages
(verified with structlog 26.1). Records of stdlib loggers (httpx2, httpcore2, mcp, uvicorn)
go through ``structlog.stdlib.ProcessorFormatter`` with the same redactor.

:class:`RedactSecrets` blanks the values of sensitive keys (``api_key``, ``authorization``,
``token``, ``password``, ``secret``, ``cookie``, ``x-api-key``, ...) at any depth, replaces
every value passed to :func:`register_secret` wherever it appears, and scrubs
``Bearer <x>``, ``Basic <x>`` and ``api_key=<x>`` / ``token=<x>`` / ``password: <x>`` in text.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import sys
import threading
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

# structlog is imported where it is used: the goat command's fast path never needs it

__all__ = [
    "LEVELS",
    "REDACTED",
    "SENSITIVE_KEYS",
    "RedactSecrets",
    "configure",
    "get_logger",
    "redact",
    "redact_all",
    "register_secret",
    "secret_forms",
    "visible_controls",
]

#: What a redacted value is replaced with.
REDACTED = "[REDACTED]"

#: Key names whose values are always blanked (compared lowercased, ``-`` read as ``_``).
SENSITIVE_KEYS = frozenset(
    {
        "api_key",
        "apikey",
        "x_api_key",
        "authorization",
        "proxy_authorization",
        "token",
        "access_token",
        "refresh_token",
        "id_token",
        "auth_token",
        "password",
        "passwd",
        "secret",
        "client_secret",
        "cookie",
        "set_cookie",
    }
)

#: Level names :func:`configure` accepts.
LEVELS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}

#: Libraries whose stdlib records are routed through the redacting formatter.
_STDLIB_LOGGERS = ("httpx2", "httpcore2", "httpx", "httpcore", "mcp", "uvicorn")

_BEARER = re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]+")
#: A header value that is a credential, not a word ("a bearer token is required"): at least
#: 8 characters with a digit or punctuation.
_BEARER_VALUE = re.compile(
    r"(?i)\b(bearer|basic)(\s+)(?=[A-Za-z]*[0-9._~+/=-])[A-Za-z0-9._~+/=-]{8,}"
)
_KEY_VALUE = re.compile(
    r"(?i)\b((?:[a-z0-9]+[_-])*(?:(?:x[_-])?api[_-]?key|(?:access_|refresh_|auth_|id_)?token|"
    r"password|passwd|(?:client_)?secret))(\s*[=:]\s*)([^\s,;'\"&]+)"
)
_MIN_SECRET_LENGTH = 4
_MAX_DEPTH = 12
_PASS_THROUGH_KEYS = frozenset({"_record", "_from_structlog"})


def base64_forms(value: str) -> set[str]:
    """``value`` in base64 as a server may echo it: standard and URL-safe alphabets, with
    and without padding, alone and as HTTP Basic credentials (``user:value``, ``value:``)
    the way a client encodes an API key."""
    import base64

    out: set[str] = set()
    for raw in (value, f"{value}:", f":{value}"):
        data = raw.encode("utf-8", "surrogatepass")
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(data).decode("ascii")
            out |= {text, text.rstrip("=")}
    return out


def secret_forms(value: str) -> tuple[str, ...]:
    """``value`` and the forms a server may echo it in: URL-encoded (``quote`` and
    ``quote_plus``, upper- and lowercase escapes), JSON-escaped and base64
    (:func:`base64_forms`). A header value ``Bearer <value>`` is covered by ``value``."""
    from urllib.parse import quote, quote_plus

    forms = {value, quote(value, safe=""), quote_plus(value, safe=""), quote(value)}
    forms |= {re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), f) for f in set(forms)}
    escaped = json.dumps(value)[1:-1]
    forms |= {escaped, escaped.replace("/", "\\/")}  # PHP's json_encode escapes "/"
    # every other character as \uXXXX, as some servers escape dashes and dots
    forms.add("".join(c if c.isalnum() else f"\\u{ord(c):04x}" for c in value))
    forms |= base64_forms(value)
    return tuple(sorted(f for f in forms if len(f) >= _MIN_SECRET_LENGTH))


def _is_sensitive_key(key: object) -> bool:
    return isinstance(key, str) and key.lower().replace("-", "_") in SENSITIVE_KEYS


class RedactSecrets:
    """A structlog processor removing secrets from an event dict (see the module docstring).

    :param known_secrets: secret values to replace wherever they occur (at least 4
        characters; shorter ones would blank ordinary words).

    Values that are not plain JSON scalars, strings, mappings or sequences are replaced by
    their scrubbed ``repr`` (which is what a renderer would print anyway), so an object whose
    ``repr`` contains a key cannot leak it. A remaining ``exc_info`` is formatted first.
    """

    def __init__(self, known_secrets: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._known: tuple[str, ...] = ()
        for value in known_secrets:
            self.add_secret(value)

    def add_secret(self, value: str) -> None:
        """Replace ``value`` wherever it appears from now on, in every form a server may
        echo it: as is, URL-encoded (``%2F``, ``+`` for a space) and JSON-escaped."""
        if not isinstance(value, str) or len(value) < _MIN_SECRET_LENGTH:
            return
        with self._lock:
            forms = [f for f in secret_forms(value) if f not in self._known]
            if forms:
                # longest first, so a secret containing another is replaced whole
                self._known = tuple(sorted((*self._known, *forms), key=len, reverse=True))

    def scrub_known(self, text: str) -> str:
        """``text`` with the known secrets (every form) replaced, and nothing else touched:
        for data a user wrote, where ``password: x`` may be meant."""
        for secret in self._known:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def scrub_text(self, text: str) -> str:
        """``text`` with known secrets, bearer tokens and ``key=value`` credentials blanked."""
        text = self.scrub_known(text)
        text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
        return _KEY_VALUE.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)

    def scrub(self, value: Any, depth: int = 0) -> Any:
        """A redacted copy of ``value`` (mappings and sequences recursively)."""
        if value is None or isinstance(value, bool | int | float):
            return value
        if isinstance(value, str):
            return self.scrub_text(value)
        if isinstance(value, bytes | bytearray):
            return self.scrub_text(bytes(value).decode("utf-8", "replace"))
        if depth >= _MAX_DEPTH:
            return self.scrub_text(repr(value))
        if isinstance(value, Mapping):
            return {
                self.scrub(k, depth + 1): REDACTED
                if _is_sensitive_key(k)
                else self.scrub(v, depth + 1)
                for k, v in value.items()
            }
        if isinstance(value, list | tuple | set | frozenset):
            return [self.scrub(v, depth + 1) for v in value]
        return self.scrub_text(repr(value))

    def __call__(self, logger: Any, method_name: str, event_dict: Any) -> Any:
        if "exc_info" in event_dict:
            import structlog

            event_dict = structlog.processors.format_exc_info(logger, method_name, event_dict)
        out: dict[str, Any] = {}
        for key, value in event_dict.items():
            if key in _PASS_THROUGH_KEYS:
                out[key] = value
            elif _is_sensitive_key(key):
                out[key] = REDACTED
            else:
                out[key] = self.scrub(value)
        return out


#: The process-wide redactor used by :func:`configure`; :func:`register_secret` feeds it.
_REDACTOR = RedactSecrets()

#: The bidirectional formatting characters (Unicode's Bidi_Control property: ALM, LRM, RLM,
#: the embeddings, overrides and isolates). Shown raw, U+202E in a name or snippet reverses
#: the text after it on screen ("Trojan Source", CVE-2021-42574).
BIDI_CONTROLS = frozenset([0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)])

#: C0 controls (but tab and newline), DEL, C1 controls, :data:`BIDI_CONTROLS` and lone
#: surrogates (a file name that is not UTF-8 decodes to them, and a terminal would get its raw
#: bytes back), each to one visible character: its Unicode control picture (ESC shows as
#: U+241B), U+2421 for DEL, U+FFFD for the others.
_CONTROLS = {
    **{c: 0x2400 + c for c in range(0x20) if chr(c) not in "\t\n"},
    0x7F: 0x2421,
    **{c: 0xFFFD for c in range(0x80, 0xA0)},
    **dict.fromkeys(BIDI_CONTROLS, 0xFFFD),
    **dict.fromkeys(range(0xD800, 0xE000), 0xFFFD),
}
#: :data:`_CONTROLS` with tab and newline shown too (U+2409, U+240A), and the line and
#: paragraph separators (U+2028, U+2029, which ``str.splitlines`` breaks on): for one cell.
_CELL_CONTROLS = {**_CONTROLS, 0x09: 0x2409, 0x0A: 0x240A, 0x2028: 0xFFFD, 0x2029: 0xFFFD}


def visible_controls(text: str) -> str:
    """``text`` made safe for a terminal: every control character but tab and newline (an
    escape sequence from a note's name or text could clear the screen or set the window
    title), and every bidirectional control, becomes one visible character, so offsets into
    the text stay valid. JSON needs none of this: it escapes the controls, and a JSON reader
    is not a terminal."""
    return str(text).translate(_CONTROLS)


def visible_cell(text: str) -> str:
    """:func:`visible_controls` for one cell of a table: tab and newline shown too (a file
    name may hold either, and a row must stay one line)."""
    return str(text).translate(_CELL_CONTROLS)


def _visible_values(logger: Any, method_name: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    """Console lines only: string values (a path from a vault, an error quoting one) with
    :func:`visible_controls` applied."""
    return {k: visible_controls(v) if isinstance(v, str) else v for k, v in event_dict.items()}


def register_secret(value: str) -> None:
    """Redact ``value`` from every log line rendered from now on (process-wide).

    The credential store calls it whenever it hands out a key, so a key that ends up in an
    error message, a URL or a header is never rendered. Values under 4 characters are
    ignored.
    """
    _REDACTOR.add_secret(value)


def redact(text: str) -> str:
    """``text`` with every secret handed out in this process (:func:`register_secret`: stored
    keys as read, draft keys as checked) replaced in every form, and any whole
    ``Bearer <credential>`` / ``Basic <credential>`` value blanked (the redaction of logs,
    without its ``key=value`` rule, so GOAT's own words stay readable): applied to every text
    that may quote a server before it reaches a message, status, reason or tool error
    (docs/design.md, Credentials and egress)."""
    text = _REDACTOR.scrub_known(text)
    return _BEARER_VALUE.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)


def redact_all(text: str) -> str:
    """:func:`redact` plus the ``key=value`` rule of the logs (``token=``, ``SECRET_TOKEN:``,
    ``api_key=`` ... values blanked): for text composed outside GOAT, such as a plugin's
    exception message, before it reaches a status or a ``degraded`` reason."""
    return _REDACTOR.scrub_text(text)


def get_logger(name: str | None = None, **bound: Any) -> Any:
    """A logger for library code (goat_core and plugins): ``log.warning("event", key=value)``.

    Configuration is the application's job. Each call decides where it goes, so a module
    may create its logger at import time:

    - when the application configured structlog (the ``goat`` CLI through :func:`configure`,
      or a host's own ``structlog.configure``), through that configuration;
    - otherwise through the standard library logger ``name`` (default ``goat``), redacted
      by :class:`RedactSecrets` and rendered as ``event key=value ...``: a host that
      configured nothing gets warnings on stderr from Python's last-resort handler, one
      that configured ``logging`` gets them in its handlers, and nothing is ever printed to
      stdout (structlog's own default would print there, which breaks hosts that speak a
      protocol on stdout, such as an MCP server over stdio).
    """
    return _LibraryLogger(name, bound)


@functools.cache
def _fallback_chain() -> list[Any]:
    """The chain of an unconfigured process: stdlib level check first (no work for a record
    nobody shows), then the same redaction as :func:`configure`, rendered to one string."""
    import structlog

    return [
        structlog.stdlib.filter_by_level,
        structlog.contextvars.merge_contextvars,
        structlog.processors.format_exc_info,
        _REDACTOR,
        structlog.processors.KeyValueRenderer(key_order=["event"], drop_missing=True),
    ]


class _LibraryLogger:
    """What :func:`get_logger` returns; see there. ``bind`` returns a new one."""

    __slots__ = ("_bound", "_name")

    def __init__(self, name: str | None, bound: dict[str, Any]) -> None:
        self._name = name
        self._bound = bound

    def bind(self, **values: Any) -> _LibraryLogger:
        return _LibraryLogger(self._name, {**self._bound, **values})

    def _target(self) -> Any:
        import structlog

        if structlog.is_configured():
            logger = structlog.get_logger(self._name)
        else:
            logger = structlog.wrap_logger(
                logging.getLogger(self._name or "goat"),
                processors=_fallback_chain(),
                wrapper_class=structlog.stdlib.BoundLogger,
            )
        return logger.bind(**self._bound) if self._bound else logger

    def __getattr__(self, method: str) -> Any:
        """``debug``, ``info``, ``warning``, ``error``, ``exception`` and the rest of a
        structlog bound logger, resolved at call time."""
        if method.startswith("_"):
            raise AttributeError(method)
        import structlog

        target = self._target()
        if method == "exception" and not structlog.is_configured():
            # stdlib's Logger.exception would attach the live exception again and its
            # handler would print a second, unredacted traceback: render it here instead
            return functools.partial(target.error, exc_info=True)
        return getattr(target, method)

    def __repr__(self) -> str:
        return f"<goat logger {self._name or 'goat'}>"


def _renderer(json: bool) -> Any:
    import structlog

    if json:
        return structlog.processors.JSONRenderer(sort_keys=True)
    console = structlog.dev.ConsoleRenderer(colors=False)

    def render(logger: Any, method_name: str, event_dict: dict[str, Any]) -> Any:
        return console(logger, method_name, _visible_values(logger, method_name, event_dict))

    return render


class _GoatHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The root handler :func:`configure` installs (replaced on a second call)."""


class _CurrentStderr:
    """Writes to whatever ``sys.stderr`` is at write time (test runners swap it)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure(*, json: bool = False, level: str = "warning", stream: TextIO | None = None) -> None:
    """Configure logging for the ``goat`` CLI (never call it from a library or plugin).

    :param json: render one JSON object per line instead of console lines.
    :param level: lowest level shown: ``debug``, ``info``, ``warning``, ``error`` or
        ``critical`` (case-insensitive).
    :param stream: where lines go; default ``sys.stderr`` (stdout stays for command output).
    :raises BadInput: an unknown level name.

    Installs one root stdlib handler (replacing the one a previous call installed, leaving
    other handlers alone) so httpx2, httpcore2, mcp and uvicorn records get the same
    redaction.
    """
    import structlog

    from goat_core.errors import BadInput

    numeric = LEVELS.get(level.lower())
    if numeric is None:
        raise BadInput(f"unknown log level {level!r}: expected one of {', '.join(LEVELS)}")
    out: Any = stream if stream is not None else _CurrentStderr()
    timestamper = structlog.processors.TimeStamper(fmt="iso", utc=True)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            timestamper,
            structlog.processors.format_exc_info,
            _REDACTOR,
            _renderer(json),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        cache_logger_on_first_use=False,
    )

    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[
            structlog.contextvars.merge_contextvars,
            structlog.stdlib.add_log_level,
            structlog.stdlib.add_logger_name,
            timestamper,
        ],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            _REDACTOR,
            _renderer(json),
        ],
    )
    handler = _GoatHandler(out)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _GoatHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric)
    for name in _STDLIB_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET)
