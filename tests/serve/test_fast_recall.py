"""``goat recall`` answered by a running ``goat serve`` (goat_core/cli/_fast.py), through the
real command and a real server process: the same bytes on stdout and stderr and the same exit
code as the command run in full (``GOAT_NO_SERVER=1``), no click or pydantic imported when the
server answered, and every answer the server cannot give run in full."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from goat_core._version import __version__
from goat_core.serve._local import ask_recall, socket_path

from .conftest import GOAT, goat, goat_env


def probe(path: Path, key: str, home: Path) -> None:
    """Wait until the server on ``path`` answers (any answer: an error object too); a socket
    file can exist a moment before its server listens."""
    deadline = time.monotonic() + 30
    while True:
        try:
            ask_recall(path, key, "probe", 1, __version__, 20, str(home))
            return
        except ValueError:
            return
        except ConnectionRefusedError:
            assert time.monotonic() < deadline, "the server never listened"
            time.sleep(0.05)


@contextmanager
def serving(home: Path, *scope: str) -> Iterator[subprocess.Popen[bytes]]:
    """A stdio ``goat serve`` of ``scope`` (e.g. ``--pen``, ``a``) with its socket up."""
    proc = subprocess.Popen(
        [GOAT, "serve", *scope],
        env=goat_env(home),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    key = "global" if scope == ("--global",) else f"pen:{scope[1].lower()}"
    path = socket_path(home / "data", key)
    assert path is not None
    try:
        deadline = time.monotonic() + 30
        while not path.exists():
            assert time.monotonic() < deadline, "the server never opened its socket"
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.05)
        # an answer (any) means the server set the socket's mode and serves: a test may
        # change the mode now without the server setting it back
        probe(path, key, home)
        yield proc
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def recall(home: Path, *args: str, served: bool = True) -> tuple[str, str, int]:
    env = goat_env(home) if served else goat_env(home, GOAT_NO_SERVER="1")
    proc = goat(home, "recall", *args, check=False, env=env)
    return proc.stdout, proc.stderr, proc.returncode


def answered_by_server(home: Path, *args: str, **env: str) -> tuple[bool, str]:
    """Run ``goat recall`` (the installed script, under ``python -X importtime``) and say
    whether the server answered (the full run imports click, even for a usage error; an
    answer through a server never does), with its stdout."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", GOAT, "recall", *args],
        env=goat_env(home, **env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()}
    return not {"click", "pydantic"} & imported, proc.stdout


def make_pen(home: Path) -> Path:
    """``home`` with the Pen ``docs`` bound to a markdown store of 15 notes (written as
    files: the store is a folder of notes)."""
    home.mkdir(parents=True, exist_ok=True)
    store = home.parent / "docs-notes"
    store.mkdir()
    goat(home, "bind", "--pen", "docs", "markdown", "--set", f"root={store}")
    for i in range(14):
        text = f"Deploy step {i}: the key rotates every {i + 1} days\n"
        (store / f"Deploy {i}.md").write_text(text, encoding="utf-8")
    # a body with an escape sequence and a wide character: shown, never run
    (store / "Tea.md").write_text("Sam likes \x1b[31mred\x1b[0m tea, 茶\n", encoding="utf-8")
    return home


@pytest.fixture(scope="module")
def shared_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One home and one running server of ``pen:docs`` for the tests that change nothing."""
    home = make_pen(tmp_path_factory.mktemp("fast") / "goat-home")
    with serving(home, "--pen", "docs"):
        yield home


@pytest.fixture
def pen_home(home: Path) -> Path:
    return make_pen(home)


CASES = [
    ("deploy key", "--pen", "docs"),
    ("deploy key", "--pen", "docs", "--json"),
    ("deploy", "--pen", "docs", "--limit", "3"),  # more matched than shown: a stderr line
    ("deploy", "--pen=docs", "--limit=100"),
    ("tea", "--pen", "Docs"),  # the id as the user typed it, normalised
    ("tea", "--pen", "docs", "--json"),
    ("nothing matches this", "--pen", "docs"),
    ("--pen", "docs", "--", "rotates"),
]


@pytest.mark.parametrize("args", CASES, ids=[" ".join(c) for c in CASES])
def test_the_answer_through_a_server_is_the_full_runs(
    pen_home: Path, args: tuple[str, ...]
) -> None:
    full = recall(pen_home, *args, served=False)
    with serving(pen_home, "--pen", "docs"):
        lean, out = answered_by_server(pen_home, *args)
        served = recall(pen_home, *args)
    assert lean, "the running server did not answer"
    assert served == full
    assert out == full[0]
    assert full[2] == 0


def test_the_json_answer_parses_and_names_the_scope(shared_home: Path) -> None:
    out, err, code = recall(shared_home, "tea", "--pen", "docs", "--json")
    data = json.loads(out)
    assert (code, err, data["scope"]) == (0, "", "pen:docs")
    assert data["items"][0]["snippet"] == "Sam likes \x1b[31mred\x1b[0m tea, 茶"


FALLBACKS = [
    ("",),  # an empty query: the full run's error, exit 2
    ("x", "--limit", "0"),  # out of range: click's usage error
    ("x", "--limit", "-1"),
    ("x", "--limit", "ten"),
    ("x", "--json", "--json"),
    ("x", "--bogus"),
    ("x", "y"),  # two queries
    ("--help",),
]


@pytest.mark.parametrize("args", FALLBACKS, ids=[repr(c) for c in FALLBACKS])
def test_anything_but_the_plain_form_runs_in_full(shared_home: Path, args: tuple[str, ...]) -> None:
    full = recall(shared_home, *args, "--pen", "docs", served=False)
    lean, _ = answered_by_server(shared_home, *args, "--pen", "docs")
    served = recall(shared_home, *args, "--pen", "docs")
    assert served == full
    assert not lean


def test_an_invalid_pen_id_is_the_full_runs_error(shared_home: Path) -> None:
    """The exact input: ``--pen 'docs/../x'``."""
    full = recall(shared_home, "x", "--pen", "docs/../x", served=False)
    served = recall(shared_home, "x", "--pen", "docs/../x")
    assert served == full and full[2] == 2 and "invalid Pen id" in full[1]


def test_another_scopes_server_never_answers(shared_home: Path) -> None:
    goat(shared_home, "remember", "Global deploy note", "--title", "G")
    lean, _ = answered_by_server(shared_home, "deploy")
    served = recall(shared_home, "deploy")
    assert not lean
    assert served == recall(shared_home, "deploy", served=False)
    assert "G.md" in served[0] and "Deploy 0" not in served[0]


def test_a_binding_changed_under_the_server_is_used_at_once(pen_home: Path, tmp_path: Path) -> None:
    other = tmp_path / "other-notes"
    other.mkdir()
    (other / "Only here.md").write_text("The deploy key lives in the vault\n", encoding="utf-8")
    with serving(pen_home, "--pen", "docs"):
        goat(pen_home, "unbind", "--pen", "docs")
        unbound = recall(pen_home, "deploy", "--pen", "docs")
        unbound_full = recall(pen_home, "deploy", "--pen", "docs", served=False)
        goat(pen_home, "bind", "--pen", "docs", "markdown", "--set", f"root={other}")
        lean, _ = answered_by_server(pen_home, "deploy", "--pen", "docs")
        rebound = recall(pen_home, "deploy", "--pen", "docs")
    assert unbound == unbound_full
    assert unbound[2] == 6 and "has no binding" in unbound[1]
    assert lean
    assert "Only here.md" in rebound[0] and "Deploy 0" not in rebound[0]


def test_a_stale_socket_runs_in_full(pen_home: Path) -> None:
    with serving(pen_home, "--pen", "docs") as proc:
        proc.kill()  # no clean exit: the socket file stays behind
        proc.wait()
        path = socket_path(pen_home / "data", "pen:docs")
        assert path is not None and path.exists()
        served = recall(pen_home, "deploy key", "--pen", "docs")
    assert served == recall(pen_home, "deploy key", "--pen", "docs", served=False)


def test_a_socket_open_to_others_is_never_asked(pen_home: Path) -> None:
    path = socket_path(pen_home / "data", "pen:docs")
    assert path is not None
    with serving(pen_home, "--pen", "docs"):
        os.chmod(path, 0o666)
        lean, out = answered_by_server(pen_home, "deploy key", "--pen", "docs")
        os.chmod(path, 0o600)
    assert not lean
    assert out == recall(pen_home, "deploy key", "--pen", "docs", served=False)[0]


def test_goat_no_server_runs_in_full(shared_home: Path) -> None:
    lean, out = answered_by_server(shared_home, "tea", "--pen", "docs", GOAT_NO_SERVER="1")
    assert not lean and "Tea.md" in out


def test_other_plugin_variables_run_in_full(shared_home: Path) -> None:
    """The exact input: ``GOAT_DISABLE_PLUGINS=wiki`` set for the command, not the server."""
    lean, out = answered_by_server(shared_home, "tea", "--pen", "docs", GOAT_DISABLE_PLUGINS="wiki")
    assert not lean
    full = goat(
        shared_home,
        "recall",
        "tea",
        "--pen",
        "docs",
        env=goat_env(shared_home, GOAT_NO_SERVER="1", GOAT_DISABLE_PLUGINS="wiki"),
    )
    assert out == full.stdout and "Tea.md" in out


def test_an_http_server_answers_for_each_scope_it_serves(pen_home: Path) -> None:
    import socket

    goat(pen_home, "remember", "Global deploy note", "--title", "G")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [GOAT, "serve", "--http", f"127.0.0.1:{port}", "--global", "--pen", "docs"],
        env=goat_env(pen_home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        paths = [socket_path(pen_home / "data", key) for key in ("global", "pen:docs")]
        deadline = time.monotonic() + 30
        while not all(p is not None and p.exists() for p in paths):
            assert time.monotonic() < deadline and proc.poll() is None, "no sockets"
            time.sleep(0.05)
        for key, path in zip(("global", "pen:docs"), paths, strict=True):
            assert path is not None
            probe(path, key, pen_home)
        answers = [
            answered_by_server(pen_home, "deploy", *scope) for scope in ((), ("--pen", "docs"))
        ]
        full = [
            recall(pen_home, "deploy", *scope, served=False)[0] for scope in ((), ("--pen", "docs"))
        ]
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert answers == [(True, full[0]), (True, full[1])]
    assert "G.md" in full[0] and "Deploy 0.md" in full[1]


@pytest.mark.parametrize("level", ["debug", "INFO"])
def test_asking_for_the_recalls_logs_runs_in_full(shared_home: Path, level: str) -> None:
    """The exact input: ``GOAT_LOG_LEVEL=debug`` (and ``INFO``) for the command."""
    lean, out = answered_by_server(shared_home, "tea", "--pen", "docs", GOAT_LOG_LEVEL=level)
    assert not lean and "Tea.md" in out
    lean, _ = answered_by_server(shared_home, "tea", "--pen", "docs", GOAT_LOG_LEVEL="warning")
    assert lean


def test_other_import_paths_run_in_full(shared_home: Path, tmp_path: Path) -> None:
    """The exact input: ``PYTHONPATH`` set for the command (a plugin there could filter
    recall), not for the server; and the same for a site folder changed by an install."""
    lean, out = answered_by_server(shared_home, "tea", "--pen", "docs", PYTHONPATH=str(tmp_path))
    assert not lean and "Tea.md" in out


def test_another_config_folder_runs_in_full(tmp_path: Path) -> None:
    """The exact input: no ``GOAT_HOME``; the command's ``XDG_CONFIG_HOME`` is not the
    server's, the data folder is the same."""
    data, mine, other = tmp_path / "data", tmp_path / "config", tmp_path / "other-config"
    env = {k: v for k, v in goat_env(tmp_path).items() if k != "GOAT_HOME"}
    env.update(XDG_DATA_HOME=str(data), XDG_CONFIG_HOME=str(mine))
    subprocess.run([GOAT, "remember", "Otter notes", "--title", "Otter"], env=env, check=True)
    proc = subprocess.Popen(
        [GOAT, "serve", "--global"], env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL
    )
    try:
        sock = socket_path(data / "goat-memory", "global")
        assert sock is not None
        deadline = time.monotonic() + 30
        while not sock.exists():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        runs = {}
        for name, config in (("same", mine), ("other", other)):
            run_env = dict(env, XDG_CONFIG_HOME=str(config))
            got = subprocess.run(
                [sys.executable, "-X", "importtime", GOAT, "recall", "otter"],
                env=run_env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            imported = {line.rsplit("|", 1)[-1].strip() for line in got.stderr.splitlines()}
            runs[name] = (not {"click", "pydantic"} & imported, got.stdout)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=20)
    assert runs["same"][0] and "Otter.md" in runs["same"][1]
    assert not runs["other"][0]  # run in full, with the other folder's (empty) bindings


@pytest.mark.parametrize(
    "shell",
    ["goat recall tea --pen docs >&-", "PYTHONIOENCODING=ascii goat recall tea --pen docs"],
)
def test_a_closed_or_ascii_stdout_is_the_full_runs(shared_home: Path, shell: str) -> None:
    """The exact inputs: stdout closed, and an ASCII stdout (the note holds U+8336)."""

    def run(**extra: str) -> tuple[str, int]:
        env = goat_env(shared_home, **extra)
        got = subprocess.run(
            ["bash", "-c", shell], env=env, capture_output=True, text=True, timeout=60
        )
        return got.stdout, got.returncode

    assert run() == run(GOAT_NO_SERVER="1")


def test_a_query_spelled_json_after_the_separator_is_a_query(shared_home: Path) -> None:
    """The exact input: ``goat recall --pen docs -- --json``: the table is on stdout."""
    for served in (True, False):
        out, _err, code = recall(shared_home, "--pen", "docs", "--", "--json", served=served)
        assert (code, out) == (0, "no matches in pen:docs\n")
