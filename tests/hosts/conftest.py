"""Fixtures that run the real Claude Code against a loopback fake of the Messages API.

``GOAT_CLAUDE_CODE`` names the ``claude`` executable; without it the tests skip (and fail
when ``CI`` is set). Each test gets a throwaway HOME with the GOAT plugin installed by
Claude Code's own ``claude plugin`` CLI from a temp copy of the marketplace (the repo's
``.claude-plugin/`` and ``integrations/``: a directory marketplace is read in place, so the
checkout is never written), a GOAT home, and a project folder that is a git repository.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .fake_anthropic import FakeAnthropic

# Like tests/serve: without the serve extra (mcp) and the markdown provider (the ``core``
# env) the host tests are not collected at all.
if importlib.util.find_spec("mcp") is None or importlib.util.find_spec("goat_markdown") is None:
    collect_ignore_glob = ["test_*.py"]

ROOT = Path(__file__).resolve().parents[2]
# A marketplace to test instead of the checkout's (a folder with .claude-plugin/ and
# integrations/), e.g. a patched copy of the plugin; the tests still copy it first.
MARKET_ENV = "GOAT_CLAUDE_MARKETPLACE"
BIN = Path(sys.executable).parent
GOAT = str(BIN / "goat")
CLAUDE_ENV = "GOAT_CLAUDE_CODE"
RUN_TIMEOUT = 90.0
CLI_TIMEOUT = 30.0

DERIVED_SENTINEL = "ZEBRA-DERIVED-4711"
PINNED_SENTINEL = "OKAPI-PINNED-0815"
PINNED_PEN = "pinned"

# Debug-log lines that mean one of the plugin's hooks failed (a command hook refused or
# exiting non-zero, an mcp_tool hook skipped/refused/failing).
HOOK_ERROR = re.compile(
    r"Hook failed to run|\[ERROR\] \"Hook |mcp_tool hook (?:skipped|refused|error)"
    r"|Hook command failed to spawn|Error occurred while executing hook command"
)


def _unavailable(reason: str) -> None:
    """Skip, or fail when CI is set (a CI run must not silently skip these tests)."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set, so this is a failure, not a skip)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def claude_bin() -> str:
    """The Claude Code executable from ``$GOAT_CLAUDE_CODE``."""
    path = os.environ.get(CLAUDE_ENV)
    if not path:
        _unavailable(f"${CLAUDE_ENV} is not set (the path of a Claude Code `claude` binary)")
    assert path is not None
    found = shutil.which(path)
    if found is None:
        _unavailable(f"${CLAUDE_ENV}={path!r} is not an executable")
    assert found is not None
    if not Path(GOAT).exists():
        _unavailable(f"no goat executable at {GOAT}")
    return found


def market_source() -> Path:
    """The marketplace under test: ``$GOAT_CLAUDE_MARKETPLACE``, else the checkout."""
    return Path(os.environ.get(MARKET_ENV) or ROOT)


def _read_json(*parts: str) -> dict[str, Any]:
    return json.loads(market_source().joinpath(*parts).read_text(encoding="utf-8"))


def plugin_manifest() -> dict[str, Any]:
    """The plugin's plugin.json."""
    return _read_json("integrations", "claude-code", ".claude-plugin", "plugin.json")


def plugin_id() -> str:
    """``<plugin>@<marketplace>``, from the manifests."""
    market = _read_json(".claude-plugin", "marketplace.json")
    return f"{plugin_manifest()['name']}@{market['name']}"


def mcp_tool_name(tool: str) -> str:
    """The name Claude Code gives ``tool`` of the plugin's (first) MCP server."""
    mcp = _read_json("integrations", "claude-code", ".mcp.json")
    server = next(iter(mcp["mcpServers"]))
    raw = f"plugin_{plugin_manifest()['name']}_{server}"
    return f"mcp__{re.sub(r'[^A-Za-z0-9_-]', '_', raw)}__{tool}"


@dataclass
class Run:
    """One finished ``claude -p`` run."""

    returncode: int
    stdout: str
    stderr: str
    debug_log: Path
    fake: FakeAnthropic
    base: Path

    def log(self) -> str:
        """The debug log's text ("" if Claude Code wrote none)."""
        try:
            return self.debug_log.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def hook_errors(self) -> list[str]:
        """The debug-log lines that report a failing hook."""
        return [line for line in self.log().splitlines() if HOOK_ERROR.search(line)]

    def report(self, tail: int = 60) -> str:
        """The exit code, output, debug-log tail and recorded requests, for failures."""
        base = str(self.base)
        relevant = [
            short
            for line in self.log().splitlines()
            if re.search(
                r"hook|mcp|plugin|ERROR|WARN", short := line.replace(base, "<tmp>"), re.IGNORECASE
            )
            and "CA certs" not in line
        ]
        return "\n".join(
            [
                f"claude exit code {self.returncode}",
                f"stdout: {self.stdout[-1500:]!r}",
                f"stderr: {self.stderr[-1500:]!r}",
                f"--- debug log ({self.debug_log}), hook/mcp/plugin lines, last {tail}:",
                *relevant[-tail:],
                "--- fake API:",
                self.fake.describe(600).replace(base, "<tmp>"),
            ]
        )


@dataclass
class ClaudeCode:
    """A throwaway Claude Code installation with the GOAT plugin, and its project."""

    claude: str
    home: Path
    goat_home: Path
    project: Path
    marketplace: Path
    logs: Path
    env: dict[str, str] = field(default_factory=dict)
    runs: int = 0

    def cli(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run ``claude ARGS`` (plugin management); fails the test on a non-zero exit."""
        proc = subprocess.run(
            [self.claude, *args],
            cwd=self.project,
            env=self.env,
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT,
        )
        assert proc.returncode == 0, (
            f"claude {' '.join(args)} exited {proc.returncode}\n"
            f"stdout: {proc.stdout}\nstderr: {proc.stderr}"
        )
        return proc

    def goat(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """Run ``goat ARGS`` with this GOAT home; fails the test on a non-zero exit."""
        proc = subprocess.run(
            [GOAT, *args],
            cwd=cwd or self.project,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT,
        )
        assert proc.returncode == 0, (
            f"goat {' '.join(args)} exited {proc.returncode}\n"
            f"stdout: {proc.stdout}\nstderr: {proc.stderr}"
        )
        return proc

    def derived_pen(self) -> str:
        """The Pen id ``goat scope`` derives for the project folder."""
        data = json.loads(self.goat("scope", "--json").stdout)
        assert data.get("pen_id"), f"goat scope derived no Pen for {self.project}: {data}"
        return str(data["pen_id"])

    def remember(self, pen: str, text: str) -> None:
        """Bind the markdown provider to Pen ``pen`` and remember ``text`` in it."""
        self.goat("bind", "--pen", pen, "markdown")
        self.goat("remember", "--pen", pen, text)

    def configure(self, **values: str) -> None:
        """Set the plugin's options with ``claude plugin configure --values-stdin``."""
        self.cli("plugin", "configure", plugin_id(), "--values-stdin", stdin=json.dumps(values))

    def prompt(
        self,
        fake: FakeAnthropic,
        text: str,
        *,
        allowed_tools: Sequence[str] = (),
        timeout: float = RUN_TIMEOUT,
        more: Sequence[str] = (),
    ) -> Run:
        """Run ``claude -p TEXT`` against ``fake`` with a debug log. With ``more``, the
        prompts go in as one session's turns (``--input-format stream-json``)."""
        self.runs += 1
        log = self.logs / f"debug-{self.runs}.log"
        args = [self.claude, "-p", "--debug-file", str(log)]
        stdin: str | None = None
        if more:
            args += ["--input-format", "stream-json", "--output-format", "stream-json"]
            args += ["--verbose"]
            turns = [text, *more]
            stdin = "".join(
                json.dumps({"type": "user", "message": {"role": "user", "content": t}}) + "\n"
                for t in turns
            )
        else:
            args.insert(2, text)
        if allowed_tools:
            args += ["--allowedTools", ",".join(allowed_tools)]
        env = {**self.env, "ANTHROPIC_BASE_URL": fake.url}
        try:
            proc = subprocess.run(
                args,
                cwd=self.project,
                env=env,
                input=stdin,
                stdin=None if stdin is not None else subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired as exc:
            out, err = (str(x or "") for x in (exc.stdout, exc.stderr))
            run = Run(-1, out, err, log, fake, self.logs.parent)
            pytest.fail(f"claude -p did not finish in {timeout}s\n{run.report()}")
        return Run(proc.returncode, proc.stdout, proc.stderr, log, fake, self.logs.parent)


def claude_env(home: Path, goat_home: Path) -> dict[str, str]:
    """An offline environment for Claude Code and goat: throwaway HOME, no telemetry."""
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT", "TERM")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        GOAT_HOME=str(goat_home),
        ANTHROPIC_API_KEY="sk-ant-fake-key",
        ANTHROPIC_BASE_URL="http://127.0.0.1:9",  # replaced per run by the fake's URL
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_TELEMETRY="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_ERROR_REPORTING="1",
        # MCP tools are deferred behind ToolSearch by default; list them so the fake
        # model can call the plugin's tools directly
        ENABLE_TOOL_SEARCH="false",
        GOAT_STRICT_PLUGINS=os.environ.get("GOAT_STRICT_PLUGINS", "1"),
    )
    return env


def copy_marketplace(dest: Path) -> Path:
    """Copy the marketplace (``.claude-plugin/`` and ``integrations/``) to ``dest``."""
    dest.mkdir(parents=True)
    source = market_source()
    shutil.copytree(source / ".claude-plugin", dest / ".claude-plugin")
    shutil.copytree(
        source / "integrations",
        dest / "integrations",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "node_modules"),
    )
    return dest


def make_installation(claude: str, base: Path) -> ClaudeCode:
    """HOME, GOAT home, git project and the plugin installed by ``claude plugin``."""
    home, goat_home, project = base / "home", base / "goat-home", base / "project"
    for path in (home, goat_home, project):
        path.mkdir(parents=True)
    logs = base / "logs"
    logs.mkdir()
    env = claude_env(home, goat_home)
    subprocess.run(
        ["git", "init", "-q", str(project)],
        env=env,
        check=True,
        capture_output=True,
        timeout=CLI_TIMEOUT,
    )
    cc = ClaudeCode(claude, home, goat_home, project, copy_marketplace(base / "market"), logs, env)
    cc.cli("plugin", "marketplace", "add", str(cc.marketplace))
    cc.cli("plugin", "install", plugin_id())
    return cc


@pytest.fixture
def claude_code(claude_bin: str, tmp_path: Path) -> ClaudeCode:
    """Claude Code with the GOAT plugin installed; the sentinel fact in the project's Pen
    and another in ``pen:pinned``."""
    cc = make_installation(claude_bin, tmp_path)
    cc.remember(cc.derived_pen(), f"The project sentinel is {DERIVED_SENTINEL}.")
    cc.remember(PINNED_PEN, f"The pinned sentinel is {PINNED_SENTINEL}.")
    return cc


@pytest.fixture
def fake_api() -> Iterator[FakeAnthropic]:
    """The fake Messages API, started; its script is set by each test."""
    with FakeAnthropic() as fake:
        yield fake
