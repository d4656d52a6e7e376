"""``goat serve`` as a subprocess over stdio, as a host runs it: a plugin that prints to
stdout cannot break the protocol; two servers on one store lose no write; the Inspector CLI
(an independent client) lists the tools and round-trips remember and recall."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from .conftest import GOAT, goat, goat_env

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _params(home: Path, *args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    return StdioServerParameters(command=GOAT, args=["serve", *args], env=env or goat_env(home))


@pytest.fixture
def noisy_plugin(tmp_path: Path) -> Path:
    """A plugin (a real entry point) that prints to stdout at import and on every recall."""
    site = tmp_path / "noisy-site"
    site.mkdir()
    (site / "goat_noisy.py").write_text(
        textwrap.dedent(
            """
            import sys
            print("noisy plugin says hello on stdout")
            sys.stdout.write("not json\\n")
            from goat_core import hookimpl

            @hookimpl
            def goat_filter_recall(scope, query, result):
                print("noisy recall", query)
                return None
            """
        )
    )
    info = site / "goat_noisy-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: goat-noisy\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[goat_core.plugins]\nnoisy = goat_noisy\n")
    return site


async def test_a_plugin_printing_to_stdout_cannot_break_the_protocol(
    home: Path, noisy_plugin: Path
) -> None:
    env = goat_env(home, PYTHONPATH=str(noisy_plugin))
    for mode in ("legacy", "auto"):
        async with Client(_params(home, "--global", env=env), mode=mode) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert "recall" in names
            r = await client.call_tool("remember", {"text": f"stdout stays clean {mode}"})
            assert not r.is_error
            r = await client.call_tool("recall", {"query": "stdout clean"})
            assert not r.is_error and r.structured_content["items"]
    plugins = goat(home, "plugins", "--json", env=env)
    assert "noisy" in plugins.stdout  # the plugin really was loaded


async def test_two_servers_on_one_store_lose_no_write(home: Path) -> None:
    goat(home, "bind", "--pen", "shared", "markdown")
    per_server = 15

    async def writer(tag: str) -> None:
        async with Client(_params(home, "--pen", "shared")) as client:
            for n in range(per_server):
                r = await client.call_tool(
                    "remember", {"text": f"note {tag} {n} kiwi", "title": f"{tag}-{n}"}
                )
                assert not r.is_error, r.content

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer, "a")
        tg.start_soon(writer, "b")
    async with Client(_params(home, "--pen", "shared")) as client:
        pages = await client.call_tool("pages", {"limit": 200})
        ids = {p["id"] for p in pages.structured_content["items"]}
        r = await client.call_tool("recall", {"query": "kiwi", "limit": 20})
    assert len(ids) == 2 * per_server
    assert len(r.structured_content["items"]) == 20  # the index sees them all (limit 20)
    reindex = goat(home, "reindex", "--pen", "shared", "--json")
    counts = json.loads(reindex.stdout)
    assert counts["added"] == counts["removed"] == counts["updated"] == 0, counts
    assert counts["notes"] == 2 * per_server, counts


def _inspector() -> str | None:
    found = os.environ.get("GOAT_MCP_INSPECTOR") or shutil.which("mcp-inspector")
    cached = (
        Path.home() / ".cache" / "goat-mcp-inspector" / "node_modules" / ".bin" / "mcp-inspector"
    )
    return found or (str(cached) if cached.exists() else None)


def _inspect(home: Path, inspector: str, *args: str) -> tuple[int, Any]:
    proc = subprocess.run(
        [inspector, "--cli", GOAT, "serve", "--global", *args],
        env=goat_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        data = proc.stdout + proc.stderr
    return proc.returncode, data


def test_the_inspector_cli_lists_tools_and_round_trips(home: Path) -> None:
    inspector = _inspector()
    if inspector is None:
        if os.environ.get("CI"):
            pytest.fail("the MCP Inspector CLI is not installed (.ci/run installs it)")
        pytest.skip("MCP Inspector CLI not installed: set GOAT_MCP_INSPECTOR (see .ci/run)")
    code, tools = _inspect(home, inspector, "--method", "tools/list")
    assert code == 0, tools
    names = {t["name"] for t in tools["tools"]}
    assert {"recall", "remember", "pages", "show"} <= names
    assert all("annotations" in t for t in tools["tools"])
    code, stored = _inspect(
        home,
        inspector,
        "--method",
        "tools/call",
        "--tool-name",
        "remember",
        "--tool-arg",
        "text=Inspector says the ferry leaves at nine",
    )
    assert code == 0 and stored["isError"] is False, stored
    assert stored["structuredContent"]["scope"] == "global"
    code, recalled = _inspect(
        home,
        inspector,
        "--method",
        "tools/call",
        "--tool-name",
        "recall",
        "--tool-arg",
        "query=ferry",
    )
    assert code == 0 and recalled["isError"] is False
    assert "ferry leaves at nine" in recalled["structuredContent"]["items"][0]["text"]
    code, scope = _inspect(home, inspector, "--method", "resources/read", "--uri", "goat://scope")
    assert code == 0
    assert json.loads(scope["contents"][0]["text"])["scope"] == "global"
    code, missing = _inspect(home, inspector, "--method", "tools/call", "--tool-name", "nope")
    assert code != 0, missing


async def test_a_page_whose_name_is_not_utf8_is_named_not_sent(home: Path, tmp_path: Path) -> None:
    """The exact name ``bad\\xffname.md`` (bytes): MCP's JSON cannot carry a lone surrogate,
    so the pages tool sends the other pages, says ``complete: false`` and names the file
    with its byte escaped; the resource list leaves it out and still lists the rest."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "good.md").write_text("plain\n", encoding="utf-8")
    with open(os.path.join(os.fsencode(vault), b"bad\xffname.md"), "wb") as f:
        f.write(b"bytes here\n")
    goat(home, "bind", "--global", "markdown", "--set", f"root={vault}")
    async with Client(_params(home, "--global")) as client:
        r = await client.call_tool("pages", {})
        assert not r.is_error, r.content
        data = r.structured_content
        assert [i["path"] for i in data["items"]] == ["good.md"]
        assert data["complete"] is False
        assert data["degraded"] == [
            "bad\\xffname.md: not listed, its name is not UTF-8, which MCP cannot carry"
        ]
        resources = (await client.list_resources()).resources
        assert [(str(x.uri), x.name) for x in resources] == [
            ("goat://scope", "scope"),
            ("goat://page/good.md", "good"),
        ]
        # a page of one, whose boundary is that name, continues past it
        first = (await client.call_tool("pages", {"limit": 1})).structured_content
        assert first["items"] == [] and first["next_cursor"]
        rest = await client.call_tool("pages", {"limit": 1, "cursor": first["next_cursor"]})
        assert [i["path"] for i in rest.structured_content["items"]] == ["good.md"]
    # a skipped entry (a symlink out of the store) whose name is not UTF-8: named, escaped
    (tmp_path / "o.md").write_text("outside\n", encoding="utf-8")
    os.symlink(os.fsencode(tmp_path / "o.md"), os.path.join(os.fsencode(vault), b"link\xfd.md"))
    skipped = "link\\xfd.md: skipped, symlink points outside the store"
    async with Client(_params(home, "--global")) as client:
        for tool, args in (("pages", {}), ("recall", {"query": "plain"})):
            r = await client.call_tool(tool, args)
            assert not r.is_error, r.content
            assert skipped in r.structured_content["degraded"], r.structured_content
    # an error naming such a page (two pages share a title) is a typed tool error, escaped
    for name in (b"aa\xfe.md", b"ab.md"):
        with open(os.path.join(os.fsencode(vault), name), "wb") as f:
            f.write(b"---\ntitle: Twin\n---\nsame title\n")
    async with Client(_params(home, "--global")) as client:
        r = await client.call_tool("show", {"page": "Twin"})
        assert r.is_error
        error = r.structured_content["error"]
        assert error["type"] == "Ambiguous" and "aa\\xfe.md" in error["message"], error
        assert not (await client.call_tool("recall", {"query": "plain"})).is_error  # still up
