"""The real Codex CLI starts `goat serve` from its config.toml, and a GOAT tool call comes back.

Codex talks to a loopback fake of the OpenAI Responses API (``fake_openai.py``) through a custom
model provider, in a throwaway ``CODEX_HOME``. The fake's first answer calls GOAT's ``recall``;
the test then reads what Codex sent back as the ``function_call_output``: the sentinel fact
appears there only if Codex started ``goat serve`` with the intended GOAT home.

Set ``GOAT_CODEX`` to the codex executable (e.g. ``node_modules/.bin/codex`` of
``npm install @openai/codex@0.171.0``). Without it the tests skip, or fail when ``CI`` is set.

What Codex 0.171.0 does, checked here:

* an MCP server gets only a short allow-list of Codex's environment (HOME, LOGNAME, PATH, SHELL,
  USER, LANG, LC_ALL, TERM, TMPDIR, TZ and a few CA-bundle variables), plus the names listed in
  ``env_vars`` and the values in ``env``; so ``GOAT_HOME`` set only around Codex never reaches
  ``goat serve``;
* MCP tools reach the model as a namespace tool ``mcp__goat_memory`` (the server name with ``-``
  turned into ``_``) holding functions ``recall``, ``remember``, ...;
* the function call output is a string ``"Wall time: ... seconds\\nOutput:\\n<JSON>"``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_openai import (
    FINAL_TEXT,
    FakeResponsesAPI,
    Script,
    function_call_outputs,
    output_text,
    tool_names,
)

PEN = "sentinel"
SNIPPET = Path(__file__).resolve().parents[2] / "integrations" / "hosts" / "codex.toml"
SERVER = "goat-memory"
NAMESPACE = "mcp__goat_memory"
CODEX_TIMEOUT = 90
GOAT_TIMEOUT = 60


# -- fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def codex_bin() -> str:
    path = os.environ.get("GOAT_CODEX")
    if not path:
        reason = (
            "GOAT_CODEX is not set (path to a Codex CLI executable, e.g. @openai/codex@0.171.0)"
        )
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {reason}")
        pytest.skip(reason)
    resolved = shutil.which(path)
    if not resolved:
        pytest.fail(f"GOAT_CODEX={path!r} is not an executable")
    return resolved


@pytest.fixture(scope="module")
def goat_exe() -> str:
    """The goat executable of the interpreter running the tests (the dev or tox venv)."""
    beside = Path(sys.executable).parent / ("goat.exe" if os.name == "nt" else "goat")
    found = str(beside) if beside.is_file() else shutil.which("goat")
    if not found:
        pytest.fail(f"no goat executable beside {sys.executable} or on PATH")
    return str(Path(found).resolve())


def _clean_env(home: Path) -> dict[str, str]:
    """The environment for goat and codex: no GOAT_* or XDG_* from outside, a temp HOME."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GOAT_", "XDG_", "CODEX_", "OPENAI_"))
    }
    env["HOME"] = str(home)
    return env


def _goat(goat_exe: str, env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(
        [goat_exe, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=GOAT_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, f"goat {' '.join(args)}: rc={proc.returncode}\n{proc.stderr}"
    return proc.stdout


@dataclass(frozen=True)
class GoatHome:
    path: Path
    fact: str


@pytest.fixture(scope="module")
def goat_home(tmp_path_factory: pytest.TempPathFactory, goat_exe: str) -> GoatHome:
    """A GOAT home whose Pen `sentinel` is bound to markdown and holds one sentinel fact."""
    root = tmp_path_factory.mktemp("goat")
    home = root / "goat-home"
    env = _clean_env(root / "user-home") | {"GOAT_HOME": str(home)}
    fact = f"the sentinel fact is: the owl key is {uuid.uuid4().hex[:12]}"
    _goat(goat_exe, env, "bind", "--pen", PEN, "markdown")
    _goat(goat_exe, env, "remember", "--pen", PEN, fact)
    assert fact in _goat(goat_exe, env, "recall", "--pen", PEN, "sentinel fact")
    return GoatHome(home, fact)


@pytest.fixture
def fake() -> Iterator[FakeResponsesAPI]:
    with FakeResponsesAPI(Script(query="sentinel fact")) as api:
        yield api


# -- running codex --------------------------------------------------------------------------


def _toml(value: object) -> str:
    """A TOML value for a string or a list of strings (JSON escapes are valid TOML)."""
    return json.dumps(value)


@dataclass
class McpEntry:
    """One `[mcp_servers.goat-memory]` table, as a README would show it."""

    command: str
    args: list[str]
    env: dict[str, str] = field(default_factory=dict)
    env_vars: list[str] = field(default_factory=list)
    # Without it Codex 0.171.0 `exec` may start the turn before `goat serve` has listed its
    # tools (seen in about 1 run of 3); with it Codex waits, and fails loudly if the server
    # cannot start.
    required: bool = True

    def toml(self) -> str:
        lines = [
            f"[mcp_servers.{SERVER}]",
            f"command = {_toml(self.command)}",
            f"args = {_toml(self.args)}",
        ]
        if self.required:
            lines.append("required = true")
        if self.env_vars:
            lines.append(f"env_vars = {_toml(self.env_vars)}")
        if self.env:
            pairs = ", ".join(f"{k} = {_toml(v)}" for k, v in self.env.items())
            lines.append(f"env = {{ {pairs} }}")
        return "\n".join(lines) + "\n"


def write_codex_config(codex_home: Path, base_url: str, entry: McpEntry) -> Path:
    """A user-like config.toml: the fake as model provider, no prompts, and GOAT's server."""
    codex_home.mkdir(parents=True, exist_ok=True)
    config = codex_home / "config.toml"
    config.write_text(
        f"""\
model = "gpt-5"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.fake]
name = "fake"
base_url = {_toml(base_url)}
wire_api = "responses"
env_key = "FAKE_OPENAI_API_KEY"

{entry.toml()}""",
        encoding="utf-8",
    )
    return config


def probe_server(entry: McpEntry, env: dict[str, str]) -> str:
    """Start the entry's server ourselves (initialize, tools/list): why Codex saw no tools.

    Codex 0.171.0 `exec` says nothing when an MCP server fails to start; its tools are just
    missing. This shows the server's own answer and stderr instead.
    """
    messages: list[dict[str, Any]] = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "probe", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    try:
        proc = subprocess.Popen(
            [entry.command, *entry.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={k: v for k, v in env.items() if k in SERVER_ENV or k in entry.env_vars}
            | entry.env,
        )
    except OSError as exc:
        return f"(could not start {entry.command}: {exc})"
    assert proc.stdin and proc.stdout
    lines: list[str] = []
    try:
        for message in messages:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            if "id" in message:
                lines.append(proc.stdout.readline()[:1500])
    except OSError as exc:
        lines.append(f"(pipe closed: {exc})")
    finally:
        try:
            _, err = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
    return "stdout:\n" + "".join(lines) + f"\nstderr:\n{err[-3000:]}\nrc={proc.returncode}"


# What Codex 0.171.0 passed to an MCP server from its own environment (observed; the source
# calls it DEFAULT_ENV_VARS), for probe_server to mimic.
SERVER_ENV = frozenset(
    "HOME LOGNAME PATH SHELL USER LANG LC_ALL TERM TMPDIR TZ SSL_CERT_FILE".split()
)


@dataclass
class CodexRun:
    proc: subprocess.CompletedProcess[str]
    config: str
    fake: FakeResponsesAPI
    entry: McpEntry
    env: dict[str, str]
    last_message: Path

    def explain(self) -> str:
        return (
            f"--- codex rc={self.proc.returncode}\n--- config.toml:\n{self.config}\n"
            f"--- stdout:\n{self.proc.stdout[-6000:]}\n--- stderr:\n{self.proc.stderr[-4000:]}\n"
            f"--- requests to the fake:\n{self.fake.describe(1500)}"
        )

    def tool_output(self) -> str:
        """The text of the function call output Codex sent back in its second request."""
        requests = self.fake.model_requests()
        assert len(requests) >= 2, f"expected 2 model requests\n{self.explain()}"
        outputs = function_call_outputs(requests[1].body)
        assert outputs, f"no function_call_output in the 2nd request\n{self.explain()}"
        return "\n".join(output_text(item) for item in outputs)

    def assert_recall_advertised(self) -> None:
        first = self.fake.model_requests()[0].body
        if f"{NAMESPACE}/recall" not in tool_names(first):
            pytest.fail(
                f"Codex did not advertise {NAMESPACE}/recall: did `goat serve` start?\n"
                f"{self.explain()}\n--- the server started directly:\n"
                f"{probe_server(self.entry, self.env)}"
            )


def run_codex(
    codex_bin: str,
    tmp_path: Path,
    fake: FakeResponsesAPI,
    entry: McpEntry,
    extra_env: dict[str, str] | None = None,
    extra_args: list[str] | None = None,
) -> CodexRun:
    codex_home = tmp_path / "codex-home"
    config = write_codex_config(codex_home, fake.base_url, entry)
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    last_message = tmp_path / "last-message.txt"
    env = _clean_env(tmp_path / "user-home") | {
        "CODEX_HOME": str(codex_home),
        "FAKE_OPENAI_API_KEY": "sk-fake-loopback",
        "NO_COLOR": "1",
        **(extra_env or {}),
    }
    command = [
        codex_bin,
        "exec",
        *(extra_args or []),
        "--skip-git-repo-check",
        "--ephemeral",
        "--json",
        "-o",
        str(last_message),
        "What is the sentinel fact? Use GOAT memory.",
    ]
    try:
        proc = subprocess.run(
            command,
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=CODEX_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            f"codex exec timed out after {CODEX_TIMEOUT}s\nstdout:\n{exc.stdout!r}\n"
            f"stderr:\n{exc.stderr!r}\nrequests:\n{fake.describe(1500)}"
        )
    run = CodexRun(proc, config.read_text(encoding="utf-8"), fake, entry, env, last_message)
    assert proc.returncode == 0, run.explain()
    assert fake.model_requests(), f"Codex never called the fake\n{run.explain()}"
    return run


def assert_goat_answered(run: CodexRun, goat_home: GoatHome) -> None:
    run.assert_recall_advertised()
    called = run.fake.called_tool or {}
    assert called.get("namespace") == NAMESPACE and called.get("name") == "recall", called
    output = run.tool_output()
    assert goat_home.fact in output, f"the sentinel fact is not in the tool output\n{run.explain()}"
    assert '"scope":"pen:sentinel"' in output.replace(" ", ""), run.explain()
    last = run.last_message.read_text(encoding="utf-8") if run.last_message.exists() else ""
    assert FINAL_TEXT in last, f"final message {last!r}\n{run.explain()}"


# -- the cases ------------------------------------------------------------------------------


def test_env_table_sets_goat_home(
    codex_bin: str, goat_exe: str, goat_home: GoatHome, fake: FakeResponsesAPI, tmp_path: Path
) -> None:
    """(a) `env = { GOAT_HOME = ... }` in the server's entry reaches `goat serve`."""
    entry = McpEntry(goat_exe, ["serve", "--pen", PEN], env={"GOAT_HOME": str(goat_home.path)})
    assert_goat_answered(run_codex(codex_bin, tmp_path, fake, entry), goat_home)


def test_env_table_wins_over_codex_environment(
    codex_bin: str, goat_exe: str, goat_home: GoatHome, fake: FakeResponsesAPI, tmp_path: Path
) -> None:
    """(a') The entry's `env` overrides a different GOAT_HOME around Codex, even via env_vars."""
    decoy = tmp_path / "decoy-home"
    entry = McpEntry(
        goat_exe,
        ["serve", "--pen", PEN],
        env={"GOAT_HOME": str(goat_home.path)},
        env_vars=["GOAT_HOME"],
    )
    run = run_codex(codex_bin, tmp_path, fake, entry, {"GOAT_HOME": str(decoy)})
    assert_goat_answered(run, goat_home)
    assert not decoy.exists(), run.explain()


def test_serve_home_option(
    codex_bin: str, goat_exe: str, goat_home: GoatHome, fake: FakeResponsesAPI, tmp_path: Path
) -> None:
    """(b) `args = ["serve", "--home", DIR, "--pen", ID]`, no environment needed."""
    if "--home" not in _goat(goat_exe, _clean_env(tmp_path), "serve", "--help"):
        pytest.xfail("goat --home not yet available")
    entry = McpEntry(goat_exe, ["serve", "--home", str(goat_home.path), "--pen", PEN])
    assert_goat_answered(run_codex(codex_bin, tmp_path, fake, entry), goat_home)


def test_env_vars_passes_goat_home_through(
    codex_bin: str, goat_exe: str, goat_home: GoatHome, fake: FakeResponsesAPI, tmp_path: Path
) -> None:
    """(d) `env_vars = ["GOAT_HOME"]` forwards the GOAT_HOME Codex itself was started with."""
    entry = McpEntry(goat_exe, ["serve", "--pen", PEN], env_vars=["GOAT_HOME"])
    run = run_codex(codex_bin, tmp_path, fake, entry, {"GOAT_HOME": str(goat_home.path)})
    assert_goat_answered(run, goat_home)


def test_codex_environment_alone_does_not_reach_server(
    codex_bin: str, goat_exe: str, goat_home: GoatHome, fake: FakeResponsesAPI, tmp_path: Path
) -> None:
    """(c) GOAT_HOME set only around Codex is NOT passed to `goat serve`.

    The server then uses the platform default home (under the temp HOME, which Codex does
    pass), where Pen `sentinel` is unbound: the tool says so, without the fact.
    """
    entry = McpEntry(goat_exe, ["serve", "--pen", PEN])
    run = run_codex(codex_bin, tmp_path, fake, entry, {"GOAT_HOME": str(goat_home.path)})
    run.assert_recall_advertised()
    output = run.tool_output()
    assert goat_home.fact not in output, (
        f"GOAT_HOME unexpectedly reached the server\n{run.explain()}"
    )
    assert "not bound" in output, f"expected GOAT's unbound-Pen answer\n{run.explain()}"
    assert str(goat_home.path) not in output, run.explain()


_DUMP_ENV = (
    "import json, os, sys; "
    "json.dump(dict(os.environ), open(sys.argv[1], 'w')); "
    "os.execv(sys.argv[2], sys.argv[2:])"
)


def test_server_environment_is_an_allow_list(
    codex_bin: str, goat_exe: str, goat_home: GoatHome, fake: FakeResponsesAPI, tmp_path: Path
) -> None:
    """What Codex passes to an MCP server: an allow-list, plus `env_vars` and `env`.

    The command is a Python one-liner that writes its environment to a file, then execs
    `goat serve`, so the tool call still has to work.
    """
    dump = tmp_path / "server-env.json"
    entry = McpEntry(
        sys.executable,
        ["-c", _DUMP_ENV, str(dump), goat_exe, "serve", "--pen", PEN],
        env={"GOAT_HOME": str(goat_home.path)},
        env_vars=["GOAT_PROBE_PASSED"],
    )
    around_codex = {
        "GOAT_PROBE_PASSED": "yes",
        "GOAT_PROBE_DROPPED": "yes",
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "VIRTUAL_ENV": str(Path(sys.executable).parent.parent),
        "LANG": "C.UTF-8",
        "TZ": "UTC",
    }
    run = run_codex(codex_bin, tmp_path, fake, entry, around_codex)
    assert_goat_answered(run, goat_home)
    seen: dict[str, str] = json.loads(dump.read_text(encoding="utf-8"))
    summary = f"server env names: {sorted(seen)}\n{run.explain()}"
    assert seen.get("GOAT_HOME") == str(goat_home.path), summary
    assert seen.get("GOAT_PROBE_PASSED") == "yes", summary
    for dropped in ("GOAT_PROBE_DROPPED", "XDG_DATA_HOME", "VIRTUAL_ENV", "CODEX_HOME"):
        assert dropped not in seen, summary
    assert seen.get("HOME") == str(tmp_path / "user-home"), summary
    assert seen.get("LANG") == "C.UTF-8" and seen.get("TZ") == "UTC", summary
    assert "PATH" in seen, summary


class SnippetEntry(McpEntry):
    """The README's entry, verbatim: ``integrations/hosts/codex.toml``."""

    def toml(self) -> str:
        return SNIPPET.read_text(encoding="utf-8")


@dataclass(frozen=True)
class FolderPen:
    """A work folder whose derived Pen is bound and holds one sentinel fact; ``env`` is
    what a host is started with (GOAT_HOME, and goat on PATH)."""

    home: Path
    scope: str
    pen: str
    fact: str
    env: dict[str, str]


def folder_pen(goat_exe: str, tmp_path: Path, name: str, key: str) -> FolderPen:
    """Bind the Pen ``goat scope`` derives for ``tmp_path/work`` in a new GOAT home
    ``tmp_path/name`` and remember a sentinel fact naming ``key`` there."""
    home = tmp_path / name
    workdir = tmp_path / "work"
    workdir.mkdir()
    env = _clean_env(tmp_path / "user-home") | {"GOAT_HOME": str(home)}
    scope = json.loads(
        subprocess.run(
            [goat_exe, "scope", "--json"],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=GOAT_TIMEOUT,
        ).stdout
    )
    fact = f"the sentinel fact is: the {key} key is {uuid.uuid4().hex[:12]}"
    _goat(goat_exe, env, "bind", "--pen", scope["pen_id"], "markdown")
    _goat(goat_exe, env, "remember", "--pen", scope["pen_id"], fact)
    path = f"{Path(goat_exe).parent}{os.pathsep}{env.get('PATH', '')}"
    passed = {"GOAT_HOME": str(home), "PATH": path}
    return FolderPen(home, scope["scope"], scope["pen_id"], fact, passed)


def test_the_readme_snippet_as_written(
    codex_bin: str, goat_exe: str, fake: FakeResponsesAPI, tmp_path: Path
) -> None:
    """The snippet users copy: ``goat`` found on PATH, GOAT_HOME through ``env_vars``, and
    the scope derived from the folder Codex runs in (``--from-dir .``)."""
    here = folder_pen(goat_exe, tmp_path, "snippet-home", "snippet")
    run = run_codex(codex_bin, tmp_path, fake, SnippetEntry("goat", []), here.env)
    run.assert_recall_advertised()
    output = run.tool_output()
    assert here.fact in output, (
        f"the snippet's server did not answer from its home\n{run.explain()}"
    )
    assert f'"scope":"{here.scope}"' in output.replace(" ", ""), run.explain()


HOOKS = SNIPPET.with_name("codex-hooks.toml")


class HookedSnippetEntry(SnippetEntry):
    """The README's entry and its optional hooks, both verbatim."""

    def toml(self) -> str:
        return super().toml() + "\n" + HOOKS.read_text(encoding="utf-8")


def test_the_hooks_snippet_gives_the_receipt_and_the_prompts_notes(
    codex_bin: str, goat_exe: str, tmp_path: Path
) -> None:
    """``integrations/hosts/codex-hooks.toml``: SessionStart's receipt and the prompt's
    recalled note reach the model's first request. Hooks run once trusted in Codex's
    review; the test stands in for that review with ``--dangerously-bypass-hook-trust``."""
    here = folder_pen(goat_exe, tmp_path, "hooked-home", "heron")
    with FakeResponsesAPI(Script(query="sentinel fact")) as api:
        run = run_codex(
            codex_bin,
            tmp_path,
            api,
            HookedSnippetEntry("goat", []),
            here.env,
            extra_args=["--dangerously-bypass-hook-trust"],
        )
        first = json.dumps(api.model_requests()[0].body.get("input"))
    assert f"GOAT memory: Pen `{here.pen}` memory" in first, run.explain()
    assert f"GOAT home: {here.home} (from $GOAT_HOME)" in first, run.explain()
    assert here.fact in first, f"the prompt hook gave no memory\n{run.explain()}"
