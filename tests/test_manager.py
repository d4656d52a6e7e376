"""Plugin loading through real entry points of throwaway distributions written to disk."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from goat_core.errors import PluginLoadError
from goat_core.plugins import (
    ENTRY_POINT_GROUP,
    GoatPluginManager,
    PluginSettings,
    Registry,
    make_plugin_manager,
)

PREFIX = "goatfake"

GOOD = """
from pydantic import BaseModel, ConfigDict

from goat_core import Capability, ProviderSpec, hookimpl


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    root: str = "."


def _factory(context):
    return context


@hookimpl
def goat_register_providers():
    return [
        ProviderSpec(
            name="{provider}",
            display_name="Fake {provider}",
            version="1.0",
            capabilities=frozenset({{Capability.SCOPED_STORES, Capability.PAGES}}),
            settings_model=Settings,
            factory=_factory,
        )
    ]
"""


class FakeSite:
    """A directory on ``sys.path`` holding throwaway distributions (dist-info + modules)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def module(self, name: str, source: str) -> None:
        (self.root / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")

    def dist(
        self,
        name: str,
        entry_points: dict[str, str],
        *,
        requires: tuple[str, ...] = (),
        version: str = "1.0",
    ) -> None:
        info = self.root / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
        meta += [f"Requires-Dist: {r}" for r in requires]
        (info / "METADATA").write_text("\n".join(meta) + "\n", encoding="utf-8")
        eps = [f"[{ENTRY_POINT_GROUP}]"] + [f"{k} = {v}" for k, v in entry_points.items()]
        (info / "entry_points.txt").write_text("\n".join(eps) + "\n", encoding="utf-8")

    def good(self, ep_name: str, provider: str) -> None:
        self.module(f"{ep_name}_mod", GOOD.format(provider=provider))
        self.dist(f"goat-{ep_name.replace('_', '-')}", {ep_name: f"{ep_name}_mod"})


def _forget_fakes() -> None:
    for name in [m for m in sys.modules if m.startswith(PREFIX)]:
        del sys.modules[name]


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSite]:
    root = tmp_path / "site"
    root.mkdir()
    for var in ("LOAD", "DISABLE", "STRICT", "TRACE"):
        monkeypatch.delenv(f"GOAT_{var}_PLUGINS", raising=False)
    _forget_fakes()
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    yield FakeSite(root)
    _forget_fakes()
    importlib.invalidate_caches()


def load(*names: str, **kw: object) -> GoatPluginManager:
    """A manager loading only the named entry points (other installed plugins stay out)."""
    return make_plugin_manager(PluginSettings(load=tuple(names), **kw))  # type: ignore[arg-type]


def loaded(pm: GoatPluginManager) -> set[str]:
    return {name for name, origin in pm.origins.items() if not origin.builtin}


def failure_kinds(pm: GoatPluginManager) -> dict[str, str]:
    return {f.plugin: f.kind for f in pm.failures}


# -- isolation -------------------------------------------------------------------------


def test_good_plugin_loads_and_lists_its_providers(site: FakeSite) -> None:
    site.good("goatfake_good", "fakegood")
    pm = load("goatfake_good")
    assert loaded(pm) == {"goatfake_good"}
    assert pm.failures == []
    reg = Registry(pm)
    assert "fakegood" in reg.providers()
    assert reg.provider_owner("fakegood") == "goatfake_good"
    info = next(i for i in reg.plugin_infos() if i.name == "goatfake_good")
    assert (info.distribution, info.version, info.builtin) == ("goat-goatfake-good", "1.0", False)
    assert info.providers == ("fakegood",)
    assert info.capabilities == {"fakegood": ["pages", "scoped_stores"]}
    assert "goat_register_providers" in info.hooks


def test_import_error_is_recorded_and_others_still_load(site: FakeSite) -> None:
    site.good("goatfake_good", "fakegood")
    site.module("goatfake_broken_mod", "import goatfake_module_that_does_not_exist\n")
    site.dist("goat-goatfake-broken", {"goatfake_broken": "goatfake_broken_mod"})
    site.good("goatfake_zgood", "fakezgood")  # sorts after the broken one
    pm = load("goatfake_good", "goatfake_broken", "goatfake_zgood")
    assert loaded(pm) == {"goatfake_good", "goatfake_zgood"}
    [failure] = pm.failures
    assert (failure.plugin, failure.kind) == ("goatfake_broken", "import")
    assert failure.distribution == "goat-goatfake-broken"
    assert failure.error.startswith("ModuleNotFoundError: ")
    assert failure.traceback is not None
    assert "goatfake_broken_mod.py" in failure.traceback
    assert "goatfake_module_that_does_not_exist" in failure.traceback
    assert set(Registry(pm).providers()) >= {"fakegood", "fakezgood"}


def test_missing_attribute_fails_alone(site: FakeSite) -> None:
    site.good("goatfake_good", "fakegood")
    site.module("goatfake_attr_mod", "VALUE = 1\n")
    site.dist("goat-goatfake-attr", {"goatfake_attr": "goatfake_attr_mod:missing_attr"})
    pm = load("goatfake_good", "goatfake_attr")
    assert loaded(pm) == {"goatfake_good"}
    [failure] = pm.failures
    assert (failure.plugin, failure.kind) == ("goatfake_attr", "import")
    assert failure.value == "goatfake_attr_mod:missing_attr"
    assert "missing_attr" in failure.error


def test_duplicate_entry_point_names_are_reported(site: FakeSite) -> None:
    for dist, provider in (("goat-goatfake-a", "fakea"), ("goat-goatfake-b", "fakeb")):
        module = dist.replace("-", "_") + "_mod"
        site.module(module, GOOD.format(provider=provider))
        site.dist(dist, {"goatfake_dup": module})
    pm = load("goatfake_dup")
    assert loaded(pm) == {"goatfake_dup"}
    assert pm.origins["goatfake_dup"].distribution == "goat-goatfake-a"
    [failure] = pm.failures
    assert (failure.plugin, failure.kind) == ("goatfake_dup", "duplicate")
    assert failure.distribution == "goat-goatfake-b"
    assert "goat-goatfake-a" in failure.error
    assert "goat_goatfake_b_mod" not in sys.modules  # the loser is never imported


def test_incompatible_core_requirement_is_reported_never_imported(site: FakeSite) -> None:
    site.module("goatfake_future_mod", GOOD.format(provider="fakefuture"))
    site.dist(
        "goat-goatfake-future",
        {"goatfake_future": "goatfake_future_mod"},
        requires=("goat-core>=9", "pydantic>=2"),
    )
    site.module("goatfake_ok_mod", GOOD.format(provider="fakeok"))
    site.dist("goat-goatfake-ok", {"goatfake_ok": "goatfake_ok_mod"}, requires=("goat-core>=0.1",))
    pm = load("goatfake_future", "goatfake_ok")
    assert loaded(pm) == {"goatfake_ok"}
    [failure] = pm.failures
    assert (failure.plugin, failure.kind) == ("goatfake_future", "incompatible")
    assert "goat-core>=9" in failure.error
    assert "goatfake_future_mod" not in sys.modules


def test_typod_hook_name_is_recorded_and_unregistered(site: FakeSite) -> None:
    site.module(
        "goatfake_typo_mod",
        """
        from goat_core import hookimpl

        @hookimpl
        def goat_register_provider():
            return []
        """,
    )
    site.dist("goat-goatfake-typo", {"goatfake_typo": "goatfake_typo_mod"})
    site.good("goatfake_good", "fakegood")
    pm = load("goatfake_typo", "goatfake_good")  # check_pending() passes: typo was removed
    assert pm.get_plugin("goatfake_typo") is None
    assert loaded(pm) == {"goatfake_good"}
    [failure] = pm.failures
    assert (failure.plugin, failure.kind) == ("goatfake_typo", "register")
    assert "goat_register_provider" in failure.error
    pm.check_pending()


# -- environment switches ------------------------------------------------------------


@pytest.fixture
def two(site: FakeSite) -> FakeSite:
    site.good("goatfake_good", "fakegood")
    site.good("goatfake_other", "fakeother")
    site.module("goatfake_broken_mod", "raise ImportError('boom at import')\n")
    site.dist("goat-goatfake-broken", {"goatfake_broken": "goatfake_broken_mod"})
    return site


def test_load_plugins_allow_list(two: FakeSite, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOAT_LOAD_PLUGINS", "goatfake_other, goatfake_good")
    pm = make_plugin_manager()
    assert {n for n in loaded(pm) if n.startswith(PREFIX)} == {"goatfake_good", "goatfake_other"}
    assert "goatfake_broken" not in failure_kinds(pm)
    assert "goatfake_broken_mod" not in sys.modules


def test_empty_load_plugins_loads_none(two: FakeSite, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOAT_LOAD_PLUGINS", "")
    pm = make_plugin_manager()
    assert loaded(pm) == set()
    assert pm.failures == []
    assert {n for n, o in pm.origins.items() if o.builtin} == {"goat.scope", "goat.egress"}


def test_disable_plugins_block_list(two: FakeSite, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOAT_LOAD_PLUGINS", "goatfake_good,goatfake_broken,goatfake_other")
    monkeypatch.setenv("GOAT_DISABLE_PLUGINS", "goatfake_broken,goatfake_other")
    pm = make_plugin_manager()
    assert loaded(pm) == {"goatfake_good"}
    assert pm.failures == []
    assert pm.is_blocked("goatfake_broken")
    assert "goatfake_broken_mod" not in sys.modules


def test_disable_plugins_alone_blocks_only_those(
    two: FakeSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOAT_DISABLE_PLUGINS", "goatfake_broken")
    pm = make_plugin_manager()  # every installed plugin loads, minus the blocked one
    assert {"goatfake_good", "goatfake_other"} <= loaded(pm)
    assert "goatfake_broken" not in failure_kinds(pm)
    assert "goatfake_broken_mod" not in sys.modules


def test_strict_plugins_raises(two: FakeSite, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOAT_LOAD_PLUGINS", "goatfake_good,goatfake_broken")
    monkeypatch.setenv("GOAT_STRICT_PLUGINS", "1")
    with pytest.raises(PluginLoadError) as info:
        make_plugin_manager()
    assert [f.plugin for f in info.value.failures] == ["goatfake_broken"]
    assert "boom at import" in str(info.value)
    assert info.value.exit_code == 6
    monkeypatch.setenv("GOAT_LOAD_PLUGINS", "goatfake_good")
    assert loaded(make_plugin_manager()) == {"goatfake_good"}  # strict and clean: no raise


def test_trace_plugins_logs_hook_calls(two: FakeSite, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOAT_LOAD_PLUGINS", "goatfake_good")
    monkeypatch.setenv("GOAT_TRACE_PLUGINS", "1")
    reg = Registry(make_plugin_manager())
    with capture_logs() as logs:
        reg.providers()
    calls = [e for e in logs if e["event"] == "hook.call"]
    expected = {"hook": "goat_register_providers", "plugin": "goatfake_good"}
    assert expected.items() <= calls[0].items()
    assert any(e["event"] == "hook.result" and e["plugin"] == "goatfake_good" for e in logs)


def test_no_trace_without_the_switch(two: FakeSite) -> None:
    reg = Registry(load("goatfake_good"))
    with capture_logs() as logs:
        reg.providers()
    assert not [e for e in logs if e["event"].startswith("hook.")]


def test_from_env_reads_at_call_time() -> None:
    s = PluginSettings.from_env({"GOAT_LOAD_PLUGINS": "b, a,,", "GOAT_STRICT_PLUGINS": "yes"})
    assert (s.load, s.disable, s.strict, s.trace) == (("a", "b"), (), True, False)
    assert PluginSettings.from_env({}).load is None
    assert PluginSettings.from_env({"GOAT_LOAD_PLUGINS": ""}).load == ()


def test_importing_goat_core_loads_no_plugin(two: FakeSite) -> None:
    from importlib.metadata import entry_points

    installed = {ep.module for ep in entry_points(group=ENTRY_POINT_GROUP)}
    assert "goatfake_good_mod" in installed  # the fake site is visible to metadata
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOAT_")}
    env["PYTHONPATH"] = os.pathsep.join([str(two.root), *sys.path])
    code = "import goat_core, json, sys; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    modules = set(json.loads(out.stdout))
    assert "goat_core" in modules
    assert not installed & modules
    assert not {m for m in modules if m.startswith("goat_core.plugins.builtin")}
