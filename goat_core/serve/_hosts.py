"""The MCP hosts ``goat doctor HOST`` knows: where each keeps its server entries, and what
reaches a server it starts.

Each host reads a JSON or TOML file with a table of servers. What differs is the table's
key (``mcpServers``, ``servers``, ``mcp_servers``), whether the host hands the server the
user's environment, and how an entry names variables. Codex CLI and Claude Desktop start
servers with only a few variables (Codex: ``HOME``, ``PATH``, ``USER`` and a few more), so
``GOAT_HOME`` must be passed explicitly (``env``, Codex's ``env_vars``) or replaced by
``--home``. The snippets in ``integrations/hosts/`` are checked against these rules.

No mcp import.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class McpHost:
    """One host's configuration rules.

    :param name: the doctor's name for it. :param title: its product name.
    :param files: where it reads entries, ``{project}`` and ``~`` expanded.
    :param key: the table of servers. :param passes_env: it hands a server the
        environment it runs in. :param absolute_command: ``command`` must be an absolute
        path (no ``PATH`` search). :param project_vars: how an entry names the project
        folder (expanded by the host).
    """

    name: str
    title: str
    files: tuple[str, ...]
    key: str
    passes_env: bool
    absolute_command: bool = False
    project_vars: tuple[str, ...] = ()
    needs_type: str | None = None
    snippet: str = ""
    #: how an entry hands the server GOAT_HOME, for the doctor's advice
    home_advice: str = "--home DIR in args, or GOAT_HOME in the entry's env"


HOSTS: dict[str, McpHost] = {
    h.name: h
    for h in (
        McpHost(
            "codex",
            "Codex CLI",
            ("$CODEX_HOME/config.toml", "~/.codex/config.toml", "{project}/.codex/config.toml"),
            "mcp_servers",
            passes_env=False,
            snippet="codex.toml",
            home_advice='env_vars = ["GOAT_HOME"], or --home DIR in args',
        ),
        McpHost(
            "cursor",
            "Cursor",
            ("{project}/.cursor/mcp.json", "~/.cursor/mcp.json"),
            "mcpServers",
            passes_env=False,
            project_vars=("${workspaceFolder}",),
            snippet="cursor.json",
        ),
        McpHost(
            "vscode",
            "VS Code",
            ("{project}/.vscode/mcp.json",),
            "servers",
            passes_env=False,
            project_vars=("${workspaceFolder}",),
            needs_type="stdio",
            snippet="vscode.json",
        ),
        McpHost(
            "gemini",
            "Gemini CLI",
            ("{project}/.gemini/settings.json", "~/.gemini/settings.json"),
            "mcpServers",
            passes_env=True,
            snippet="gemini.json",
        ),
        McpHost(
            "claude-desktop",
            "Claude Desktop",
            (
                "~/.config/Claude/claude_desktop_config.json",
                "~/Library/Application Support/Claude/claude_desktop_config.json",
            ),
            "mcpServers",
            passes_env=False,
            absolute_command=True,
            snippet="claude-desktop.json",
        ),
    )
}

_VAR = re.compile(
    r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_]\w*)"
)


@dataclass
class EntryReport:
    """What a host would start: the file and entry read, the GOAT home and scope arguments
    the server gets, and the problems found (empty: it would serve as intended)."""

    host: McpHost
    path: Path | None = None
    entry_name: str | None = None
    command: str | None = None
    args: list[str] = field(default_factory=list)
    home: str | None = None
    home_how: str = ""
    #: the folder the host starts the server in, when the entry names one
    cwd: str | None = None
    problems: list[str] = field(default_factory=list)


def config_files(host: McpHost, project: Path, env: Mapping[str, str]) -> list[Path]:
    """The files ``host`` reads for ``project``, in order, that exist."""
    out: list[Path] = []
    for pattern in host.files:
        if pattern.startswith("$CODEX_HOME"):
            base = env.get("CODEX_HOME")
            if not base:
                continue
            pattern = base + pattern[len("$CODEX_HOME") :]
        path = Path(pattern.replace("{project}", str(project))).expanduser()
        if path.is_file() and path not in out:
            out.append(path)
    return out


#: Largest host config file read (bytes).
MAX_CONFIG_BYTES = 4_000_000


def _load(path: Path) -> Any:
    """The parsed file. :raises ValueError: not UTF-8, too large, malformed, too deep."""
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise ValueError(f"over {MAX_CONFIG_BYTES} bytes")
    text = path.read_text(encoding="utf-8")
    try:
        return tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _expand(value: str, host: McpHost, project: Path, env: Mapping[str, str]) -> str:
    for var in host.project_vars:
        value = value.replace(var, str(project))

    def sub(m: re.Match[str]) -> str:
        name = m[1] or m[2] or m[3]
        return env.get(name, "")

    return _VAR.sub(sub, value) if host.name != "codex" else value


def _is_goat(entry: Any) -> bool:
    """An entry whose command is ``goat`` (whatever its arguments: they are checked)."""
    if not isinstance(entry, Mapping):
        return False
    command = entry.get("command")
    return isinstance(command, str) and Path(command).name in ("goat", "goat.exe")


def inspect_host(host: McpHost, project: Path, env: Mapping[str, str]) -> EntryReport:
    """Read ``host``'s files for ``project`` and report its ``goat serve`` entry."""
    report = EntryReport(host)
    files = config_files(host, project, env)
    if not files:
        looked = ", ".join(host.files)
        report.problems.append(f"no {host.title} configuration found (looked in {looked})")
        return report
    for path in files:
        try:
            data = _load(path)
        except (OSError, ValueError) as exc:
            report.problems.append(f"{path} cannot be read: {exc}")
            continue
        servers = data.get(host.key) if isinstance(data, Mapping) else None
        if not isinstance(servers, Mapping):
            continue
        for name, entry in servers.items():
            if _is_goat(entry):
                report.path, report.entry_name = path, str(name)
                _check_entry(report, entry, project, env)
                return report
    where = ", ".join(str(p) for p in files)
    report.problems.append(
        f"no entry running `goat serve` under {host.key!r} in {where} (see "
        f"integrations/hosts/{host.snippet} in a GOAT checkout)"
    )
    return report


def _check_entry(
    report: EntryReport, entry: Mapping[str, Any], project: Path, env: Mapping[str, str]
) -> None:
    host = report.host
    command = str(entry["command"])
    raw = entry.get("args") or []
    if not isinstance(raw, list) or not all(isinstance(a, str) for a in raw):
        report.problems.append("args must be a list of strings")
        raw = [a for a in raw if isinstance(a, str)] if isinstance(raw, list) else []
    args = _split_equals([_expand(a, host, project, env) for a in raw])
    report.command, report.args = command, args
    if entry.get("enabled") is False or entry.get("disabled") is True:
        report.problems.append(f"the entry is disabled: {host.title} does not start it")
    if not args or args[0] != "serve":
        report.problems.append(
            f"args do not start with serve: {host.title} would run `goat "
            f"{' '.join(args)}`, not the MCP server"
        )
    if "--http" in args:
        report.problems.append(f"{host.title} speaks stdio: drop --http from the args")
    for flag in ("--home", "--pen", "--from-dir", "--pin"):
        if flag in args and args.index(flag) + 1 >= len(args):
            report.problems.append(f"{flag} has no value: goat serve would exit 2")
    if host.needs_type is not None and entry.get("type") != host.needs_type:
        report.problems.append(f'{host.title} entries need "type": "{host.needs_type}"')
    if host.absolute_command and not os.path.isabs(command):
        report.problems.append(
            f"{host.title} needs an absolute command path, not {command!r} (it does not "
            f"search your PATH): use {shutil.which('goat') or '/absolute/path/to/goat'}"
        )
    elif os.path.isabs(command):
        if not (os.path.isfile(command) and os.access(command, os.X_OK)):
            report.problems.append(f"command {command} is not an executable file")
    elif shutil.which(command, path=env.get("PATH")) is None:
        report.problems.append(f"command {command!r} is not on PATH")
    report.home, report.home_how = _served_home(entry, args, host, project, env)
    cwd = entry.get("cwd")
    report.cwd = _expand(cwd, host, project, env) if isinstance(cwd, str) and cwd else None


def _split_equals(args: list[str]) -> list[str]:
    """``--pen=p`` as ``--pen p`` (click takes both)."""
    out: list[str] = []
    for arg in args:
        name, eq, value = arg.partition("=")
        if eq and name.startswith("--"):
            out += [name, value]
        else:
            out.append(arg)
    return out


def _served_home(
    entry: Mapping[str, Any],
    args: Sequence[str],
    host: McpHost,
    project: Path,
    env: Mapping[str, str],
) -> tuple[str | None, str]:
    """The GOAT home the server would read, and how it gets there (``None``: the platform
    default)."""
    if "--home" in args:
        i = list(args).index("--home")
        if i + 1 < len(args):
            return args[i + 1], "--home in args"
    given = entry.get("env") or {}
    if isinstance(given, Mapping) and "GOAT_HOME" in given:
        value = _expand(str(given["GOAT_HOME"]), host, project, env)
        return (value or None), "env GOAT_HOME in the entry"
    names = entry.get("env_vars") or []
    unset = "" if env.get("GOAT_HOME") else ", unset here: the platform default"
    if host.name == "codex" and isinstance(names, list) and "GOAT_HOME" in names:
        return env.get("GOAT_HOME") or None, f"env_vars passes GOAT_HOME{unset}"
    if host.passes_env:
        return env.get("GOAT_HOME") or None, f"{host.title} passes its environment{unset}"
    return None, f"{host.title} does not pass GOAT_HOME"


def goat_executable() -> str:
    """This ``goat``'s absolute path (beside the interpreter, else on PATH)."""
    beside = Path(sys.executable).parent / "goat"
    return str(beside) if beside.is_file() else (shutil.which("goat") or "goat")


#: The Claude Code plugin's id in its settings (``<plugin>@<marketplace>``).
CLAUDE_PLUGIN_ID = "goat-memory@goat-memory"


@dataclass
class ClaudePluginState:
    """What Claude Code's settings say of the GOAT plugin: whether it is enabled, its saved
    ``scope_pin`` (``None``: not set), the settings file read, and the problems found."""

    enabled: bool = False
    scope_pin: str | None = None
    settings: Path | None = None
    problems: list[str] = field(default_factory=list)


def claude_plugin_state(project: Path, env: Mapping[str, str]) -> ClaudePluginState:
    """Read ``$CLAUDE_CONFIG_DIR`` (default ``~/.claude``) ``settings.json`` and the
    project's ``.claude/settings.json`` for the plugin (``enabledPlugins``,
    ``pluginConfigs.<id>.options.scope_pin``)."""
    base = Path(env.get("CLAUDE_CONFIG_DIR") or Path(env.get("HOME") or "~") / ".claude")
    state = ClaudePluginState()
    for path in (base.expanduser() / "settings.json", project / ".claude" / "settings.json"):
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            state.problems.append(f"{path} cannot be read: {exc}")
            continue
        if not isinstance(data, Mapping):
            continue
        enabled = data.get("enabledPlugins")
        if isinstance(enabled, Mapping) and enabled.get(CLAUDE_PLUGIN_ID) is True:
            state.enabled = True
        configs = data.get("pluginConfigs")
        options = configs.get(CLAUDE_PLUGIN_ID) if isinstance(configs, Mapping) else None
        options = options.get("options") if isinstance(options, Mapping) else None
        if isinstance(options, Mapping) and isinstance(options.get("scope_pin"), str):
            state.scope_pin, state.settings = options["scope_pin"], path
    if not state.enabled:
        state.problems.append(
            f"the {CLAUDE_PLUGIN_ID} plugin is not enabled in Claude Code's settings "
            f"({base / 'settings.json'}): claude plugin install {CLAUDE_PLUGIN_ID}"
        )
    return state
