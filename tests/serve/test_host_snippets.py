"""One snippet per MCP host (``integrations/hosts/``), each held to that host's documented
entry schema and then put where the host reads it: ``goat doctor HOST`` must find it, see
the GOAT home reach the server, and resolve a scope with memory. The README's host table
names every snippet. Codex CLI and Gemini CLI also run their snippet for real
(tests/hosts)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from goat_core.serve._hosts import HOSTS

from .conftest import GOAT, ROOT, git, goat, goat_env

SNIPPETS = ROOT / "integrations" / "hosts"

#: Per host: the table of servers, and the keys an entry of it may have (from each host's
#: documentation: Codex config.md, Cursor's and VS Code's MCP docs, Gemini CLI's
#: mcp-server.md, Claude Desktop's MCP quickstart).
SCHEMAS: dict[str, tuple[str, set[str], set[str]]] = {
    "codex": (
        "mcp_servers",
        {"command"},
        {
            "command",
            "args",
            "env",
            "env_vars",
            "cwd",
            "required",
            "enabled",
            "startup_timeout_sec",
            "tool_timeout_sec",
            "enabled_tools",
            "disabled_tools",
        },
    ),
    "cursor": ("mcpServers", {"command"}, {"command", "args", "env", "envFile", "type"}),
    "vscode": (
        "servers",
        {"type", "command"},
        {"type", "command", "args", "env", "envFile", "cwd"},
    ),
    "gemini": (
        "mcpServers",
        {"command"},
        {"command", "args", "env", "cwd", "timeout", "trust", "includeTools", "excludeTools"},
    ),
    "claude-desktop": ("mcpServers", {"command"}, {"command", "args", "env"}),
}


def _load(path: Path) -> Any:
    text = path.read_text()
    return tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_each_snippet_keeps_to_its_hosts_schema(name: str) -> None:
    host = HOSTS[name]
    key, required, allowed = SCHEMAS[name]
    data = _load(SNIPPETS / host.snippet)
    assert set(data) == {key}, f"{host.title} reads servers from {key!r}"
    (entry,) = data[key].values()
    assert required <= set(entry) <= allowed, sorted(entry)
    assert isinstance(entry["command"], str)
    assert all(isinstance(a, str) for a in entry.get("args", []))
    assert entry["args"][0] == "serve"
    if name == "vscode":
        assert entry["type"] == "stdio"
    if name == "claude-desktop":
        assert Path(entry["command"]).is_absolute()
    # how the GOAT home reaches the server is written in the entry itself
    home_given = (
        "--home" in entry["args"]
        or "GOAT_HOME" in (entry.get("env") or {})
        or "GOAT_HOME" in (entry.get("env_vars") or [])
    )
    assert home_given, f"{host.title}'s snippet does not say how GOAT_HOME reaches goat serve"


def test_the_readme_host_table_names_every_snippet() -> None:
    readme = (ROOT / "README.md").read_text()
    for host in HOSTS.values():
        assert f"integrations/hosts/{host.snippet}" in readme, host.snippet


def _place(name: str, user: Path, project: Path, home: Path) -> dict[str, str]:
    """The snippet written where its host reads it; returns the doctor's environment."""
    host = HOSTS[name]
    text = (SNIPPETS / host.snippet).read_text()
    text = text.replace("/absolute/path/to/goat-home", str(home))
    text = text.replace("/absolute/path/to/goat", GOAT)
    env = goat_env(home, HOME=str(user))
    target = {
        "codex": user / ".codex" / "config.toml",
        "cursor": project / ".cursor" / "mcp.json",
        "vscode": project / ".vscode" / "mcp.json",
        "gemini": user / ".gemini" / "settings.json",
        "claude-desktop": user / ".config" / "Claude" / "claude_desktop_config.json",
    }[name]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return env


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_each_snippet_where_its_host_reads_it_passes_the_doctor(
    name: str, home: Path, tmp_path: Path
) -> None:
    user, project = tmp_path / "user", tmp_path / "project"
    user.mkdir()
    project.mkdir()
    git(project, "init", "-q")
    env = _place(name, user, project, home)
    scope = json.loads(goat(home, "scope", "--json", cwd=project, env=env).stdout)
    goat(home, "bind", "--pen", scope["pen_id"], "markdown", env=env)
    proc = goat(home, "doctor", name, "--dir", str(project), "--json", check=False, env=env)
    report = json.loads(proc.stdout)
    assert proc.returncode == 0, report["problems"]
    assert report["home"] == str(home)
    expected = "global" if name == "claude-desktop" else scope["scope"]
    assert report["scope"] == expected and report["memory"] is True


def test_the_doctor_names_a_home_that_does_not_reach_the_server(home: Path, tmp_path: Path) -> None:
    """The exact input: a Codex entry without ``env_vars`` while ``GOAT_HOME`` is set."""
    user = tmp_path / "user"
    (user / ".codex").mkdir(parents=True)
    (user / ".codex" / "config.toml").write_text(
        '[mcp_servers.goat-memory]\ncommand = "goat"\nargs = ["serve", "--global"]\n'
    )
    env = goat_env(home, HOME=str(user))
    proc = goat(home, "doctor", "codex", "--dir", str(tmp_path), check=False, env=env)
    assert proc.returncode == 6
    assert "Codex CLI does not pass GOAT_HOME" in proc.stdout
    assert f"not {home} (from $GOAT_HOME)" in proc.stdout


def test_the_doctor_wants_an_absolute_path_for_claude_desktop(home: Path, tmp_path: Path) -> None:
    user = tmp_path / "user"
    path = user / ".config" / "Claude" / "claude_desktop_config.json"
    path.parent.mkdir(parents=True)
    entry = {"command": "goat", "args": ["serve", "--home", str(home), "--global"]}
    path.write_text(json.dumps({"mcpServers": {"goat": entry}}))
    env = goat_env(home, HOME=str(user))
    proc = goat(home, "doctor", "claude-desktop", check=False, env=env)
    assert proc.returncode == 6 and "needs an absolute command path" in proc.stdout


def test_the_doctor_says_where_it_looked(home: Path, tmp_path: Path) -> None:
    env = goat_env(home, HOME=str(tmp_path))
    proc = goat(home, "doctor", "vscode", "--dir", str(tmp_path), check=False, env=env)
    assert proc.returncode == 6 and "no VS Code configuration found" in proc.stdout


@pytest.mark.parametrize(
    "entry,problem",
    [
        ('enabled = false\nargs = ["serve", "--global"]', "the entry is disabled"),
        ('args = ["serve", "--global", "--http", "127.0.0.1:8765"]', "speaks stdio"),
        ('args = ["remember", "--global", "serve"]', "args do not start with serve"),
        ('args = ["serve", "--global", "--home"]', "--home has no value"),
        ('args = ["serve", 5]', "args must be a list of strings"),
    ],
)
def test_the_doctor_never_says_ok_for_an_entry_that_cannot_serve(
    home: Path, tmp_path: Path, entry: str, problem: str
) -> None:
    """The exact inputs of an adversarial run: each reported ok, exit 0."""
    user = tmp_path / "user"
    (user / ".codex").mkdir(parents=True)
    (user / ".codex" / "config.toml").write_text(
        f'[mcp_servers.goat-memory]\ncommand = "goat"\n{entry}\nenv_vars = ["GOAT_HOME"]\n'
    )
    env = goat_env(home, HOME=str(user))
    proc = goat(home, "doctor", "codex", "--dir", str(tmp_path), check=False, env=env)
    assert proc.returncode == 6 and problem in proc.stdout, proc.stdout


def test_the_doctor_reads_a_config_nested_too_deeply(home: Path, tmp_path: Path) -> None:
    user = tmp_path / "user"
    path = user / ".cursor" / "mcp.json"
    path.parent.mkdir(parents=True)
    path.write_text("[" * 100_000 + "]" * 100_000)
    env = goat_env(home, HOME=str(user))
    proc = goat(home, "doctor", "cursor", "--dir", str(tmp_path), check=False, env=env)
    assert proc.returncode == 6 and "nested too deeply" in proc.stdout, proc.stderr
