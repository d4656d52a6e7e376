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
from goat_core.errors import ScopeError
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
    assert parse_pin("pen:Docs") == Scope.pen("docs")


@pytest.mark.parametrize("pin", ["globl", "docs", "pen:", "pen:a b"])
def test_a_pin_is_global_or_pen_id(pin: str) -> None:
    with pytest.raises(ScopeError, match=r"pin|Pen id"):
        parse_pin(pin)


def _one_empty_object(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stdout.splitlines()
    assert json.loads(line) == {
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": ""}
    }


PROMPT = json.dumps({"prompt": "where is the deploy key?", "cwd": "/"})


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (("--bogus",), "No such option '--bogus'"),
        (("--pin",), "Option '--pin' requires an argument"),
        (("--pin", "globl"), "pin 'globl' is neither 'global' nor 'pen:ID'"),
        (("--pin", "global", "--deadline", "nan"), "--deadline 'nan' is not finite"),
        (("--pin", "global", "--deadline", "inf"), "--deadline 'inf' is not finite"),
        (("--pin", "global", "--deadline", "1e300"), "--deadline '1e300' is over 3600 s"),
        (("--pin", "global", "--budget", "2.5"), "--budget '2.5' is not a whole number"),
    ],
)
def test_the_hook_fails_open_on_its_arguments(
    tmp_path: Path, args: tuple[str, ...], reason: str
) -> None:
    """Claude Code takes exit 2 of a UserPromptSubmit hook as blocking the prompt."""
    proc = _hook(tmp_path, PROMPT, *args)
    _one_empty_object(proc)
    assert reason in proc.stderr
    assert "Fatal Python error" not in proc.stderr and "Traceback" not in proc.stderr


def test_a_large_budget_is_a_number(tmp_path: Path) -> None:
    proc = _hook(tmp_path, PROMPT, "--pin", "global", "--budget", "1e9")
    _one_empty_object(proc)
    assert "not a number" not in proc.stderr


def test_a_prompt_over_the_input_limit_is_said_so(tmp_path: Path) -> None:
    payload = json.dumps({"prompt": "x" * 1_000_001, "cwd": "/"})
    proc = _hook(tmp_path, payload, "--pin", "global")
    _one_empty_object(proc)
    assert "over the 1000000-byte input limit" in proc.stderr
    assert "Unterminated" not in proc.stderr


def test_the_hook_creates_no_home(tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent" / "zz"
    proc = _hook(tmp_path, PROMPT, "--pin", "global", "--home", str(missing))
    _one_empty_object(proc)
    assert f"no GOAT home at {missing}" in proc.stderr
    assert not (tmp_path / "nonexistent").exists()
    assert not (tmp_path / "home").exists()


def test_check_state_is_cleared(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "hook-abc.json").write_text("{}")
    clear_hook_state(tmp_path, None)
    assert not list(state.iterdir())


def test_an_empty_home_makes_no_home_of_the_current_folder(tmp_path: Path) -> None:
    """``--home ''`` once named the current folder, and the hook and ``remember`` wrote a
    GOAT home (``data/stores/global``) into it; an empty value names no folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOAT_", "CLAUDE_"))}
    env["GOAT_HOME"] = str(tmp_path / "home")
    work = tmp_path / "work"
    work.mkdir()
    code = "import sys; from goat_core.cli import main; main(sys.argv[1:])"

    def goat(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", code, *args],
            input=stdin,
            env=env,
            cwd=work,
            capture_output=True,
            text=True,
            timeout=60,
        )

    hook = goat("hook", "claude-code", "--pin", "global", "--home", "", stdin=PROMPT)
    _one_empty_object(hook)
    assert "an empty value names no folder" in hook.stderr
    remembered = goat("remember", "hello", "--home", "")
    assert remembered.returncode == 2 and remembered.stdout == ""
    assert "an empty value names no folder" in remembered.stderr
    assert list(work.iterdir()) == [] and not (tmp_path / "home").exists()
