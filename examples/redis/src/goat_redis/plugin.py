"""Declarations only: settings, spec and the hook. Cheap to import, no I/O."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from goat_core import Capability, CredentialSpec, ProviderSpec, hookimpl


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Settings(BaseModel):
    """What `goat bind ... redis --set url=... --set namespace=...` accepts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str = Field(
        description="redis://HOST:PORT on loopback, rediss://HOST:PORT (TLS) anywhere",
    )
    namespace: str = Field(
        default="goat",
        pattern=r"^[A-Za-z0-9_.-]{1,64}$",
        description="Key prefix that keeps these notes apart from other data on the server",
    )

    @field_validator("url")
    @classmethod
    def _server_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("redis", "rediss"):
            raise ValueError("url must start with redis:// or rediss://")
        if parts.username or parts.password:
            raise ValueError("url must not carry credentials; use --api-key-stdin")
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ValueError("url is a server only: redis://HOST:PORT, no path or query")
        host = parts.hostname
        try:
            port = parts.port
        except ValueError as exc:
            raise ValueError(f"url has a bad port: {exc}") from None
        if not host or port is None:
            raise ValueError("url needs a host and a port: redis://HOST:PORT")
        if parts.scheme == "redis" and not _is_loopback(host):
            raise ValueError("a server that is not on loopback needs TLS: rediss://")
        shown = f"[{host}]" if ":" in host else host
        return f"{parts.scheme}://{shown}:{port}"


def egress_urls(settings: Settings) -> list[str]:
    """A bind authorises exactly its one server."""
    return [settings.url]


def _factory(context):  # type: ignore[no-untyped-def]
    from goat_redis.provider import RedisProvider  # the client code loads only when used

    return RedisProvider(context)


SPEC = ProviderSpec(
    name="redis",
    display_name="Redis",
    version="0.1.0",
    description="Each scope's notes under its own key prefix on a Redis server.",
    capabilities=frozenset({Capability.SCOPED_STORES, Capability.PAGES, Capability.FEEDBACK}),
    settings_model=Settings,
    credentials=(CredentialSpec(name="api_key", description="Redis AUTH password (optional)"),),
    network=True,
    egress_urls=egress_urls,
    factory=_factory,
    max_input_chars=50_000,
    title_lookup=True,
)


@hookimpl
def goat_register_providers() -> list[ProviderSpec]:
    return [SPEC]
