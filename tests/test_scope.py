"""Scope resolution against real git repositories, worktrees and remotes made in tmp dirs."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from goat_core import hookimpl
from goat_core.contract import (
    PEN_ID_PATTERN,
    Derivation,
    Scope,
    ScopeRequest,
    ScopeResolution,
    derive_pen_id,
    normalize_pen_id,
)
from goat_core.errors import ScopeError
from goat_core.plugins import PluginSettings, Registry, make_plugin_manager, register_plugin
from goat_core.scope import normalize_remote_url, project_identity, resolve_request

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.org", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def make_repo(path: Path, *remotes: tuple[str, str], commit: bool = False) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q")
    for name, url in remotes:
        git(path, "remote", "add", name, url)
    if commit:
        git(path, "commit", "-q", "--allow-empty", "-m", "init")
    return path


def derived(cwd: Path) -> ScopeResolution:
    return resolve_request(ScopeRequest(cwd=cwd, derive_from_cwd=True))


# -- remote URL normalisation ----------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:Org/Repo.git",
        "ssh://git@github.com/org/repo",
        "ssh://git@github.com:22/org/repo.git",
        "https://github.com/org/repo",
        "https://user@github.com/Org/Repo.git/",
        "https://user:secret-token@GitHub.com/org/repo.git",
        "http://github.com/org/repo/",
        "git://github.com/org/repo.git",
        "git+ssh://git@github.com/org/repo",
        "github.com:org/repo",
    ],
)
def test_remote_forms_normalize_to_one_identity(url: str) -> None:
    assert normalize_remote_url(url) == "github.com/org/repo"


def test_remote_normalization_never_keeps_credentials() -> None:
    identity = normalize_remote_url("https://alice:hunter2@example.com/team/app.git")
    assert identity == "example.com/team/app"
    assert "hunter2" not in identity and "alice" not in identity


def test_nested_groups_are_kept() -> None:
    assert normalize_remote_url("git@gitlab.com:a/b/c.git") == "gitlab.com/a/b/c"
    assert normalize_remote_url("https://gitlab.com/a/b/c") == "gitlab.com/a/b/c"


@pytest.mark.parametrize(
    "url", ["", "   ", "https://github.com/", "https://github.com:notaport/x", "mailto://x"]
)
def test_unusable_remote_urls_give_none(url: str) -> None:
    assert normalize_remote_url(url) is None


def test_local_remote_is_its_real_path(tmp_path: Path) -> None:
    bare = tmp_path / "srv" / "app.git"
    bare.mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "srv")
    expected = "file://" + bare.resolve().as_posix()
    assert normalize_remote_url(str(link / "app.git")) == expected
    assert normalize_remote_url("file://" + str(bare)) == expected
    assert normalize_remote_url("../srv/app.git", base=tmp_path / "work") == expected
    assert normalize_remote_url("../srv/app.git") is None  # relative without a base


# -- project identity with real repositories -------------------------------------------


@needs_git
def test_ssh_and_https_clones_agree(tmp_path: Path) -> None:
    a = make_repo(tmp_path / "one" / "repo", ("origin", "git@github.com:Org/Repo.git"))
    b = make_repo(tmp_path / "two" / "Repo-clone", ("origin", "https://github.com/org/repo"))
    ra, rb = derived(a), derived(b)
    assert ra.derivation is Derivation.GIT_REMOTE
    assert ra.identity == rb.identity == "github.com/org/repo"
    assert ra.scope == rb.scope == Scope.pen(derive_pen_id("repo", "github.com/org/repo"))
    assert ra.scope.pen_id is not None and ra.scope.pen_id.startswith("repo-")
    assert "origin" in (ra.detail or "")


@needs_git
def test_origin_wins_else_first_remote_in_config_order(tmp_path: Path) -> None:
    with_origin = make_repo(
        tmp_path / "a",
        ("zeta", "https://example.com/x/zeta"),
        ("origin", "https://example.com/x/main"),
    )
    assert project_identity(with_origin)[0] == "example.com/x/main"
    # `git remote` lists alphabetically; the first configured remote is "zeta".
    no_origin = make_repo(
        tmp_path / "b",
        ("zeta", "https://example.com/x/zeta"),
        ("alpha", "https://example.com/x/alpha"),
    )
    assert project_identity(no_origin)[0] == "example.com/x/zeta"


@needs_git
def test_insteadof_rewrite_is_applied(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", ("origin", "gh:org/repo"))
    git(repo, "config", "url.https://github.com/.insteadOf", "gh:")
    assert project_identity(repo)[0] == "github.com/org/repo"


@needs_git
def test_worktrees_of_one_repo_agree(tmp_path: Path) -> None:
    main = make_repo(tmp_path / "app", commit=True)
    git(main, "worktree", "add", "-q", str(tmp_path / "app-feature"))
    (main / "src" / "deep").mkdir(parents=True)
    r_main, r_wt = derived(main), derived(tmp_path / "app-feature")
    r_sub = derived(main / "src" / "deep")
    assert r_main.derivation is Derivation.GIT_ROOT
    assert r_main.identity == (main / ".git").resolve().as_posix()
    assert r_main.scope == r_wt.scope == r_sub.scope
    assert r_main.scope.pen_id is not None and r_main.scope.pen_id.startswith("app-")


@needs_git
def test_worktrees_with_remote_agree(tmp_path: Path) -> None:
    main = make_repo(tmp_path / "app", ("origin", "git@example.com:me/app.git"), commit=True)
    git(main, "worktree", "add", "-q", str(tmp_path / "elsewhere"))
    assert derived(main).scope == derived(tmp_path / "elsewhere").scope
    assert derived(tmp_path / "elsewhere").derivation is Derivation.GIT_REMOTE


@needs_git
def test_two_repos_named_app_get_different_pens(tmp_path: Path) -> None:
    local_a = make_repo(tmp_path / "a" / "app")
    local_b = make_repo(tmp_path / "b" / "app")
    ra, rb = derived(local_a), derived(local_b)
    assert ra.scope != rb.scope
    assert ra.derivation is rb.derivation is Derivation.GIT_ROOT

    remote_a = make_repo(tmp_path / "c" / "app", ("origin", "git@github.com:alice/app.git"))
    remote_b = make_repo(tmp_path / "d" / "app", ("origin", "git@github.com:bob/app.git"))
    assert derived(remote_a).scope != derived(remote_b).scope
    pens = {r.scope.pen_id for r in (ra, rb, derived(remote_a), derived(remote_b))}
    assert len(pens) == 4 and all(p and p.startswith("app-") for p in pens)


def test_two_plain_folders_named_notes_differ(tmp_path: Path) -> None:
    a, b = tmp_path / "x" / "notes", tmp_path / "y" / "notes"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    ra, rb = derived(a), derived(b)
    assert ra.derivation is rb.derivation is Derivation.CWD
    assert ra.identity == a.resolve().as_posix()
    assert ra.scope != rb.scope
    assert ra.scope.pen_id is not None and ra.scope.pen_id.startswith("notes-")


def test_symlinked_folder_is_the_same_project(tmp_path: Path) -> None:
    real = tmp_path / "notes"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    assert derived(tmp_path / "alias").scope == derived(real).scope


def test_without_git_folders_fall_back_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    if shutil.which("git"):
        git(repo, "init", "-q")
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin-here"))
    identity, derivation, basename = project_identity(repo)
    assert (identity, derivation, basename) == (repo.resolve().as_posix(), Derivation.CWD, "repo")


@needs_git
def test_git_env_vars_cannot_redirect_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = make_repo(tmp_path / "other", ("origin", "https://example.com/o/other"))
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    assert project_identity(plain)[1] is Derivation.CWD


@needs_git
def test_repo_rooted_at_home_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = make_repo(tmp_path / "home", ("origin", "https://example.com/me/dotfiles"))
    (home / "notes").mkdir()
    monkeypatch.setenv("HOME", str(home))
    r = derived(home / "notes")
    assert r.derivation is Derivation.CWD
    assert r.identity == (home / "notes").resolve().as_posix()


def test_home_and_root_resolve_to_global(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    for where in (tmp_path, Path("/")):
        r = derived(where)
        assert r.scope == Scope.global_()
        assert r.derivation is Derivation.GLOBAL


def test_missing_cwd_is_a_scope_error(tmp_path: Path) -> None:
    with pytest.raises(ScopeError, match="does not exist"):
        derived(tmp_path / "missing")


# -- precedence ------------------------------------------------------------------------


@needs_git
def test_project_id_always_decides(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "app", ("origin", "git@github.com:org/app.git"))
    r = resolve_request(
        ScopeRequest(project_id="Client-X", cwd=repo, pin="pinned", derive_from_cwd=True)
    )
    assert r.scope == Scope.pen("client-x")
    assert r.derivation is Derivation.PROJECT
    assert r.identity is None


@needs_git
def test_pin_beats_the_working_directory(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "app", ("origin", "git@github.com:org/app.git"))
    r = resolve_request(ScopeRequest(cwd=repo, pin="Research", derive_from_cwd=True))
    assert (r.scope, r.derivation) == (Scope.pen("research"), Derivation.PINNED)


def test_loose_chat_stays_global_unless_derivation_is_asked(tmp_path: Path) -> None:
    assert resolve_request(ScopeRequest(cwd=tmp_path)).scope == Scope.global_()
    assert resolve_request(ScopeRequest()).derivation is Derivation.GLOBAL
    assert resolve_request(ScopeRequest(derive_from_cwd=True)).scope == Scope.global_()


def test_invalid_project_id_or_pin_is_rejected_not_widened() -> None:
    with pytest.raises(ScopeError, match="invalid Pen id 'a/b'"):
        resolve_request(ScopeRequest(project_id="a/b"))
    with pytest.raises(ScopeError, match="invalid Pen id 'x:y'"):
        resolve_request(ScopeRequest(pin="x:y"))


# -- through the registry --------------------------------------------------------------


def _registry() -> Registry:
    return Registry(make_plugin_manager(PluginSettings(autoload=False)))


@needs_git
def test_registry_uses_the_builtin_resolver(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "app", ("origin", "https://github.com/org/app"))
    r = _registry().resolve_scope(ScopeRequest(cwd=repo, derive_from_cwd=True))
    assert r.derivation is Derivation.GIT_REMOTE
    assert r.scope == Scope.pen(derive_pen_id("app", "github.com/org/app"))


class _Contrary:
    @hookimpl
    def goat_resolve_scope(self, request: ScopeRequest) -> ScopeResolution:
        return ScopeResolution(scope=Scope.pen("elsewhere"), derivation=Derivation.PINNED)


def test_plugin_contradicting_a_project_id_is_a_scope_error() -> None:
    reg = _registry()
    assert register_plugin(reg.pm, _Contrary(), "contrary")
    with pytest.raises(ScopeError, match="project id always decides"):
        reg.resolve_scope(ScopeRequest(project_id="client-x"))
    # without a project id the plugin's answer stands
    assert reg.resolve_scope(ScopeRequest()).scope == Scope.pen("elsewhere")


# -- Pen id rules ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "rule"),
    [
        ("", "it is empty"),
        (" ", "it must start with a letter or digit"),
        ("a/b", "it contains '/'"),
        ("a:b", "it contains ':'"),
        ("a%2e", "it contains '%'"),
        ("café", "it contains non-ASCII characters"),
        ("-x", "it must start with a letter or digit"),
        ("a" * 65, "it is 65 characters long (at most 64)"),
        ("a b", "it contains ' '"),
        ("x\n", "it contains '\\n'"),
    ],
)
def test_invalid_pen_ids_name_the_rule(raw: str, rule: str) -> None:
    with pytest.raises(ScopeError) as info:
        normalize_pen_id(raw)
    assert rule in str(info.value)
    assert r"[a-z0-9][a-z0-9._-]{0,63}" in str(info.value)
    with pytest.raises(ScopeError):
        Scope.pen(raw)


def test_pen_ids_are_case_insensitive_and_nfc() -> None:
    assert normalize_pen_id("Client-X") == "client-x"
    assert normalize_pen_id("a" * 64) == "a" * 64
    assert Scope.pen("ABC") == Scope.pen("abc")


@given(st.text(max_size=80))
def test_every_accepted_pen_id_matches_and_is_idempotent(raw: str) -> None:
    try:
        pen_id = normalize_pen_id(raw)
    except ScopeError:
        return
    assert PEN_ID_PATTERN.fullmatch(pen_id)
    assert normalize_pen_id(pen_id) == pen_id


@given(st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", fullmatch=True))
def test_valid_pen_ids_are_accepted_lowercased(raw: str) -> None:
    assert normalize_pen_id(raw) == raw.lower()


@given(st.text(max_size=80), st.text(max_size=200))
def test_derived_pen_ids_are_always_valid(basename: str, identity: str) -> None:
    pen_id = derive_pen_id(basename, identity)
    assert normalize_pen_id(pen_id) == pen_id
    assert derive_pen_id(basename, identity) == pen_id
    assert pen_id[-9] == "-" and all(c in "0123456789abcdef" for c in pen_id[-8:])


# -- git misbehaving -------------------------------------------------------------------


def _fake_git(tmp_path: Path, script: str) -> Path:
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    exe = bin_dir / "git"
    exe.write_text("#!/bin/sh\n" + script, encoding="utf-8")
    exe.chmod(0o755)
    return bin_dir


@pytest.mark.skipif(os.name == "nt", reason="uses a POSIX shell script as git")
def test_git_timeout_is_a_scope_error_not_a_guess(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import goat_core.scope as scope_module

    monkeypatch.setenv(
        "PATH", f"{_fake_git(tmp_path, 'exec sleep 5')}{os.pathsep}{os.environ['PATH']}"
    )
    monkeypatch.setattr(scope_module, "GIT_TIMEOUT_SECONDS", 0.2)
    folder = tmp_path / "work"
    folder.mkdir()
    with pytest.raises(ScopeError, match=r"git did not answer within 0\.2 s"):
        derived(folder)


@pytest.mark.skipif(os.name == "nt", reason="uses a POSIX shell script as git")
def test_unsafe_repository_is_a_scope_error_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = "echo 'fatal: detected dubious ownership in repository at /x' >&2\nexit 128\n"
    monkeypatch.setenv("PATH", f"{_fake_git(tmp_path, script)}{os.pathsep}{os.environ['PATH']}")
    folder = tmp_path / "work"
    folder.mkdir()
    with pytest.raises(ScopeError, match=r"safe\.directory"):
        derived(folder)


@pytest.mark.skipif(os.name == "nt", reason="uses a POSIX shell script as git")
def test_git_runs_without_git_env_vars(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = tmp_path / "env.txt"
    fake = _fake_git(tmp_path, f"env > {seen}\nexit 128\n")
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("GIT_DIR", "/elsewhere/.git")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/elsewhere/config")
    folder = tmp_path / "work"
    folder.mkdir()
    assert derived(folder).derivation is Derivation.CWD
    names = {line.split("=", 1)[0] for line in seen.read_text().splitlines()}
    assert "GIT_DIR" not in names and "GIT_CONFIG_GLOBAL" not in names
    assert "GIT_TERMINAL_PROMPT" in names
