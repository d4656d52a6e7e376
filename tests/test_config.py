"""goat_core.config: memory.json on real files in a temp GOAT home."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goat_core.contract import Binding, Scope
from goat_core.errors import ConfigError, Conflict, NotFound, StoreUnwritable
from goat_core.host import GoatHome
from goat_core.host._config import (
    CURRENT_SCHEMA,
    Config,
    binding_id_for,
    load_config,
    save_config,
)

GLOBAL = Scope.global_()
PEN_A = Scope.pen("alpha")
PEN_B = Scope.pen("beta")


@pytest.fixture
def home(tmp_path: Path) -> GoatHome:
    return GoatHome.at(tmp_path / "goat")


def _md(binding_id: str, root: str = "/notes") -> Binding:
    return Binding(id=binding_id, provider="markdown", settings={"root": root})


def _hindsight(binding_id: str) -> Binding:
    return Binding(
        id=binding_id,
        provider="hindsight",
        settings={"base_url": "https://h.example", "bank_id": "goat"},
        egress=("https://h.example/mcp/goat/",),
    )


def _write(home: GoatHome, text: str) -> Path:
    home.config_dir.mkdir(parents=True, exist_ok=True)
    home.config_path.write_text(text, encoding="utf-8")
    return home.config_path


# -- basics -------------------------------------------------------------------------------------
def test_binding_id_for() -> None:
    assert binding_id_for(GLOBAL) == "global"
    assert binding_id_for(Scope.pen("My.App")) == "pen-my.app"


def test_missing_file_is_empty_config(home: GoatHome) -> None:
    config = load_config(home)
    assert config == Config()
    assert config.selected(GLOBAL) is None
    assert config.scopes() == []
    assert not home.config_dir.exists()  # reading creates nothing


def test_round_trip(home: GoatHome) -> None:
    config = (
        Config()
        .with_binding(PEN_A, _hindsight("pen-alpha"))
        .with_binding(GLOBAL, _md("global"))
        .with_binding(PEN_B, _md("pen-beta", "/vault"))
        .with_enabled(PEN_B, False)
    )
    path = save_config(home, config)
    assert path == home.config_path
    loaded = load_config(home)
    assert loaded == config
    assert [s.key for s, _ in loaded.scopes()] == ["global", "pen:alpha", "pen:beta"]
    assert loaded.selected(PEN_B) == _md("pen-beta", "/vault").model_copy(update={"enabled": False})
    doc = json.loads(path.read_text())
    assert doc["schema_version"] == CURRENT_SCHEMA
    assert doc["selection"] == {
        "global": "global",
        "pen:alpha": "pen-alpha",
        "pen:beta": "pen-beta",
    }
    assert doc["bindings"]["pen-alpha"] == {
        "provider": "hindsight",
        "settings": {"base_url": "https://h.example", "bank_id": "goat"},
        "enabled": True,
        "egress": ["https://h.example/mcp/goat/"],
    }


def test_file_is_0600_and_created_dir_0700_even_with_umask_0(home: GoatHome) -> None:
    old = os.umask(0)
    try:
        save_config(home, Config().with_binding(GLOBAL, _md("global")))
    finally:
        os.umask(old)
    assert stat.S_IMODE(home.config_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(home.config_dir.stat().st_mode) == 0o700
    # a save over an existing world-readable file leaves an owner-only one
    home.config_path.chmod(0o644)
    save_config(home, load_config(home).with_enabled(GLOBAL, False))
    assert stat.S_IMODE(home.config_path.stat().st_mode) == 0o600


def test_save_uses_the_shared_atomic_write_and_fsyncs_the_folder(
    home: GoatHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    from goat_core import fileio as files

    synced: list[Path] = []
    real_fsync_dir = files.fsync_dir

    def record(folder: Path) -> None:
        synced.append(Path(folder))
        real_fsync_dir(folder)

    monkeypatch.setattr(files, "fsync_dir", record)
    save_config(home, Config().with_binding(GLOBAL, _md("global")))
    assert synced == [home.config_dir]


def test_a_world_readable_config_is_never_copied_to_a_readable_temp(
    home: GoatHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_config(home, Config().with_binding(GLOBAL, _md("global")))
    home.config_path.chmod(0o644)
    modes: list[int] = []
    real_replace = os.replace

    def replace(src: str, dst: str) -> None:
        modes.append(stat.S_IMODE(os.stat(src).st_mode))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    save_config(home, load_config(home).with_enabled(GLOBAL, False))
    assert modes == [0o600]
    assert stat.S_IMODE(home.config_path.stat().st_mode) == 0o600


def test_atomic_save_leaves_nothing_on_failure(
    home: GoatHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = Config().with_binding(GLOBAL, _md("global"))
    save_config(home, original)
    before = home.config_path.read_bytes()

    def fail(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(
        StoreUnwritable, match=r"configuration at .*memory\.json: the disk is full \(No space left"
    ):
        save_config(home, original.with_binding(PEN_A, _md("pen-alpha")))
    assert home.config_path.read_bytes() == before
    assert sorted(p.name for p in home.config_dir.iterdir()) == ["memory.json"]


# -- versions -----------------------------------------------------------------------------------
def test_newer_schema_is_refused_and_file_untouched(home: GoatHome) -> None:
    text = '{"schema_version": 7, "bindings": {}, "selection": {}, "future": true}'
    path = _write(home, text)
    with pytest.raises(ConfigError) as info:
        load_config(home)
    message = str(info.value)
    assert "schema_version 7" in message and "schema_version 1" in message
    assert str(path) in message and "upgrade goat-core" in message
    assert path.read_text() == text


V0 = """{
  "bindings": {
    "main": {"provider": "markdown", "settings": {"root": "/notes"}},
    "team": {"provider": "hindsight", "settings": {"base_url": "https://h.example"},
             "egress": ["https://h.example/mcp/team/"]}
  },
  "global": "main",
  "pens": {"Alpha": "team", "beta": "main"}
}
"""
NO_VERSION = """{
  "bindings": {"main": {"provider": "markdown", "settings": {"root": "/notes"}}},
  "selection": {"global": "main"}
}
"""


@pytest.mark.parametrize(
    ("text", "found"),
    [
        (V0, "has no schema_version"),  # the pre-versioned shape is not migrated
        (NO_VERSION, "has no schema_version"),  # a schema 1 shape without its version
        ('{"schema_version": 0, "bindings": {}, "selection": {}}', "has schema_version 0,"),
        ('{"schema_version": 2, "bindings": {}, "selection": {}}', "has schema_version 2,"),
        ('{"schema_version": -1, "bindings": {}}', "has schema_version -1,"),
        ('{"schema_version": "1", "bindings": {}}', 'has schema_version "1",'),
        ('{"schema_version": 1.0, "bindings": {}}', "has schema_version 1.0,"),
        ('{"schema_version": true, "bindings": {}}', "has schema_version true,"),
        ('{"schema_version": null, "bindings": {}}', "has schema_version null,"),
    ],
)
def test_any_schema_but_1_is_refused_naming_file_and_version(
    home: GoatHome, text: str, found: str
) -> None:
    path = _write(home, text)
    before = sorted(p.name for p in home.config_dir.iterdir())
    with pytest.raises(ConfigError) as info:
        load_config(home)
    message = str(info.value)
    assert message.startswith(f"{path} {found}")
    assert "reads schema_version 1 only" in message and "left unchanged" in message
    assert info.value.details["supported"] == 1
    assert path.read_text(encoding="utf-8") == text  # nothing migrated or rewritten
    assert sorted(p.name for p in home.config_dir.iterdir()) == before


def test_the_error_carries_the_version_found(home: GoatHome) -> None:
    _write(home, V0)
    with pytest.raises(ConfigError) as info:
        load_config(home)
    assert info.value.details["found"] is None
    _write(home, '{"schema_version": 0}')
    with pytest.raises(ConfigError) as info:
        load_config(home)
    assert info.value.details["found"] == 0
    assert "bind again with `goat bind`" in str(info.value)


# -- shape errors -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("{", "is not valid JSON: Expecting property name enclosed in double quotes \\(line 1"),
        ("[]", "must hold a JSON object, not list"),
        ('{"schema_version": 1, "bindings": {"a": {"provider": "x"}, "a": {}}}', "duplicate key"),
        ('{"schema_version": 1, "colour": "red"}', "unknown top-level key\\(s\\) colour"),
        ('{"schema_version": 1, "bindings": []}', "'bindings' must be an object"),
        ('{"schema_version": 1, "selection": {"global": 1}}', "'selection' must be an object"),
        ('{"schema_version": 1, "bindings": {"g": 1}}', "binding 'g' must be an object"),
        ('{"schema_version": 1, "bindings": {"g": {}}}', "binding 'g' needs a 'provider'"),
        (
            '{"schema_version": 1, "bindings": {"g": {"provider": "m", "colour": 1}}}',
            "binding 'g' is invalid: colour: Extra inputs are not permitted",
        ),
        (
            '{"schema_version": 1, "bindings": {"G!": {"provider": "m"}}}',
            "binding 'G!' is invalid: id: Value error, binding id 'G!' must match",
        ),
        (
            '{"schema_version": 1, "bindings": {"g": {"provider": "m", "id": "h"}}}',
            "binding 'g' has a different 'id'",
        ),
        (
            '{"schema_version": 1, "bindings": {}, "selection": {"global": "nope"}}',
            "scope global selects binding 'nope', which is not in 'bindings'",
        ),
        (
            '{"schema_version": 1, "bindings": {"g": {"provider": "m"}}, '
            '"selection": {"pen:A": "g"}}',
            "selection key 'pen:A' should be 'pen:a'",
        ),
        (
            '{"schema_version": 1, "bindings": {"g": {"provider": "m"}}, '
            '"selection": {"everywhere": "g"}}',
            "selection key 'everywhere': invalid scope",
        ),
    ],
)
def test_invalid_files_name_file_and_problem(home: GoatHome, text: str, rule: str) -> None:
    path = _write(home, text)
    with pytest.raises(ConfigError, match=rule) as info:
        load_config(home)
    assert str(path) in str(info.value)


def test_non_utf8_file(home: GoatHome) -> None:
    home.config_dir.mkdir(parents=True)
    home.config_path.write_bytes(b'{"schema_version": 1, "x": "\xff"}')
    with pytest.raises(ConfigError, match="is not UTF-8 text"):
        load_config(home)


# -- changes ------------------------------------------------------------------------------------
def test_binding_again_replaces_and_drops_unused_binding() -> None:
    config = Config().with_binding(PEN_A, _md("pen-alpha")).with_binding(PEN_A, _md("other"))
    assert config.selection == {"pen:alpha": "other"}
    assert set(config.bindings) == {"other"}


def test_shared_binding_is_kept_while_another_scope_selects_it() -> None:
    shared = _md("shared")
    config = Config().with_binding(GLOBAL, shared).with_binding(PEN_A, shared)
    config = config.with_binding(PEN_A, _md("pen-alpha"))
    assert set(config.bindings) == {"shared", "pen-alpha"}
    config = config.without_binding(GLOBAL)
    assert set(config.bindings) == {"pen-alpha"}
    assert config.selected(GLOBAL) is None


def test_changing_a_binding_another_scope_selects_is_a_conflict() -> None:
    config = Config().with_binding(GLOBAL, _md("shared"))
    with pytest.raises(Conflict, match="binding id 'shared' is selected by global"):
        config.with_binding(PEN_A, _md("shared", "/elsewhere"))


def test_unbind_and_enable_of_unbound_scope_are_not_found() -> None:
    with pytest.raises(NotFound, match="scope pen:alpha has no binding"):
        Config().without_binding(PEN_A)
    with pytest.raises(NotFound, match="scope global has no binding"):
        Config().with_enabled(GLOBAL, False)


def test_config_is_frozen() -> None:
    config = Config()
    with pytest.raises(ValueError, match="frozen"):
        config.schema_version = 2  # type: ignore[misc]


# -- secret guard -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("settings", "rule"),
    [
        ({"api_key": "x"}, "setting 'api_key' of binding 'global' looks like a secret"),
        ({"auth": {"Access-Token": "x"}}, "setting 'auth.Access-Token' .* looks like a secret"),
        ({"PASSWORD": "x"}, "setting 'PASSWORD'"),
        ({"client_secret": "x"}, "setting 'client_secret'"),
        ({"servers": [{"token": "x"}]}, "setting 'servers\\[0\\].token'"),
        ({"base_url": "https://u:p@h.example"}, "setting 'base_url' .* is a URL with a password"),
        # a password with an unescaped '#', '/' or '?' breaks the parse, not the rule
        ({"server": "tcp://:Sup3rSecret#PW@127.0.0.1:5"}, "setting 'server' .* with a password"),
        ({"server": "tcp://:Sup3r/PW@127.0.0.1:5"}, "setting 'server' .* with a password"),
        ({"server": "tcp://u:Sup3r?PW@127.0.0.1:5"}, "setting 'server' .* with a password"),
    ],
)
def test_secret_guard_refuses_to_save(home: GoatHome, settings: dict[str, Any], rule: str) -> None:
    binding = Binding(id="global", provider="hindsight", settings=settings)
    with pytest.raises(ConfigError, match=rule):
        save_config(home, Config().with_binding(GLOBAL, binding))
    assert not home.config_path.exists()


def test_secret_guard_checks_egress_urls(home: GoatHome) -> None:
    binding = Binding(id="global", provider="h", egress=("https://k@h.example/mcp/",))
    with pytest.raises(ConfigError, match="egress URL of binding 'global' carries credentials"):
        save_config(home, Config().with_binding(GLOBAL, binding))


def test_secret_guard_allows_ordinary_names(home: GoatHome) -> None:
    settings = {"max_tokens": 5, "token_budget": 3, "keyfile_dir": "/x", "secretary": "bob"}
    settings["profile"] = "https://social.example/users/@me"  # an '@' in a path is no userinfo
    binding = Binding(id="global", provider="m", settings=settings)
    save_config(home, Config().with_binding(GLOBAL, binding))
    assert load_config(home).selected(GLOBAL) == binding


# -- properties ---------------------------------------------------------------------------------
_json_leaf = st.none() | st.booleans() | st.integers() | st.text(max_size=10)
_pen_ids = st.from_regex(r"[a-z0-9][a-z0-9._-]{0,10}", fullmatch=True)
_safe_keys = st.sampled_from(["root", "bank_id", "base_url", "limit", "mode", "tags"])


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pens=st.lists(_pen_ids, unique=True, max_size=4),
    values=st.dictionaries(_safe_keys, _json_leaf, max_size=3),
    enabled=st.booleans(),
)
def test_property_save_load_round_trip(
    tmp_path: Path, pens: list[str], values: dict[str, Any], enabled: bool
) -> None:
    home = GoatHome.at(tmp_path / f"h{abs(hash((tuple(pens), enabled, repr(values))))}")
    config = Config()
    for pen in pens:
        scope = Scope.pen(pen)
        config = config.with_binding(
            scope, Binding(id=binding_id_for(scope), provider="markdown", settings=values)
        )
    config = config.with_binding(GLOBAL, Binding(id="global", provider="m", enabled=enabled))
    save_config(home, config)
    assert load_config(home) == config
