"""``goat hook claude-code`` without the serve extra or any provider (the core env): it
never imports mcp, prints exactly one JSON object and exits 0 whatever goes wrong."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from goat_core.contract import Scope
from goat_core.serve import clear_hook_state, parse_pin


def _hook(tmp_path: Path, payload: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOAT_", "CLAUDE_"))}
    env["GOAT_HOME"] = str(tmp_path / "home")
    code = (
        "import sys; from goat_core.cli import main; main(['hook', 'claude-code', *sys.argv[1:]])"
    )
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code, *args],
        input=payload,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "payload", ["{}", "nonsense", json.dumps({"prompt": "where is the deploy key?", "cwd": "/"})]
)
def test_the_hook_prints_one_object_and_exits_0(tmp_path: Path, payload: str) -> None:
    proc = _hook(tmp_path, payload, "--pin", "global")
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stdout.splitlines()
    assert json.loads(line) == {
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": ""}
    }
    assert "goat hook: " in proc.stderr


def test_the_hook_never_imports_mcp(tmp_path: Path) -> None:
    payload = json.dumps({"prompt": "what did we decide about caching?", "cwd": str(tmp_path)})
    proc = _hook(tmp_path, payload)
    assert proc.returncode == 0
    imported = [
        line.rsplit("|", 1)[-1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    ]
    assert "goat_core.serve._hook" in imported  # the hook ran (and -X importtime works)
    assert not [m for m in imported if m == "mcp" or m.startswith("mcp.")], imported


def test_pins() -> None:
    assert parse_pin(None) is None and parse_pin("") is None
    assert parse_pin("${user_config.scope_pin}") is None
    assert parse_pin("global") == Scope.global_()
    assert parse_pin("pen:Docs") == Scope.pen("docs") == parse_pin("docs")


def test_check_state_is_cleared(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "hook-abc.json").write_text("{}")
    clear_hook_state(tmp_path, None)
    assert not list(state.iterdir())
