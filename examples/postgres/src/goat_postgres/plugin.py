"""Declarations only: settings, spec and the hook. Cheap to import, no I/O."""

from __future__ import annotations

import ipaddress
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from goat_core import Capability, CredentialSpec, ProviderSpec, hookimpl


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Settings(BaseModel):
    """What `goat bind ... postgres --set url=... --set database=...` accepts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str = Field(description="postgresql://HOST:PORT: the server only, no database or user")
    database: str = Field(
        default="goat",
        pattern=r"^[A-Za-z0-9_.-]{1,63}$",
        description="Database that holds the goat_notes table",
    )
    user: str = Field(
        default="goat",
        pattern=r"^[A-Za-z0-9_.-]{1,63}$",
        description="Role to log in as; its password is the `password` credential",
    )
    namespace: str = Field(
        default="goat",
        pattern=r"^[A-Za-z0-9_.-]{1,64}$",
        description="Keeps these notes apart from other GOAT notes in the same table",
    )
    sslmode: Literal["disable", "require", "verify-ca", "verify-full"] | None = Field(
        default=None,
        description="libpq sslmode; default disable on loopback, verify-full elsewhere",
    )

    @field_validator("url")
    @classmethod
    def _server_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("postgresql", "postgres"):
            raise ValueError("url must start with postgresql://")
        if parts.username or parts.password:
            raise ValueError("url must not carry a user or password; use user= and the credential")
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ValueError("url is a server only: postgresql://HOST:PORT; set database=")
        host = parts.hostname
        try:
            port = parts.port
        except ValueError as exc:
            raise ValueError(f"url has a bad port: {exc}") from None
        if not host or port is None:
            raise ValueError("url needs a host and a port: postgresql://HOST:PORT")
        shown = f"[{host}]" if ":" in host else host
        return f"postgresql://{shown}:{port}"

    @model_validator(mode="after")
    def _tls_off_loopback(self) -> Settings:
        host = urlsplit(self.url).hostname or ""
        if self.sslmode == "disable" and not is_loopback(host):
            raise ValueError("a server that is not on loopback needs TLS: not sslmode=disable")
        return self

    @property
    def effective_sslmode(self) -> str:
        if self.sslmode is not None:
            return self.sslmode
        return "disable" if is_loopback(urlsplit(self.url).hostname or "") else "verify-full"


def egress_urls(settings: Settings) -> list[str]:
    """A bind authorises exactly its one server."""
    return [settings.url]


def _factory(context):  # type: ignore[no-untyped-def]
    from goat_postgres.provider import PostgresProvider  # psycopg loads only when used

    return PostgresProvider(context)


SPEC = ProviderSpec(
    name="postgres",
    display_name="PostgreSQL",
    version="0.1.0",
    description="Each scope's notes as rows of one PostgreSQL table, apart by namespace and scope.",
    capabilities=frozenset({Capability.SCOPED_STORES, Capability.PAGES, Capability.FEEDBACK}),
    settings_model=Settings,
    credentials=(
        CredentialSpec(name="password", description="PostgreSQL password of the user (optional)"),
    ),
    network=True,
    egress_urls=egress_urls,
    factory=_factory,
    max_input_chars=50_000,
    title_lookup=True,
)


@hookimpl
def goat_register_providers() -> list[ProviderSpec]:
    return [SPEC]
