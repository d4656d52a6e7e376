"""goat_core.config: memory.json on real files in a temp GOAT home."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goat_core.contract import Binding, Scope
from goat_core.errors import ConfigError, Conflict, NotFound, StoreUnwritable
from goat_core.host import GoatHome
from goat_core.host import _config as config_mod
from goat_core.host._config import (
    CURRENT_SCHEMA,
    Config,
    binding_id_for,
    legacy_decoders,
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


def _hindsight_decoder(entry: Mapping[str, Any]) -> str | None:
    if "workspace" in entry:
        return "a coding-agent binding (workspace folder); reconnect to a bank"
    return None


DECODERS = {"hindsight": _hindsight_decoder}


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
    from goat_core.filestore import _files as files

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

    monkeypatch.setattr(config_mod.os, "replace", replace)
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

    monkeypatch.setattr(config_mod.os, "replace", fail)
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
    assert str(path) in message
    assert path.read_text() == text


@pytest.mark.parametrize("bad", ['"1"', "-1", "1.0", "true"])
def test_schema_version_must_be_a_non_negative_integer(home: GoatHome, bad: str) -> None:
    _write(home, f'{{"schema_version": {bad}, "bindings": {{}}, "selection": {{}}}}')
    with pytest.raises(ConfigError, match="schema_version must be a non-negative integer"):
        load_config(home)


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


def test_v0_is_migrated_in_memory_and_written_only_on_save(home: GoatHome) -> None:
    path = _write(home, V0)
    config = load_config(home)
    assert config.migrated_from == 0
    assert config.schema_version == CURRENT_SCHEMA
    assert config.selection == {"global": "main", "pen:alpha": "team", "pen:beta": "main"}
    assert config.selected(PEN_A) == Binding(
        id="team",
        provider="hindsight",
        settings={"base_url": "https://h.example"},
        egress=("https://h.example/mcp/team/",),
    )
    assert config.selected(PEN_B) is config.selected(GLOBAL)
    assert path.read_text() == V0  # loading never writes
    save_config(home, config)
    doc = json.loads(path.read_text())
    assert doc["schema_version"] == 1
    assert "pens" not in doc and "global" not in doc
    reloaded = load_config(home)
    assert reloaded.migrated_from is None
    assert reloaded.selection == config.selection
    assert reloaded.bindings == config.bindings


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ('{"bindings": {}, "pens": {"a/b": "x"}}', "invalid Pen id 'a/b'"),
        ('{"bindings": {}, "global": 3}', "'global' must be a binding id"),
        ('{"bindings": {}, "pens": []}', "'pens' must be an object"),
        ('{"bindings": {}, "extra": 1}', "unknown key\\(s\\) extra in a version 0 file"),
        ('{"bindings": {}, "pens": {"A": "x", "a": "y"}}', "both normalise to pen:a"),
    ],
)
def test_v0_shape_errors(home: GoatHome, text: str, rule: str) -> None:
    _write(home, text)
    with pytest.raises(ConfigError, match=rule):
        load_config(home)


# -- shape errors -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("{", "is not valid JSON: Expecting property name enclosed in double quotes at line 1"),
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


# -- legacy entries -----------------------------------------------------------------------------
LEGACY_ENTRY = (
    '{ "provider":"hindsight",   "workspace" : "/home/u/proj",\n'
    '      "n": 1.0e0, "name": "caf\\u00e9", "order": [3,1,2] }'
)
LEGACY_FILE = (
    '{"schema_version": 1,\n "bindings": {\n'
    '  "global": {"provider": "markdown", "settings": {}},\n'
    f'  "pen-alpha": {LEGACY_ENTRY}\n'
    ' },\n "selection": {"global": "global", "pen:alpha": "pen-alpha"}}\n'
)


def test_legacy_entry_bytes_survive_a_save_of_another_change(home: GoatHome) -> None:
    _write(home, LEGACY_FILE)
    config = load_config(home, decoders=DECODERS)
    assert config.legacy_reason("pen-alpha") == (
        "a coding-agent binding (workspace folder); reconnect to a bank"
    )
    assert config.legacy_reason("global") is None
    assert [(s.key, b.provider) for s, b in config.legacy_scopes()] == [("pen:alpha", "hindsight")]
    assert [s.key for s, _ in config.scopes()] == ["global"]
    with pytest.raises(
        ConfigError, match=r"legacy entry: a coding-agent binding .*goat bind --pen"
    ):
        config.selected(PEN_A)

    save_config(home, config.with_binding(PEN_B, _md("pen-beta")).with_enabled(GLOBAL, False))
    saved = home.config_path.read_text(encoding="utf-8")
    assert LEGACY_ENTRY in saved
    reloaded = load_config(home, decoders=DECODERS)
    assert reloaded.legacy == config.legacy
    assert reloaded.selected(PEN_B) == _md("pen-beta")


def test_replacing_a_legacy_binding_drops_it(home: GoatHome) -> None:
    _write(home, LEGACY_FILE)
    config = load_config(home, decoders=DECODERS)
    replaced = config.with_binding(PEN_A, _hindsight("pen-alpha"))
    assert replaced.legacy == {}
    assert replaced.selected(PEN_A) == _hindsight("pen-alpha")
    save_config(home, replaced)
    assert "workspace" not in home.config_path.read_text()


def test_unbinding_a_legacy_binding_drops_it() -> None:
    config = Config(
        legacy={
            "old": config_mod.LegacyBinding(id="old", provider="hindsight", reason="r", raw="{}")
        },
        selection={"pen:alpha": "old"},
    )
    assert config.without_binding(PEN_A) == Config()
    with pytest.raises(ConfigError, match="legacy entry"):
        config.with_enabled(PEN_A, True)


def test_without_decoder_a_legacy_shaped_entry_is_an_error(home: GoatHome) -> None:
    _write(home, LEGACY_FILE)
    with pytest.raises(ConfigError, match="binding 'pen-alpha' is invalid: workspace"):
        load_config(home)


def test_failing_decoder_is_a_config_error(home: GoatHome) -> None:
    _write(home, LEGACY_FILE)

    def broken(entry: Mapping[str, Any]) -> str | None:
        raise KeyError("settings")

    with pytest.raises(ConfigError, match="legacy decoder of provider 'hindsight' failed"):
        load_config(home, decoders={"hindsight": broken})


def test_legacy_decoders_from_provider_specs() -> None:
    class Spec:
        def __init__(self, decoder: Any) -> None:
            self.legacy_decoder = decoder

    specs: Any = {"hindsight": Spec(_hindsight_decoder), "markdown": Spec(None)}
    assert legacy_decoders(specs) == {"hindsight": _hindsight_decoder}


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
    binding = Binding(id="global", provider="m", settings=settings)
    save_config(home, Config().with_binding(GLOBAL, binding))
    assert load_config(home).selected(GLOBAL) == binding


# -- properties ---------------------------------------------------------------------------------
_json_leaf = st.none() | st.booleans() | st.integers() | st.text(max_size=10)
_json = st.recursive(
    _json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
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


@given(
    value=st.dictionaries(st.text(max_size=8), _json, max_size=5),
    indent=st.sampled_from([None, 0, 1, 4]),
    separators=st.sampled_from([(",", ":"), (", ", ": "), (" ,", " : ")]),
)
def test_property_raw_entry_spans_are_exact(
    value: dict[str, Any], indent: int | None, separators: tuple[str, str]
) -> None:
    text = json.dumps({"x": 1, "bindings": value}, indent=indent, separators=separators)
    raw = config_mod._raw_entries(text)
    assert list(raw) == list(value)
    for key, entry_text in raw.items():
        assert json.loads(entry_text) == value[key]
        assert entry_text in text
