"""The Claude Code plugin's exact strings (``hooks/hooks.json``, ``.mcp.json``, the version),
and the commands behind them: ``goat serve --from-dir`` and ``goat hook claude-code`` with
the environment Claude Code gives a hook, in four places (a git repository, a worktree of
it, a subfolder, a non-git folder), each one scope for both. Plus the hook's contract: one
JSON object, the budget, exit 0 on every failure, no writes. A real Claude Code runs the
plugin in tests/hosts."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from goat_core.serve._tools import HOOK_TOOL

from .conftest import GOAT, PLUGIN_DIR, git, goat, goat_env, run_hook

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _plugin_json(*parts: str) -> Any:
    return json.loads(PLUGIN_DIR.joinpath(*parts).read_text())


def test_the_plugin_files_pin_the_exact_commands() -> None:
    """The strings Claude Code runs (tests/hosts run them in a real Claude Code): the
    prompt hook is an ``mcp_tool`` call of the running server's hidden hook tool, the
    SessionStart hook an exec-form command reading its pin from the environment, and the
    server gets the project folder and the pin option as arguments."""
    hooks = _plugin_json("hooks", "hooks.json")["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit"}  # no Stop/SessionEnd: no writes
    ((prompt,),) = [e["hooks"] for e in hooks["UserPromptSubmit"]]
    assert prompt == {
        "type": "mcp_tool",
        "server": "plugin:goat-memory:goat-memory",
        "tool": HOOK_TOOL,
        "input": {
            "event": "UserPromptSubmit",
            "prompt": "${prompt}",
            "session_id": "${session_id}",
        },
        "timeout": 10,
    }
    ((start,),) = [e["hooks"] for e in hooks["SessionStart"]]
    assert start == {
        "type": "command",
        "command": "goat",
        "args": ["hook", "claude-code"],
        "timeout": 10,
    }
    servers = _plugin_json(".mcp.json")["mcpServers"]
    assert servers == {
        "goat-memory": {
            "command": "goat",
            "args": [
                "serve",
                "--from-dir",
                "${CLAUDE_PROJECT_DIR}",
                "--pin",
                "${user_config.scope_pin}",
            ],
        }
    }


def test_the_plugin_version_follows_the_project() -> None:
    from goat_core import __version__

    assert _plugin_json(".claude-plugin", "plugin.json")["version"] == __version__
    market = json.loads((PLUGIN_DIR.parents[1] / ".claude-plugin" / "marketplace.json").read_text())
    (entry,) = market["plugins"]
    assert entry["version"] == __version__


def claude_env(home: Path, project: Path, pin: str = "") -> dict[str, str]:
    """What Claude Code gives the plugin's hook: the project folder and the pin option."""
    return goat_env(home, CLAUDE_PROJECT_DIR=str(project), CLAUDE_PLUGIN_OPTION_SCOPE_PIN=pin)


def run_plugin_hook(home: Path, project: Path, prompt: str) -> tuple[dict[str, Any], str, int]:
    payload = {
        "session_id": "abc123",
        "cwd": str(project),
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }
    return run_hook(home, payload, env=claude_env(home, project), cwd=project)


async def server_scope_and_remember(home: Path, project: Path, text: str) -> dict[str, Any]:
    params = StdioServerParameters(
        command=GOAT,
        args=["serve", "--from-dir", str(project), "--pin", ""],
        env=goat_env(home),
        cwd=project,
    )
    async with Client(params) as client:
        scope = json.loads((await client.read_resource("goat://scope")).contents[0].text)
        if not scope["available"]:  # an unbound Pen: bind it, as the error says, then write
            assert f"goat bind --pen {scope['pen_id']}" in scope["reason"]
            goat(home, "bind", "--pen", scope["pen_id"], "markdown")
        r = await client.call_tool("remember", {"text": text})
        assert not r.is_error, r.content
    return scope


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    repo = tmp_path / "myrepo"
    (repo / "src" / "deep").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "README").write_text("x")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "init")
    worktree = tmp_path / "myrepo-feature"
    git(repo, "worktree", "add", "-q", str(worktree), "-b", "feature")
    plain = tmp_path / "notes-folder"
    plain.mkdir()
    return {"repo": repo, "worktree": worktree, "subfolder": repo / "src" / "deep", "plain": plain}


async def test_plugin_commands_agree_in_four_places(home: Path, places: dict[str, Path]) -> None:
    scopes: dict[str, str] = {}
    for name, project in places.items():
        fact = f"the {name} capybara password hint is blue"
        scope = await server_scope_and_remember(home, project, fact)
        scopes[name] = scope["scope"]
        out, err, code = run_plugin_hook(home, project, f"what is the {name} capybara hint?")
        assert code == 0, err
        context = out["hookSpecificOutput"]["additionalContext"]
        assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
        assert fact in context, (name, err)  # the hook reads the scope the server wrote
        assert f"goat hook: {scope['scope']} " in err
    assert scopes["repo"] == scopes["worktree"] == scopes["subfolder"]
    assert scopes["plain"] != scopes["repo"]
    assert all(s.startswith("pen:") for s in scopes.values())
    assert "myrepo" in scopes["repo"] and "notes-folder" in scopes["plain"]


async def test_the_pin_option_moves_server_and_hook_together(home: Path, tmp_path: Path) -> None:
    """The server gets the option as ``--pin``, the hook as
    ``$CLAUDE_PLUGIN_OPTION_SCOPE_PIN``: both serve Global."""
    project = tmp_path / "pinned"
    project.mkdir()
    params = StdioServerParameters(
        command=GOAT,
        args=["serve", "--from-dir", str(project), "--pin", "global"],
        env=goat_env(home),
        cwd=project,
    )
    async with Client(params) as client:
        scope = json.loads((await client.read_resource("goat://scope")).contents[0].text)
        await client.call_tool("remember", {"text": "pinned pelican fact"})
    assert scope["scope"] == "global" and scope["how"] == "pin"
    out, err, _code = run_hook(
        home,
        {"prompt": "pelican fact?", "cwd": str(project)},
        env=claude_env(home, project, pin="global"),
    )
    assert "pinned pelican fact" in out["hookSpecificOutput"]["additionalContext"], err


@pytest.mark.parametrize("how", ["--pin", "GOAT_PIN", "CLAUDE_PLUGIN_OPTION_SCOPE_PIN"])
def test_a_pin_alone_decides_the_hooks_scope(home: Path, how: str) -> None:
    """The exact input: ``{"prompt": "where does the osprey nest?"}`` (no ``cwd``, no
    ``$CLAUDE_PROJECT_DIR``) with the pin ``global`` as the flag or in ``$GOAT_PIN``: the pin
    alone decides the scope, and the hook recalls Global's note."""
    goat(home, "remember", "the osprey nests on the old radio mast")
    payload = {"prompt": "where does the osprey nest?"}
    if how == "--pin":
        out, err, code = run_hook(home, payload, "--pin", "global")
    else:
        out, err, code = run_hook(home, payload, env=goat_env(home, **{how: "global"}))
    assert code == 0, err
    assert "old radio mast" in out["hookSpecificOutput"]["additionalContext"], err
    assert "goat hook: global " in err


@pytest.mark.parametrize("pin", ["globl", "docs"])
def test_serve_refuses_a_pin_that_is_not_one(home: Path, tmp_path: Path, pin: str) -> None:
    """The exact input ``goat serve --from-dir DIR --pin globl``: a bare word is not a Pen
    (the help says ``global|pen:ID``), so the server refuses to start (exit 2)."""
    proc = goat(
        home,
        "serve",
        "--from-dir",
        str(tmp_path),
        "--pin",
        pin,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2, proc.stderr
    assert f"pin {pin!r} is neither 'global' nor 'pen:ID'" in proc.stderr


@pytest.mark.parametrize("scope", [["--pen", "a"], ["--global"]])
def test_serve_refuses_a_pin_beside_a_named_scope(home: Path, scope: list[str]) -> None:
    """``goat serve --pen a --pin global`` started serving pen:a and ignored the pin; a pin
    only overrides what ``--from-dir`` derives, so beside --pen/--global it is refused."""
    proc = goat(home, "serve", *scope, "--pin", "global", check=False, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, proc.stderr
    assert "--pin goes with --from-dir" in proc.stderr


def test_no_cwd_and_no_pin_gives_no_context(home: Path) -> None:
    out, err, code = run_hook(home, {"prompt": "where does the osprey nest?"})
    assert code == 0
    assert out["hookSpecificOutput"]["additionalContext"] == ""
    assert "neither $CLAUDE_PROJECT_DIR nor cwd, and no pin" in err


def _notes(home: Path) -> list[Path]:
    return sorted((home / "data").rglob("*.md")) if (home / "data").exists() else []


@pytest.mark.parametrize(
    "payload,args,why",
    [
        ("not json at all", (), "unusable hook input"),
        ("[1, 2]", (), "unusable hook input"),
        ({"cwd": "/"}, (), "no prompt"),
        ({"prompt": "thanks!", "cwd": "/"}, (), "trivial prompt"),
        ({"prompt": "/help", "cwd": "/"}, (), "trivial prompt"),
        ({"prompt": "what about the walrus?", "cwd": "/nonexistent/dir"}, (), "not a directory"),
        ({"prompt": "what about the walrus?"}, ("--pin", "pen:never-bound"), "no memory"),
        ({"prompt": "what about the walrus?"}, ("--deadline", "0.001"), "deadline"),
        ({"prompt": "what about the walrus?"}, ("--budget", "lots"), ""),
    ],
)
def test_the_hook_fails_open(
    home: Path, tmp_path: Path, payload: Any, args: tuple[str, ...], why: str
) -> None:
    if isinstance(payload, dict) and "cwd" not in payload:
        payload = {**payload, "cwd": str(tmp_path)}
    before = _notes(home)
    out, err, code = run_hook(home, payload, *args)
    assert code == 0
    assert out == {
        "hookSpecificOutput": {
            "hookEventName": "UserPromptSubmit",
            "additionalContext": out["hookSpecificOutput"]["additionalContext"],
        }
    }
    if why:
        assert out["hookSpecificOutput"]["additionalContext"] == ""
        assert why in err, err
    assert _notes(home) == before  # never writes memory


def test_the_hook_exits_0_with_stdout_closed(home: Path, tmp_path: Path) -> None:
    """The exact input ``goat hook claude-code --pin global >&-``: nothing to answer to, and
    still exit 0 (a UserPromptSubmit hook's failure must never block the prompt)."""
    payload = json.dumps({"prompt": "what about the walrus?", "cwd": str(tmp_path)})
    proc = subprocess.run(
        f"{GOAT} hook claude-code --pin global >&-",
        shell=True,
        input=payload,
        env=goat_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "goat hook: global" in proc.stderr and "Traceback" not in proc.stderr


def test_a_home_path_that_is_not_utf8_still_gets_one_json_answer(tmp_path: Path) -> None:
    """The exact home ``home-\xff`` (bytes): the SessionStart receipt quotes it, and the one
    JSON line escapes it (JSON's ``\\udcff``) instead of failing to encode it."""
    home = Path(os.fsdecode(os.path.join(os.fsencode(tmp_path), b"home-\xff")))
    home.mkdir()
    (tmp_path / "notes").mkdir()
    goat(home, "bind", "--global", "markdown", "--set", f"root={tmp_path / 'notes'}")
    out, err, code = run_hook(home, {"hook_event_name": "SessionStart"}, "--pin", "global")
    assert code == 0, err
    context = out["hookSpecificOutput"]["additionalContext"]
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "home-\udcff" in context, context


def test_the_hook_keeps_its_budget_and_writes_no_prompt(home: Path, tmp_path: Path) -> None:
    for n in range(8):
        goat(home, "remember", f"budget heron note {n} " + "long text " * 300)
    prompt = "tell me about the budget heron secret-prompt-marker"
    for budget in (200, 700, 1500, 4000):
        out, err, code = run_hook(
            home,
            {"prompt": prompt, "cwd": str(tmp_path)},
            "--budget",
            str(budget),
            "--pin",
            "global",
        )
        context = out["hookSpecificOutput"]["additionalContext"]
        assert code == 0 and len(context) <= budget, (budget, len(context), err)
        if budget == 200:  # too small for one item: no context, and it says why
            assert context == "" and "too small" in err
            continue
        assert "budget heron" in context and "untrusted quoted data" in context
    for path in home.rglob("*"):
        if path.is_file():
            assert b"secret-prompt-marker" not in path.read_bytes(), path


async def test_the_hook_asks_a_running_server_of_the_same_home(home: Path, tmp_path: Path) -> None:
    goat(home, "remember", "the running server knows the otter fact")
    params = StdioServerParameters(
        command=str(Path(goat_env(home)["PATH"].split(":")[0]) / "goat"),
        args=["serve", "--global"],
        env=goat_env(home),
    )
    async with Client(params) as client:
        await client.list_tools()
        from goat_core.contract import Scope
        from goat_core.serve._local import socket_path

        path = socket_path(home / "data", Scope.global_())
        assert path is not None
        for _ in range(50):  # the local socket starts with the server
            if path.exists():
                break
            await anyio.sleep(0.1)
        out, err, code = await anyio.to_thread.run_sync(
            lambda: run_hook(
                home, {"prompt": "otter fact?", "cwd": str(tmp_path)}, "--pin", "global"
            )
        )
        lean = await anyio.to_thread.run_sync(lambda: _hook_modules(home, tmp_path))
    assert code == 0
    assert "(server)" in err, err
    assert "otter fact" in out["hookSpecificOutput"]["additionalContext"]
    # answered by the server, a pinned hook loads no plugin, store, model or host (a process
    # per prompt: goat_core/serve/_hook.py); pydantic comes with the Scope model, structlog
    # with the CLI's logging
    assert "(server)" in lean["stderr"], lean
    heavy = {
        "goat_markdown",
        "goat_core.filestore",
        "goat_core.host._memoryhost",
        "goat_core.host._config",
        "goat_core.plugins",
        "pluggy",
    }
    assert not heavy & set(lean["modules"]), sorted(heavy & set(lean["modules"]))


def _hook_modules(home: Path, cwd: Path) -> dict[str, Any]:
    """``goat hook claude-code --pin global`` run in this interpreter's way, with the
    modules it imported listed just before its ``os._exit``."""
    env = goat_env(home)
    python = Path(env["PATH"].split(":")[0]) / "python"
    code = (
        "import os, sys\n"
        "end = os._exit\n"
        "def _exit(code):\n"
        "    sys.stderr.write('MODULES ' + ' '.join(sorted(sys.modules)) + '\\n')\n"
        "    sys.stderr.flush()\n"
        "    end(code)\n"
        "os._exit = _exit\n"
        "from goat_core.cli import main\n"
        "main(['hook', 'claude-code', '--pin', 'global'])\n"
    )
    proc = subprocess.run(
        [str(python), "-c", code],
        input=json.dumps({"prompt": "otter fact?", "cwd": str(cwd)}),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("MODULES ")]
    return {"modules": line.split()[1:], "stderr": proc.stderr.replace(line, "")}
