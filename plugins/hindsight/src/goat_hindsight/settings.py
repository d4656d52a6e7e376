"""Settings of a Hindsight binding, validated before any connection (stdlib only, cheap).

A binding holds exactly a base server URL and a bank id; the optional API key is a declared
credential and lives only in the credential store. GOAT builds the MCP endpoint
``{base_url}/mcp/{bank_id}/`` itself (Hindsight's single-bank endpoint), so neither field may
smuggle a path, a query or credentials into it.

Rules (each message names its rule):

- ``bank_id``: 1 to 64 characters, each a lowercase ASCII letter, a digit, ``-`` or ``_``.
  Nothing is normalised: ``Bank`` is rejected, not lowercased.
- ``base_url``: scheme ``http`` or ``https``; a host; no user info, no path (a lone trailing
  ``/`` is dropped), no query, no fragment, no whitespace; the host is ASCII (IDNA hosts in
  their ``xn--`` form). A host that is not loopback must use ``https``. Loopback means the
  name ``localhost`` or a literal address in ``127.0.0.0/8`` or ``::1``; a name that merely
  starts with or embeds a loopback name (``localhost.example.com``, ``127.0.0.1.nip.io``) is
  not loopback.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from goat_core.errors import ConfigError

__all__ = [
    "BANK_ID_PATTERN",
    "HindsightSettings",
    "is_loopback_host",
    "mcp_url",
    "parse_settings",
    "validate_bank_id",
    "validate_base_url",
]

#: Bank ids GOAT accepts (a subset of what Hindsight accepts, so the URL path is plain).
BANK_ID_PATTERN = re.compile(r"[a-z0-9_-]{1,64}")
_HOST_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")


def validate_bank_id(value: object) -> str:
    """Return ``value`` when it is a valid bank id, else raise ``ValueError`` naming the rule.

    Rule: 1 to 64 characters from ``a-z``, ``0-9``, ``-`` and ``_`` (lowercase ASCII only).
    """
    if not isinstance(value, str):
        raise ValueError(f"bank id must be a string, got {type(value).__name__}")
    if BANK_ID_PATTERN.fullmatch(value):
        return value
    if not value:
        rule = "it is empty"
    elif len(value) > 64:
        rule = f"it is {len(value)} characters long (at most 64)"
    else:
        bad = sorted({c for c in value if not re.fullmatch(r"[a-z0-9_-]", c)})
        rule = "it contains " + ", ".join(repr(c) for c in bad)
    raise ValueError(
        f"invalid bank id {value!r}: {rule}; a bank id is 1-64 lowercase ASCII letters, "
        "digits, '-' or '_'"
    )


def is_loopback_host(host: str) -> bool:
    """``True`` only for ``localhost`` and literal ``127.0.0.0/8`` or ``::1`` addresses.

    ``host`` is the bare host (IPv6 without brackets), already lowercased.
    """
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv4Address):
        return address in ipaddress.IPv4Network("127.0.0.0/8")
    return address == ipaddress.IPv6Address("::1")


def _check_host(host: str, raw: str) -> None:
    if not host.isascii():
        raise ValueError(
            f"invalid base URL {raw!r}: the host must be ASCII (write an internationalised "
            "name in its xn-- form)"
        )
    try:
        ipaddress.ip_address(host)
        return
    except ValueError:
        pass
    labels = host.split(".")
    if len(host) > 253 or not all(_HOST_LABEL.fullmatch(label) for label in labels):
        raise ValueError(f"invalid base URL {raw!r}: {host!r} is not a valid host name")


def validate_base_url(value: object) -> str:
    """Return the canonical base URL (``scheme://host[:port]``, lowercase scheme and host) or
    raise ``ValueError`` naming the broken rule (see the module docstring)."""
    if not isinstance(value, str):
        raise ValueError(f"base URL must be a string, got {type(value).__name__}")
    raw = value
    if not raw:
        raise ValueError("invalid base URL '': it is empty; give e.g. https://hindsight.example")
    # A URL holding user info is never echoed as given: a password may sit before the "@"
    # whatever other rule the URL breaks.
    shown = _redact_userinfo(raw) if "@" in raw else raw
    if any(c.isspace() for c in raw) or any(ord(c) < 32 or ord(c) == 127 for c in raw):
        raise ValueError(
            f"invalid base URL {shown!r}: it contains whitespace or control characters"
        )
    if "\\" in raw:
        raise ValueError(f"invalid base URL {shown!r}: it contains a backslash")
    try:
        parts = urlsplit(raw)
    except ValueError as exc:
        raise ValueError(f"invalid base URL {shown!r}: it does not parse ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ValueError(f"invalid base URL {shown!r}: the scheme must be http or https")
    if "@" in raw:
        raise ValueError(
            f"invalid base URL {shown!r}: user info (user:password@) is not "
            "allowed; the API key goes into the credential store"
        )
    if "?" in raw:
        raise ValueError(f"invalid base URL {shown!r}: a query ('?...') is not allowed")
    if "#" in raw:
        raise ValueError(f"invalid base URL {shown!r}: a fragment ('#...') is not allowed")
    if parts.path not in ("", "/"):
        raise ValueError(
            f"invalid base URL {shown!r}: a path ({parts.path!r}) is not allowed; GOAT builds "
            "{base}/mcp/{bank_id}/ itself"
        )
    if ";" in parts.netloc:
        raise ValueError(f"invalid base URL {shown!r}: parameters (';') are not allowed")
    host = (parts.hostname or "").lower()
    if not host:
        raise ValueError(f"invalid base URL {shown!r}: it has no host")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(
            f"invalid base URL {shown!r}: the port is not a number in 0-65535"
        ) from None
    if parts.netloc.endswith(":"):
        raise ValueError(f"invalid base URL {shown!r}: the port is empty")
    _check_host(host, raw)
    if port == 0:
        raise ValueError(f"invalid base URL {shown!r}: port 0 is not a server port")
    loopback = is_loopback_host(host)
    if scheme != "https" and not loopback:
        raise ValueError(
            f"invalid base URL {shown!r}: a server that is not on loopback (localhost, "
            "127.0.0.0/8, ::1) must use https"
        )
    shown_host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown_host}" + ("" if port is None else f":{port}")


def _redact_userinfo(raw: str) -> str:
    """``raw`` with everything before its last ``@`` hidden (a password may hold ``/``, ``#``,
    ``?``, spaces or ``@``), keeping a scheme that comes before it."""
    head, _, host = raw.rpartition("@")
    scheme, sep, _ = head.partition("://")
    shown_host = "".join(c if c.isprintable() and not c.isspace() else "?" for c in host)
    return f"{scheme}://***@{shown_host}" if sep and scheme.isalpha() else f"***@{shown_host}"


class HindsightSettings(BaseModel):
    """Settings of one Hindsight binding (``goat bind ... hindsight --set base_url=...
    --set bank_id=...``). No defaults: the user names the server and the bank.

    The API key is not a setting: it is the declared credential ``api_key`` (credential
    store, or the environment override), sent as ``Authorization: Bearer``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str = Field(
        description=(
            "Base URL of the Hindsight server, without a path, e.g. https://hindsight.example "
            "or http://127.0.0.1:8888 (http only on loopback). GOAT talks to "
            "<base_url>/mcp/<bank_id>/."
        ),
    )
    bank_id: str = Field(
        description=(
            "The existing Hindsight bank to use: 1-64 lowercase letters, digits, '-' or '_'. "
            "GOAT never creates banks."
        ),
    )

    @field_validator("base_url", mode="before")
    @classmethod
    def _base_url(cls, value: object) -> str:
        return validate_base_url(value)

    @field_validator("bank_id", mode="before")
    @classmethod
    def _bank_id(cls, value: object) -> str:
        return validate_bank_id(value)

    @property
    def mcp_url(self) -> str:
        """``{base_url}/mcp/{bank_id}/``: the single-bank MCP endpoint."""
        return mcp_url(self)


def mcp_url(settings: HindsightSettings) -> str:
    """The one URL GOAT contacts for ``settings`` (and the egress prefix ``goat bind``
    authorises): ``{base_url}/mcp/{bank_id}/``."""
    return f"{settings.base_url}/mcp/{settings.bank_id}/"


def parse_settings(raw: Mapping[str, Any] | BaseModel) -> HindsightSettings:
    """Validate raw binding settings.

    :raises ConfigError: a missing or unknown key, or a broken rule (the message names it).
    """
    if isinstance(raw, HindsightSettings):
        return raw
    data = raw.model_dump() if isinstance(raw, BaseModel) else dict(raw)
    try:
        return HindsightSettings.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "settings"
        if first["type"] == "missing":
            message = f"{where} is required (no default server or bank)"
        elif first["type"] == "extra_forbidden":
            message = (
                f"unknown setting {where!r}; a Hindsight binding has exactly base_url and "
                "bank_id (the API key goes into the credential store)"
            )
        else:
            message = str(first.get("ctx", {}).get("error") or first["msg"])
        raise ConfigError(f"Hindsight settings: {message}") from None
