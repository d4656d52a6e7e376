"""The real Gemini CLI starts `goat serve` from its settings.json, and a GOAT tool call comes back.

Gemini CLI talks to a loopback fake of the Gemini API (``fake_gemini.py``) through
``GOOGLE_GEMINI_BASE_URL``, with ``HOME`` a temp dir holding ``.gemini/settings.json``. The fake's
first answer calls GOAT's recall (declared to the model as ``mcp_goat-memory_recall``); the
sentinel fact comes back in the ``functionResponse`` only if `goat serve` ran with the intended
GOAT home.

Set ``GOAT_GEMINI`` to the gemini executable (e.g. ``node_modules/.bin/gemini`` of
``npm install @google/gemini-cli@0.61.0``). Without it the tests skip, or fail when ``CI`` is set.

Unlike Codex, Gemini CLI 0.61.0 passes its whole environment to an MCP server (less a few
secrets such as GEMINI_API_KEY), so GOAT_HOME set around Gemini does reach `goat serve`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_gemini import FINAL_TEXT, FakeGeminiAPI, declared_functions, function_responses

PEN = "sentinel"
SNIPPET = Path(__file__).resolve().parents[2] / "integrations" / "hosts" / "gemini.json"
SERVER = "goat-memory"
TOOL = f"mcp_{SERVER}_recall"
GEMINI_TIMEOUT = 120
GOAT_TIMEOUT = 60


@pytest.fixture(scope="module")
def gemini_bin() -> str:
    path = os.environ.get("GOAT_GEMINI")
    if not path:
        reason = "GOAT_GEMINI is not set (path to a Gemini CLI executable, @google/gemini-cli)"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {reason}")
        pytest.skip(reason)
    resolved = shutil.which(path)
    if not resolved:
        pytest.fail(f"GOAT_GEMINI={path!r} is not an executable")
    return resolved


@pytest.fixture(scope="module")
def goat_exe() -> str:
    beside = Path(sys.executable).parent / ("goat.exe" if os.name == "nt" else "goat")
    found = str(beside) if beside.is_file() else shutil.which("goat")
    if not found:
        pytest.fail(f"no goat executable beside {sys.executable} or on PATH")
    return str(Path(found).resolve())


def _clean_env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GOAT_", "XDG_", "GEMINI", "GOOGLE_", "CODEX_", "OPENAI_"))
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
    root = tmp_path_factory.mktemp("goat")
    home = root / "goat-home"
    env = _clean_env(root / "user-home") | {"GOAT_HOME": str(home)}
    fact = f"the sentinel fact is: the owl key is {uuid.uuid4().hex[:12]}"
    _goat(goat_exe, env, "bind", "--pen", PEN, "markdown")
    _goat(goat_exe, env, "remember", "--pen", PEN, fact)
    return GoatHome(home, fact)


@pytest.fixture
def fake() -> Iterator[FakeGeminiAPI]:
    with FakeGeminiAPI(query="sentinel fact") as api:
        yield api


@dataclass
class GeminiRun:
    proc: subprocess.CompletedProcess[str]
    settings: str
    fake: FakeGeminiAPI

    def explain(self) -> str:
        return (
            f"--- gemini rc={self.proc.returncode}\n--- settings.json:\n{self.settings}\n"
            f"--- stdout:\n{self.proc.stdout[-5000:]}\n--- stderr:\n{self.proc.stderr[-4000:]}\n"
            f"--- requests to the fake:\n{self.fake.describe(1500)}"
        )

    def tool_output(self) -> str:
        for request in self.fake.model_requests():
            responses = function_responses(request.body)
            if responses:
                return json.dumps(responses)
        pytest.fail(f"no functionResponse reached the fake\n{self.explain()}")


def run_gemini(
    gemini_bin: str,
    tmp_path: Path,
    fake: FakeGeminiAPI,
    server: dict[str, Any],
    extra_env: dict[str, str] | None = None,
) -> GeminiRun:
    user_home = tmp_path / "user-home"
    (user_home / ".gemini").mkdir(parents=True)
    settings = {
        "mcpServers": {SERVER: server},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "security": {"auth": {"selectedType": "gemini-api-key"}},
    }
    settings_text = json.dumps(settings, indent=2)
    (user_home / ".gemini" / "settings.json").write_text(settings_text, encoding="utf-8")
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    env = _clean_env(user_home) | {
        "GEMINI_API_KEY": "fake-loopback-key",
        "GOOGLE_GEMINI_BASE_URL": fake.base_url,
        "NO_COLOR": "1",
        **(extra_env or {}),
    }
    command = [
        gemini_bin,
        "-p",
        "What is the sentinel fact? Use GOAT memory.",
        "--yolo",
        "--skip-trust",
        "-m",
        "gemini-2.5-flash",
        "-o",
        "json",
    ]
    try:
        proc = subprocess.run(
            command,
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=GEMINI_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            f"gemini timed out after {GEMINI_TIMEOUT}s\nstdout:\n{exc.stdout!r}\n"
            f"stderr:\n{exc.stderr!r}\nrequests:\n{fake.describe(1500)}"
        )
    run = GeminiRun(proc, settings_text, fake)
    assert proc.returncode == 0, run.explain()
    return run


def assert_goat_answered(run: GeminiRun, goat_home: GoatHome) -> None:
    requests = run.fake.model_requests()
    assert requests and TOOL in declared_functions(requests[0].body), (
        f"Gemini did not declare {TOOL} (did `goat serve` start?)\n{run.explain()}"
    )
    assert run.fake.called_tool == TOOL, run.explain()
    output = run.tool_output()
    assert goat_home.fact in output, f"the sentinel fact is not in the tool output\n{run.explain()}"
    assert FINAL_TEXT in run.proc.stdout, run.explain()


def test_settings_env_sets_goat_home(
    gemini_bin: str, goat_exe: str, goat_home: GoatHome, fake: FakeGeminiAPI, tmp_path: Path
) -> None:
    """(a) `"env": {"GOAT_HOME": ...}` in the server's entry reaches `goat serve`."""
    server = {
        "command": goat_exe,
        "args": ["serve", "--pen", PEN],
        "env": {"GOAT_HOME": str(goat_home.path)},
    }
    decoy = tmp_path / "decoy"
    run = run_gemini(gemini_bin, tmp_path, fake, server, {"GOAT_HOME": str(decoy)})
    assert_goat_answered(run, goat_home)
    assert not decoy.exists(), run.explain()


def test_serve_home_option(
    gemini_bin: str, goat_exe: str, goat_home: GoatHome, fake: FakeGeminiAPI, tmp_path: Path
) -> None:
    """(b) `"args": ["serve", "--home", DIR, "--pen", ID]`, no environment needed."""
    server = {"command": goat_exe, "args": ["serve", "--home", str(goat_home.path), "--pen", PEN]}
    assert_goat_answered(run_gemini(gemini_bin, tmp_path, fake, server), goat_home)


def test_gemini_environment_reaches_server(
    gemini_bin: str, goat_exe: str, goat_home: GoatHome, fake: FakeGeminiAPI, tmp_path: Path
) -> None:
    """(c) Unlike Codex, GOAT_HOME set only around Gemini CLI does reach `goat serve`."""
    server = {"command": goat_exe, "args": ["serve", "--pen", PEN]}
    run = run_gemini(gemini_bin, tmp_path, fake, server, {"GOAT_HOME": str(goat_home.path)})
    assert_goat_answered(run, goat_home)


def test_the_readme_snippet_as_written(
    gemini_bin: str, goat_exe: str, fake: FakeGeminiAPI, tmp_path: Path
) -> None:
    """``integrations/hosts/gemini.json`` verbatim: ``goat`` on PATH, ``$GOAT_HOME`` in the
    entry's env, the scope derived from the folder Gemini runs in."""
    home = tmp_path / "snippet-home"
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
    fact = f"the sentinel fact is: the snippet key is {uuid.uuid4().hex[:12]}"
    _goat(goat_exe, env, "bind", "--pen", scope["pen_id"], "markdown")
    _goat(goat_exe, env, "remember", "--pen", scope["pen_id"], fact)
    (server,) = json.loads(SNIPPET.read_text(encoding="utf-8"))["mcpServers"].values()
    path = f"{Path(goat_exe).parent}{os.pathsep}{env.get('PATH', '')}"
    run = run_gemini(gemini_bin, tmp_path, fake, server, {"GOAT_HOME": str(home), "PATH": path})
    assert run.fake.called_tool == TOOL, run.explain()
    assert fact in run.tool_output(), run.explain()
