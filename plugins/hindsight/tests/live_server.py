"""Fixtures for the live tests: a real Hindsight 1.1.0 server started by the project's own
``scripts/hindsight/hindsight-server.sh`` (or the one at ``GOAT_HINDSIGHT_URL``).

The run folder is removed afterwards unless ``GOAT_HINDSIGHT_KEEP`` is set. Banks are created
here through Hindsight's REST API (``PUT /v1/default/banks/{id}``), never
by GOAT. With ``CI=true`` a server that cannot start fails the run instead of skipping.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest

from goat_core.contract import Binding, ProviderContext, Scope
from goat_core.host import GoatHome, guarded_http_client
from goat_core.plugins import PluginSettings, Registry, make_plugin_manager
from goat_hindsight.plugin import egress_urls, spec
from goat_hindsight.provider import HindsightProvider
from goat_hindsight.settings import HindsightSettings

REPO = Path(__file__).resolve().parents[3]
SCRIPT = Path(
    os.environ.get("GOAT_HINDSIGHT_SCRIPT", REPO / "scripts/hindsight/hindsight-server.sh")
)
IN_CI = os.environ.get("CI", "").lower() == "true"


def _unavailable(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"live Hindsight server unavailable in CI: {reason}", pytrace=False)
    pytest.skip(f"live Hindsight server unavailable: {reason}")


def _run(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> dict[str, str]:
    done = subprocess.run(
        ["bash", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    if done.returncode != 0:
        raise RuntimeError(f"{SCRIPT.name} {' '.join(args)} failed: {done.stderr[-2000:]}")
    return dict(
        line.split("=", 1) for line in done.stdout.splitlines() if "=" in line and line[0] != "#"
    )


@dataclass
class LiveServer:
    """A running server: ``url`` (base URL), ``run_dir`` (``None`` for GOAT_HINDSIGHT_URL)."""

    url: str
    run_dir: str | None
    extra: list[str] = field(default_factory=list)

    def create_bank(self, prefix: str = "goat") -> str:
        bank = f"{prefix}-{uuid.uuid4().hex[:10]}"
        response = httpx2.put(f"{self.url}/v1/default/banks/{bank}", json={}, timeout=30)
        assert response.status_code == 200, response.text
        return bank

    def bank_exists(self, bank: str) -> bool:
        response = httpx2.get(f"{self.url}/v1/default/banks", timeout=30)
        response.raise_for_status()
        return any(b["bank_id"] == bank for b in response.json()["banks"])

    def start_api(self, name: str, *, port: int | None = None, **env: str) -> str:
        """Another hindsight-api on the same database (``HS_MCP_TOKEN``, ``HS_ENABLED_TOOLS``)."""
        if self.run_dir is None:
            _unavailable(
                "GOAT_HINDSIGHT_URL points at an external server; this case starts its own"
            )
        assert self.run_dir is not None
        args = ["api", self.run_dir, name] + ([str(port)] if port else [])
        url = _run(*args, env=env, timeout=180)["HINDSIGHT_URL"]
        self.extra.append(name)
        return url

    def stop_api(self, name: str) -> None:
        assert self.run_dir is not None
        _run("stop-api", self.run_dir, name, timeout=60)


@pytest.fixture(scope="session")
def live_server() -> Iterator[LiveServer]:
    external = os.environ.get("GOAT_HINDSIGHT_URL")
    if external:
        yield LiveServer(url=external.rstrip("/"), run_dir=None)
        return
    if not SCRIPT.is_file():
        _unavailable(f"{SCRIPT} is missing")
    try:
        out = _run("start")
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as exc:
        _unavailable(str(exc))
    server = LiveServer(url=out["HINDSIGHT_URL"], run_dir=out["HINDSIGHT_RUN_DIR"])
    try:
        yield server
    finally:
        _run("stop", out["HINDSIGHT_RUN_DIR"], timeout=120)
        if not os.environ.get("GOAT_HINDSIGHT_KEEP"):  # keep the folder (logs) when asked
            shutil.rmtree(out["HINDSIGHT_RUN_DIR"], ignore_errors=True)


def guarded_factory(settings: HindsightSettings, binding_id: str = "live") -> Callable[..., Any]:
    """The egress-guarded httpx2 client factory a host hands a provider after ``goat bind``."""
    registry = Registry(make_plugin_manager(PluginSettings(autoload=False)))
    binding = Binding(
        id=binding_id,
        provider="hindsight",
        settings=settings.model_dump(),
        egress=tuple(egress_urls(settings)),
    )

    def factory(**kwargs: Any) -> httpx2.AsyncClient:
        return guarded_http_client(registry, binding, **kwargs)

    return factory


def recording_factory(
    factory: Callable[..., httpx2.AsyncClient], statuses: list[int]
) -> Callable[..., httpx2.AsyncClient]:
    """``factory`` whose clients also append the status of every response to ``statuses``
    (what reached the server, counted instead of timed)."""

    async def note(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    def make(**kwargs: Any) -> httpx2.AsyncClient:
        hooks = dict(kwargs.pop("event_hooks", None) or {})
        hooks["response"] = [*hooks.get("response", []), note]
        return factory(event_hooks=hooks, **kwargs)

    return make


def live_provider(
    home: GoatHome,
    url: str,
    bank: str,
    *,
    key: str | None = None,
    scope: Scope | None = None,
    statuses: list[int] | None = None,
    **options: Any,
) -> HindsightProvider:
    """A provider on ``url``/``bank``; with ``statuses``, every response status is recorded."""
    settings = HindsightSettings(base_url=url, bank_id=bank)
    factory = guarded_factory(settings)
    if statuses is not None:
        factory = recording_factory(factory, statuses)
    context = ProviderContext(
        scope=scope or Scope.global_(),
        binding=Binding(
            id="live",
            provider="hindsight",
            settings=settings.model_dump(),
            egress=tuple(egress_urls(settings)),
        ),
        settings=settings,
        home=home,
        get_credential=lambda name: key if name == "api_key" else None,
        http_client=factory,
    )
    return HindsightProvider(context, spec=spec(), **options)
