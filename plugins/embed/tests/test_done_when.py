"""The issue's done-when, through the real CLI in a child process whose sockets are blocked:
bind the vault with ``--set embedder=minilm-en``, then a question in the user's words puts
``Sync your notes across devices`` first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import REPO
from goat_core.testing.fixtures import copy_test_vault

CHILD = textwrap.dedent(
    """
    import json, socket, sys
    attempts = []
    def refuse(*args, **kwargs):
        attempts.append(repr(args[1:] or args))
        raise OSError("network blocked")
    real = socket.socket.connect
    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            refuse(self, address)
        return real(self, address)
    socket.socket.connect = connect
    socket.getaddrinfo = refuse
    from goat_core.cli import cli
    try:
        cli.main(sys.argv[2:], prog_name="goat")
        code = 0
    except SystemExit as exc:
        code = exc.code
    open(sys.argv[1], "w").write(json.dumps({"code": code, "attempts": attempts}))
    """
)


def _goat(env: dict[str, str], out: Path, *args: str) -> tuple[dict[str, object], str]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(out), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert out.exists(), done.stderr
    return json.loads(out.read_text()), done.stdout


def test_question_in_user_words_finds_sync_first(tmp_path: Path) -> None:
    vault = copy_test_vault(REPO, tmp_path / "vault")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOAT_")}
    env["GOAT_HOME"] = str(tmp_path / "home")
    bound, _ = _goat(
        env,
        tmp_path / "bind.json",
        "bind", "--pen", "docs", "markdown",
        "--set", f"root={vault}", "--set", "embedder=minilm-en",
    )  # fmt: skip
    assert bound == {"code": 0, "attempts": []}
    result, stdout = _goat(
        env,
        tmp_path / "recall.json",
        "recall", "sync my notes between phone and desktop", "--pen", "docs", "--json",
    )  # fmt: skip
    assert result["attempts"] == [] and result["code"] in (0, None)
    items = json.loads(stdout)["items"]
    assert items[0]["path"] == "Getting started/Sync your notes across devices.md"
    assert items[0]["snippet"]
