"""Start-up of ``goat serve`` on stdio: only the parts of the mcp SDK that serving needs are
imported (not its client, not ``MCPServer``), and a later ``import mcp`` still gets the
whole package."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from .conftest import HANDSHAKE, goat_env

_MESSAGES = [
    *HANDSHAKE,
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
]


def test_stdio_serving_imports_neither_the_client_nor_mcpserver(home: Path) -> None:
    stdin = "".join(json.dumps(m) + "\n" for m in _MESSAGES)
    probe = (
        "import atexit, sys, json\n"
        "atexit.register(lambda: sys.__stderr__.write('MODULES ' + json.dumps(sorted("
        "m for m in sys.modules if m == 'mcp' or m.startswith('mcp.'))) + '\\n'))\n"
        "from goat_core.cli import main\n"
        "main(['serve', '--global'])\n"
    )
    # stdin stays open until both answers are in: at EOF the server may end before it answers.
    with subprocess.Popen(
        [sys.executable, "-c", probe],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=goat_env(home),
        text=True,
    ) as server:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(stdin)
        server.stdin.flush()
        answers = []
        while len(answers) < 2:
            line = server.stdout.readline()
            if not line:
                break
            if line.strip():
                answers.append(json.loads(line))
        try:
            rest, stderr = server.communicate(timeout=120)  # closes stdin: EOF ends it
        except subprocess.TimeoutExpired:
            server.kill()
            rest, stderr = server.communicate()
    assert [a["id"] for a in answers] == [1, 2], f"{answers}\n{rest}\n{stderr}"
    assert {t["name"] for t in answers[1]["result"]["tools"]} >= {"recall", "remember"}
    (line,) = [x for x in stderr.splitlines() if x.startswith("MODULES ")]
    modules = json.loads(line.removeprefix("MODULES "))
    assert "mcp.server.lowlevel.server" in modules and "mcp.server.stdio" in modules
    assert not [m for m in modules if m.startswith(("mcp.client", "mcp.server.mcpserver"))]


def test_a_later_import_of_mcp_gets_the_whole_package() -> None:
    code = textwrap.dedent(
        """
        import sys
        from goat_core.serve._sdk import lean_import
        assert lean_import()
        from mcp.server.stdio import stdio_server
        from mcp.server.lowlevel import Server
        assert "mcp.client" not in sys.modules
        from mcp import Client, ClientSession, stdio_server as again
        import mcp, mcp.server
        assert again is stdio_server and mcp.types.Tool and mcp.server.MCPServer
        assert mcp.server.Server is Server and "mcp.client" in sys.modules
        try:
            mcp.no_such_name
        except AttributeError:
            pass
        else:
            raise SystemExit("no AttributeError")
        assert not lean_import()  # already imported: nothing to do
        print("ok")
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "ok", proc.stderr
