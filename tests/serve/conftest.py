"""Fixtures of the ``goat serve`` / ``goat hook`` tests (tox env ``serve``).

The folder needs the ``serve`` extra (mcp) and the markdown provider; without them (the
``core`` env) it is not collected at all.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("mcp") is None or importlib.util.find_spec("goat_markdown") is None:
    collect_ignore_glob = ["test_*.py"]

BIN = Path(sys.executable).parent
GOAT = str(BIN / "goat")
ROOT = Path(__file__).resolve().parents[2]
PLUGIN_DIR = ROOT / "integrations" / "claude-code"


#: The client's opening of a stdio session: ``initialize`` (id 1), then ``initialized``.
HANDSHAKE: list[dict[str, Any]] = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]


def goat_env(home: Path, **extra: str) -> dict[str, str]:
    """A clean environment for a ``goat`` subprocess: this venv first on PATH, one home."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOAT_", "CLAUDE_"))}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["GOAT_HOME"] = str(home)
    env.update(extra)
    return env


def goat(home: Path, *args: str, check: bool = True, **kw: Any) -> subprocess.CompletedProcess[str]:
    env = kw.pop("env", None) or goat_env(home)
    return subprocess.run(
        [GOAT, *args], env=env, capture_output=True, text=True, check=check, timeout=60, **kw
    )


def run_hook(
    home: Path,
    payload: Mapping[str, Any] | str,
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> tuple[dict[str, Any], str, int]:
    """Run ``goat hook claude-code``; returns (the one JSON object, stderr, exit code)."""
    text = payload if isinstance(payload, str) else json.dumps(payload)
    proc = subprocess.run(
        [GOAT, "hook", "claude-code", *args],
        input=text,
        env=dict(env) if env is not None else goat_env(home),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected exactly one JSON line, got {proc.stdout!r}"
    return json.loads(lines[0]), proc.stderr, proc.returncode


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "goat-home"
    path.mkdir()
    yield path


def git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    return subprocess.run(
        ["git", "-C", str(cwd), *args], env=env, capture_output=True, text=True, check=True
    ).stdout
