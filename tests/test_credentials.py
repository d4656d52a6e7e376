"""goat_core.credentials: keyring when a real one is active, else an owner-only file."""

from __future__ import annotations

import io
import json
import os
import re
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.backend
import keyring.backends.fail
import keyring.errors
import pytest
import structlog.testing
from hypothesis import given
from hypothesis import strategies as st

from goat_core import logs
from goat_core.contract import PEN_ID_PATTERN, Binding, CredentialSpec
from goat_core.errors import BadInput, CredentialError
from goat_core.host import GoatHome
from goat_core.host._credentials import (
    CredentialStore,
    credential_env_var,
    missing_credential_message,
    prompt_secret,
    read_secret_from_stdin,
)

KEY = "sk-test-6f1d0c9a3b"


class MemoryKeyring(keyring.backend.KeyringBackend):
    """Stands in for a real OS keyring (priority >= 1 is what ``recommended`` wants)."""

    priority = 5  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if self.items.pop((service, username), None) is None:
            raise keyring.errors.PasswordDeleteError("not found")


class PlaintextLikeKeyring(MemoryKeyring):
    """Like keyrings.alt's PlaintextKeyring: usable but not a real OS keyring."""

    priority = 0.5  # type: ignore[assignment]


class BlockingKeyring(MemoryKeyring):
    """A keyring whose calls hang (a locked collection waiting for a prompt)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def get_password(self, service: str, username: str) -> str | None:
        self.release.wait(30)
        return "late-value-never-used"

    def set_password(self, service: str, username: str, password: str) -> None:
        self.release.wait(30)


class RefusingKeyring(MemoryKeyring):
    def set_password(self, service: str, username: str, password: str) -> None:
        raise keyring.errors.PasswordSetError("locked")


@pytest.fixture
def use_keyring() -> Iterator[object]:
    """Yields a setter; the process-wide keyring is restored afterwards."""
    previous = keyring.get_keyring()
    yield keyring.set_keyring
    keyring.set_keyring(previous)


@pytest.fixture
def home(tmp_path: Path) -> GoatHome:
    return GoatHome.at(tmp_path / "goat")


@pytest.fixture
def notices() -> list[str]:
    return []


@pytest.fixture
def no_keyring(use_keyring: object) -> None:
    keyring.set_keyring(keyring.backends.fail.Keyring())


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# -- keyring ------------------------------------------------------------------------------------
def test_real_keyring_is_used_and_nothing_touches_disk(
    home: GoatHome, notices: list[str], use_keyring: object
) -> None:
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    store = CredentialStore(home, notice=notices.append)
    assert store.backend() == "keyring"
    assert store.set("pen-alpha", "api_key", KEY) == "keyring"
    assert backend.items == {("goat-memory", "pen-alpha/api_key"): KEY}
    assert store.get("pen-alpha") == KEY
    assert store.get("pen-beta") is None
    assert not home.config_dir.exists()
    store.delete("pen-alpha", "api_key")
    store.delete("pen-alpha", "api_key")  # absent is fine
    assert store.get("pen-alpha") is None
    assert notices == []


def test_keyring_set_removes_a_stale_file_copy(
    home: GoatHome, notices: list[str], use_keyring: object
) -> None:
    keyring.set_keyring(keyring.backends.fail.Keyring())
    CredentialStore(home, notice=notices.append).set("global", "api_key", "old-key-value")
    keyring.set_keyring(MemoryKeyring())
    store = CredentialStore(home, notice=notices.append)
    assert store.set("global", "api_key", KEY) == "keyring"
    assert "old-key-value" not in home.credentials_path.read_text()
    assert store.get("global") == KEY


def test_plaintext_keyring_below_priority_1_is_not_used(
    home: GoatHome, notices: list[str], use_keyring: object
) -> None:
    backend = PlaintextLikeKeyring()
    keyring.set_keyring(backend)
    store = CredentialStore(home, notice=notices.append)
    assert store.set("global", "api_key", KEY) == "file"
    assert backend.items == {}
    assert store.get("global") == KEY


def test_refusing_keyring_falls_back_to_file_with_notice(
    home: GoatHome, notices: list[str], use_keyring: object
) -> None:
    keyring.set_keyring(RefusingKeyring())
    store = CredentialStore(home, notice=notices.append)
    assert store.set("global", "api_key", KEY) == "file"
    assert notices == [
        f"the OS keyring refused the key (PasswordSetError); credentials are stored in "
        f"{home.credentials_path} (owner-only)"
    ]
    assert store.get("global") == KEY


def test_hanging_keyring_times_out_and_falls_back_to_file(
    home: GoatHome, notices: list[str], use_keyring: object
) -> None:
    backend = BlockingKeyring()
    keyring.set_keyring(backend)
    try:
        store = CredentialStore(home, notice=notices.append, keyring_timeout=0.2)
        started = time.monotonic()
        assert store.set("global", "api_key", KEY) == "file"
        assert time.monotonic() - started < 5
        assert notices == [
            f"the OS keyring did not answer within 0.2 s; credentials are stored in "
            f"{home.credentials_path} (owner-only)"
        ]
        assert store.get("global") == KEY  # the store stops asking the hung keyring
        reading = CredentialStore(home, notice=notices.append, keyring_timeout=0.2)
        assert reading.get("global") == KEY  # get times out too, then reads the file
        assert len(notices) == 2
    finally:
        backend.release.set()


# -- file store ---------------------------------------------------------------------------------
def test_file_store_is_0600_in_a_0700_dir_with_umask_0(
    home: GoatHome, notices: list[str], no_keyring: None
) -> None:
    store = CredentialStore(home, notice=notices.append)
    assert store.backend() == "file"
    old = os.umask(0)
    try:
        assert store.set("pen-alpha", "api_key", KEY) == "file"
        store.set("pen-beta", "api_key", "sk-second-key")
    finally:
        os.umask(old)
    path = home.credentials_path
    assert _mode(path) == 0o600
    assert _mode(path.parent) == 0o700
    assert notices == [f"no OS keyring is active; credentials are stored in {path} (owner-only)"]
    assert json.loads(path.read_text()) == {
        "version": 1,
        "credentials": {"pen-alpha": {"api_key": KEY}, "pen-beta": {"api_key": "sk-second-key"}},
    }
    assert sorted(p.name for p in path.parent.iterdir()) == ["credentials.json"]
    assert CredentialStore(home).get("pen-alpha") == KEY
    store.delete("pen-alpha")
    assert store.get("pen-alpha") is None
    assert store.get("pen-beta") == "sk-second-key"


def test_existing_home_dir_is_tightened_to_0700(home: GoatHome, no_keyring: None) -> None:
    home.config_dir.mkdir(parents=True, mode=0o755)
    home.config_dir.chmod(0o755)
    CredentialStore(home, notice=lambda line: None).set("global", "api_key", KEY)
    assert _mode(home.config_dir) == 0o700


def test_group_readable_file_is_refused(home: GoatHome, no_keyring: None) -> None:
    store = CredentialStore(home, notice=lambda line: None)
    store.set("global", "api_key", KEY)
    home.credentials_path.chmod(0o644)
    with pytest.raises(CredentialError, match=r"readable by others \(mode -rw-r--r--\)") as info:
        store.get("global")
    assert f"chmod 600 {home.credentials_path}" in str(info.value)
    assert KEY not in str(info.value)
    with pytest.raises(CredentialError, match="readable by others"):
        store.set("global", "api_key", "sk-another-key")  # never writes over it either


def test_symlinked_file_is_refused(home: GoatHome, tmp_path: Path, no_keyring: None) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_text('{"version": 1, "credentials": {}}')
    target.chmod(0o600)
    home.config_dir.mkdir(parents=True)
    home.credentials_path.symlink_to(target)
    with pytest.raises(CredentialError, match="a symlink is refused"):
        CredentialStore(home).get("global")


@pytest.mark.parametrize(
    ("content", "rule"),
    [
        (f'{{"credentials": {{"global": {{"api_key": "{KEY}"', "is not valid JSON"),
        (f'{{"credentials": {{"global": "{KEY}"}}}}', "must hold"),
        ("[]", "must hold"),
    ],
)
def test_invalid_file_is_refused_without_echoing_it(
    home: GoatHome, no_keyring: None, content: str, rule: str
) -> None:
    home.config_dir.mkdir(parents=True)
    home.credentials_path.write_text(content)
    home.credentials_path.chmod(0o600)
    with pytest.raises(CredentialError, match=rule) as info:
        CredentialStore(home).get("global")
    assert KEY not in str(info.value)
    assert info.value.__cause__ is None


# -- environment, validation, redaction -------------------------------------------------------
def test_env_override_wins(
    home: GoatHome, monkeypatch: pytest.MonkeyPatch, use_keyring: object
) -> None:
    keyring.set_keyring(MemoryKeyring())
    store = CredentialStore(home)
    store.set("pen-my.app", "api_key", "sk-from-keyring")
    monkeypatch.setenv("GOAT_API_KEY_PEN_MY_APP", KEY)
    assert store.get("pen-my.app") == KEY
    monkeypatch.setenv("GOAT_API_KEY_PEN_MY_APP", "")
    assert store.get("pen-my.app") == "sk-from-keyring"  # an empty variable does not count


def test_env_override_shared_by_look_alike_bindings_is_ignored(
    home: GoatHome, monkeypatch: pytest.MonkeyPatch, use_keyring: object
) -> None:
    """pen-a-b, pen-a.b and pen-a_b all map to GOAT_API_KEY_PEN_A_B: a key set there for one
    must never be sent to another's server, so with two such bindings saved the override is
    ignored for both (each falls back to its own stored key)."""
    keyring.set_keyring(MemoryKeyring())
    store = CredentialStore(home)
    store.set("pen-a.b", "api_key", "sk-stored-for-a-dot-b")
    home.config_path.parent.mkdir(parents=True, exist_ok=True)
    home.config_path.write_text(json.dumps({"bindings": {"pen-a-b": {}, "pen-a.b": {}}}))
    monkeypatch.setenv("GOAT_API_KEY_PEN_A_B", "sk-env-meant-for-a-dash-b")
    with structlog.testing.capture_logs() as captured:
        assert store.get("pen-a.b") == "sk-stored-for-a-dot-b"
        assert store.get("pen-a-b") is None
    assert any(e.get("event") == "credentials.env_override_ambiguous" for e in captured)
    # one binding alone keeps its override
    home.config_path.write_text(json.dumps({"bindings": {"pen-a-b": {}}}))
    assert store.get("pen-a-b") == "sk-env-meant-for-a-dash-b"


def test_value_read_is_registered_for_redaction(
    home: GoatHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    unique = "sk-registered-7c0ffee7c0ffee"
    monkeypatch.setenv("GOAT_API_KEY_GLOBAL", unique)
    assert CredentialStore(home).get("global") == unique
    assert logs._REDACTOR.scrub_text(f"failed with {unique}") == "failed with [REDACTED]"


@pytest.mark.parametrize(
    ("binding_id", "name", "value", "rule"),
    [
        ("Pen A", "api_key", KEY, "binding id 'Pen A' must match"),
        ("global", "Api-Key", KEY, "credential name 'Api-Key' must match"),
        ("global", "api_key", "   ", "the api_key is empty; nothing was stored"),
        ("global", "api_key", "sk\nx", "contains a line break"),
    ],
)
def test_bad_input_is_refused(
    home: GoatHome, no_keyring: None, binding_id: str, name: str, value: str, rule: str
) -> None:
    with pytest.raises(BadInput, match=rule):
        CredentialStore(home).set(binding_id, name, value)
    assert not home.credentials_path.exists()


def test_repr_never_shows_a_value(home: GoatHome, no_keyring: None) -> None:
    store = CredentialStore(home, notice=lambda line: None)
    store.set("global", "api_key", KEY)
    store.get("global")
    assert KEY not in repr(store)
    assert KEY not in repr(vars(store))


@given(st.from_regex(PEN_ID_PATTERN, fullmatch=True))
def test_env_var_rule_is_shared_with_binding(binding_id: str) -> None:
    binding = Binding(id=binding_id, provider="x")
    assert credential_env_var(binding_id) == binding.credential_env_var
    assert re.fullmatch(r"GOAT_API_KEY_[A-Z0-9_]{1,64}", credential_env_var(binding_id))


# -- prompts and messages -----------------------------------------------------------------------
def test_read_secret_from_stdin() -> None:
    assert read_secret_from_stdin(io.StringIO(f"  {KEY}\r\n")) == KEY
    with pytest.raises(BadInput, match="no credential on standard input"):
        read_secret_from_stdin(io.StringIO("\n"))
    with pytest.raises(BadInput, match="more than one line"):
        read_secret_from_stdin(io.StringIO("a-key\nb-key\n"))


def test_prompt_secret_is_unechoed(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def fake_getpass(prompt: str = "") -> str:
        asked.append(prompt)
        return f"{KEY}\n"

    monkeypatch.setattr("goat_core.host._credentials.getpass.getpass", fake_getpass)
    assert prompt_secret() == KEY
    assert asked == ["Credential: "]
    monkeypatch.setattr("goat_core.host._credentials.getpass.getpass", lambda prompt="": "")
    with pytest.raises(BadInput, match="no credential entered"):
        prompt_secret()


def test_missing_credential_message() -> None:
    binding = Binding(id="pen-x", provider="hindsight")
    assert missing_credential_message("hindsight", binding, CredentialSpec()) == (
        "binding `pen-x` (provider hindsight) needs an API key: run "
        "`goat bind --pen x hindsight --credential-stdin` or set GOAT_API_KEY_PEN_X"
    )
    assert missing_credential_message("h", Binding(id="global", provider="h")) == (
        "binding `global` (provider h) needs an API key: run "
        "`goat bind --global h --credential-stdin` or set GOAT_API_KEY_GLOBAL"
    )
    token = CredentialSpec(name="token", description="access token")
    assert missing_credential_message("h", Binding(id="team", provider="h"), token) == (
        "binding `team` (provider h) needs an access token: run "
        "`goat bind ... h --credential-stdin` or set GOAT_TOKEN_TEAM"
    )
