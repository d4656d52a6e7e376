"""Pen identity continuity: ``goat bind`` in a folder records its project (the main
worktree's folder and the first commit). A bound repository that gains or changes a git
remote derives a new Pen; the CLI, the server and the hook keep serving the bound one, and
say so. Another repository cloned at the same path never inherits it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from .conftest import GOAT, git, goat, goat_env, run_hook

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "heronry"
    path.mkdir()
    git(path, "init", "-q")
    git(path, "commit", "-q", "--allow-empty", "-m", "init")
    return path


def _scope(home: Path, cwd: Path) -> dict[str, str]:
    out = goat(home, "scope", "--json", cwd=cwd).stdout
    return dict(json.loads(out))


async def test_a_remote_added_to_a_bound_repository_keeps_its_memory(
    home: Path, repo: Path
) -> None:
    before = _scope(home, repo)
    pen = before["pen_id"]
    goat(home, "bind", "--pen", pen, "markdown", cwd=repo)
    goat(home, "remember", "--pen", pen, "the heronry key is under the blue stone")
    git(repo, "remote", "add", "origin", "git@github.com:birds/heronry.git")

    after = _scope(home, repo)  # the CLI
    assert after["scope"] == f"pen:{pen}" and after["derivation"] == "continued"
    assert f"pen:{pen} is bound for this folder" in after["detail"]
    assert "which is unbound" in after["detail"]

    out, err, _code = run_hook(  # the hook
        home, {"prompt": "where is the heronry key?", "cwd": str(repo)}, cwd=repo
    )
    assert "blue stone" in out["hookSpecificOutput"]["additionalContext"], err

    params = StdioServerParameters(  # the server
        command=GOAT, args=["serve", "--from-dir", str(repo)], env=goat_env(home), cwd=repo
    )
    async with Client(params) as client:
        scope = json.loads((await client.read_resource("goat://scope")).contents[0].text)
        r = await client.call_tool("recall", {"query": "heronry key"})
    assert scope["scope"] == f"pen:{pen}" and scope["how"] == "continued"
    assert "this folder's bound Pen, kept" in scope["receipt"]
    assert "blue stone" in json.dumps(r.structured_content)

    doctor = goat(home, "doctor", "claude-code", "--dir", str(repo), "--json", check=False)
    assert json.loads(doctor.stdout)["scope"] == f"pen:{pen}"


def test_a_bound_new_identity_wins(home: Path, repo: Path) -> None:
    """Both bound: the Pen the folder derives now is served (nothing is kept)."""
    old = _scope(home, repo)["pen_id"]
    goat(home, "bind", "--pen", old, "markdown", cwd=repo)
    git(repo, "remote", "add", "origin", "https://example.com/birds/heronry")
    new = _scope(home, repo)["pen_id"]
    assert new == old  # kept while the new one is unbound
    derived = json.loads(
        goat(home, "scope", "--json", cwd=repo, env=goat_env(home / "other")).stdout
    )
    goat(home, "bind", "--pen", derived["pen_id"], "markdown")
    now = _scope(home, repo)
    assert now["pen_id"] == derived["pen_id"] and now["derivation"] == "git-remote"


def test_an_unbound_repository_is_never_moved(home: Path, repo: Path) -> None:
    git(repo, "remote", "add", "origin", "https://example.com/birds/heronry")
    now = _scope(home, repo)
    assert now["derivation"] == "git-remote"


def test_status_shows_the_kept_pen_not_the_unbound_new_one(home: Path, repo: Path) -> None:
    """``goat status`` in the folder listed the new, unbound Pen as a dim row to bind;
    binding it would have moved the folder to an empty Pen."""
    pen = _scope(home, repo)["pen_id"]
    goat(home, "bind", "--pen", pen, "markdown", cwd=repo)
    git(repo, "remote", "add", "origin", "git@github.com:birds/heronry.git")
    rows = json.loads(goat(home, "status", "--json", cwd=repo).stdout)["bindings"]
    here = [r for r in rows if r.get("derivation")]
    assert [(r["scope"], r["derivation"]) for r in here] == [(f"pen:{pen}", "continued")]
    assert len(rows) == 2  # Global and the kept Pen: no row for the unbound new one


def test_unreadable_bindings_are_said_in_the_derivation(home: Path, repo: Path) -> None:
    pen = _scope(home, repo)["pen_id"]
    goat(home, "bind", "--pen", pen, "markdown", cwd=repo)
    git(repo, "remote", "add", "origin", "git@github.com:birds/heronry.git")
    (home / "memory.json").write_text('{"bad')
    scope = _scope(home, repo)
    assert scope["derivation"] == "git-remote"
    assert "the bindings could not be read, so no earlier Pen was looked for" in scope["detail"]
    assert "memory.json is not valid JSON" in scope["detail"]


def _claude_settings(user: Path, **options: str) -> None:
    settings = {"enabledPlugins": {"goat-memory@goat-memory": True}}
    if options:
        settings["pluginConfigs"] = {"goat-memory@goat-memory": {"options": options}}
    (user / ".claude").mkdir(parents=True, exist_ok=True)
    (user / ".claude" / "settings.json").write_text(json.dumps(settings))


def test_the_claude_code_doctor_reads_the_plugins_settings(
    home: Path, repo: Path, tmp_path: Path
) -> None:
    user = tmp_path / "user"
    user.mkdir()
    env = goat_env(home, HOME=str(user))
    args = ["doctor", "claude-code", "--dir", str(repo), "--json"]
    missing = goat(home, *args, check=False, env=env)
    assert "plugin is not enabled in Claude Code's settings" in missing.stdout
    goat(home, "bind", "--pen", "team", "markdown")
    _claude_settings(user, scope_pin="pen:team")
    pinned = goat(home, *args, check=False, env=env)
    assert json.loads(pinned.stdout)["scope"] == "pen:team", pinned.stdout
    _claude_settings(user, scope_pin="team")  # the exact input: a pin that is not one
    bad = goat(home, *args, check=False, env=env)
    assert bad.returncode == 2
    assert "pin 'team' is neither 'global' nor 'pen:ID'" in bad.stderr
    assert "goat serve would refuse to start" in bad.stderr


def test_another_repository_cloned_at_the_same_path_never_inherits_the_pen(
    home: Path, repo: Path, tmp_path: Path
) -> None:
    """The exact input: a bound repository without a remote at ``W/heronry`` is removed and
    a different repository is cloned at the same path. Its prompts got the old notes."""
    import shutil

    pen = _scope(home, repo)["pen_id"]
    goat(home, "bind", "--pen", pen, "markdown", cwd=repo)
    goat(home, "remember", "--pen", pen, "OLD-REPO secret plan: acquire the competitor")
    other = tmp_path / "beta-origin"
    other.mkdir()
    git(other, "init", "-q")
    git(other, "commit", "-q", "--allow-empty", "-m", "beta")
    shutil.rmtree(repo)
    git(tmp_path, "clone", "-q", str(other), str(repo))
    now = _scope(home, repo)
    assert now["derivation"] == "git-remote" and now["pen_id"] != pen
    out, err, _code = run_hook(
        home, {"prompt": "what is the secret plan for the competitor?", "cwd": str(repo)}
    )
    assert "OLD-REPO" not in out["hookSpecificOutput"]["additionalContext"], err


def test_a_changed_remote_keeps_the_pen_bound_for_the_folder(home: Path, repo: Path) -> None:
    git(repo, "remote", "add", "origin", "https://example.com/birds/alpha")
    alpha = _scope(home, repo)["pen_id"]
    goat(home, "bind", "--pen", alpha, "markdown", cwd=repo)
    git(repo, "remote", "set-url", "origin", "https://example.com/birds/beta")
    now = _scope(home, repo)
    assert now["pen_id"] == alpha and now["derivation"] == "continued"


def test_a_worktree_keeps_what_its_main_worktree_keeps(
    home: Path, repo: Path, tmp_path: Path
) -> None:
    pen = _scope(home, repo)["pen_id"]
    goat(home, "bind", "--pen", pen, "markdown", cwd=repo)
    git(repo, "remote", "add", "origin", "https://example.com/birds/heronry")
    worktree = tmp_path / "heronry-feature"
    git(repo, "worktree", "add", "-q", str(worktree), "-b", "feature")
    assert _scope(home, worktree)["pen_id"] == _scope(home, repo)["pen_id"] == pen


def test_a_pen_bound_elsewhere_is_adopted_by_hand(home: Path, repo: Path) -> None:
    """Bound from another folder, nothing was recorded: a remote added moves the folder to
    its new Pen, until ``goat scope --adopt`` records it."""
    pen = _scope(home, repo)["pen_id"]
    goat(home, "bind", "--pen", pen, "markdown")  # from the test's own folder
    git(repo, "remote", "add", "origin", "https://example.com/birds/heronry")
    assert _scope(home, repo)["derivation"] == "git-remote"
    adopted = goat(home, "scope", "--adopt", pen, "--json", cwd=repo)
    assert json.loads(adopted.stdout)["scope"] == f"pen:{pen}"
    assert _scope(home, repo)["derivation"] == "continued"
