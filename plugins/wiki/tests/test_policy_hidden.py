"""A page the browse policy hides, under a policy that knows pages only by title or file
name (docs/design.md, Policy path): no write reaches it through another page's ``id``, no
``lint --fix`` rewrites it or links into its path, and no conflict names it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from goat_core.cli import cli
from goat_core.plugins import PluginSettings, Registry, register_plugin
from goat_core.testing import HideByName


@pytest.fixture
def policies(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[object]]:
    """``goat`` with a GOAT home under ``tmp_path``; every ``Registry.load`` also registers
    the policies the test puts in the yielded list."""
    found: list[object] = []
    original = Registry.load.__func__  # type: ignore[attr-defined]

    def load(cls: type[Registry], settings: PluginSettings | None = None) -> Registry:
        reg = original(cls, settings)
        for i, policy in enumerate(found):
            assert register_plugin(reg.pm, policy, f"policy{i}")
        return reg

    monkeypatch.setattr(Registry, "load", classmethod(load))
    monkeypatch.delenv("GOAT_LOAD_PLUGINS", raising=False)
    monkeypatch.delenv("GOAT_DISABLE_PLUGINS", raising=False)
    monkeypatch.setenv("GOAT_HOME", str(tmp_path / "home"))
    yield found


def goat(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=stdin, catch_exceptions=False)


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _wiki(tmp_path: Path, *pages: tuple[str, str]) -> Path:
    """Pen ``wk`` bound to a wiki under the GOAT home, holding ``pages`` (title, body)."""
    bound = goat("bind", "--pen", "wk", "wiki")
    assert bound.exit_code == 0, bound.output
    for title, body in pages:
        written = goat("wiki", "write", title, "--file", "-", "--pen", "wk", stdin=body)
        assert written.exit_code == 0, written.output
    return tmp_path / "home" / "data" / "stores" / "pens" / "wk"


def test_a_decoy_id_is_no_way_onto_a_hidden_page(tmp_path: Path, policies: list[object]) -> None:
    """A visible page with frontmatter ``id: Secret Plans`` does not let ``goat remember``
    titled ``Secret Plans`` append to the hidden page: exit 5, nothing written."""
    root = _wiki(tmp_path, ("Secret Plans", "launch code swordfish\n"))
    (root / "syntheses" / "decoy.md").write_text(
        "---\nid: Secret Plans\ntitle: Decoy\n---\nd\n", "utf-8"
    )
    policies.append(HideByName("Secret Plans"))
    before = _files(root)
    remembered = goat("remember", "INJECTED", "--title", "Secret Plans", "--pen", "wk", "--json")
    assert remembered.exit_code == 5, remembered.output
    receipt = json.loads(remembered.stdout)
    assert receipt["status"] == "rejected"
    assert receipt["reason"] == (
        "a page titled 'Secret Plans' is hidden by policy and cannot be written through; "
        "nothing was written"
    )
    assert _files(root) == before


def test_lint_fix_leaves_a_hidden_page_and_its_path_alone(
    tmp_path: Path, policies: list[object]
) -> None:
    """``goat wiki lint --fix`` with ``Secret Plans`` hidden: the hidden page is not
    rewritten, the visible ``Garden`` keeps its bare link to it (qualifying it would name the
    hidden page's folder), the log gains no entry, and ``degraded`` counts both withheld
    fixes. Without the policy both are fixed."""
    root = _wiki(
        tmp_path,
        ("Secret Plans", "Body. See [[Garden]].\n"),
        ("Garden", "Tomatoes. See [[Secret Plans]].\n"),
    )
    policies.append(HideByName("Secret Plans"))
    before = _files(root)
    fixed = goat("wiki", "lint", "--fix", "--pen", "wk", "--json")
    report = json.loads(fixed.stdout)
    assert report["fixed"] == []
    assert "2 fixes withheld: they touch pages hidden by policy" in report["degraded"]
    assert "secret" not in fixed.stdout.casefold()
    assert _files(root) == before

    policies.clear()
    fixed = goat("wiki", "lint", "--fix", "--pen", "wk", "--json")
    assert [f["path"] for f in json.loads(fixed.stdout)["fixed"]] == [
        "syntheses/Garden.md",
        "syntheses/Secret Plans.md",
    ]
    assert "[[syntheses/Garden|Garden]]" in (root / "syntheses" / "Secret Plans.md").read_text()


@pytest.mark.parametrize("title", ["secret plans", "Secret Plans?"])
def test_a_write_clashing_with_a_hidden_page_does_not_name_it(
    tmp_path: Path, policies: list[object], title: str
) -> None:
    """``goat wiki write`` of a case twin (``secret plans``) or of a title whose file name
    is the hidden page's (``Secret Plans?``) is refused, exit 5, without the hidden page's
    path, title or etag; nothing is written."""
    root = _wiki(tmp_path, ("Secret Plans", "launch code swordfish\n"))
    page = (root / "syntheses" / "Secret Plans.md").read_bytes()
    policies.append(HideByName("Secret Plans"))
    before = _files(root)
    written = goat("wiki", "write", title, "--file", "-", "--pen", "wk", stdin="x\n")
    assert written.exit_code == 5, written.output
    assert written.stderr == (
        f"goat: error: a page titled {title!r} cannot be written here: it clashes with a page "
        "hidden by policy; nothing was written\n"
    )
    from goat_core.filestore import etag

    assert etag(page) not in written.output and "syntheses/" not in written.output
    assert _files(root) == before


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_model_tools_and_remember_do_not_name_a_hidden_page(
    tmp_path: Path, policies: list[object]
) -> None:
    """``wiki_write_page`` (the MCP tool) titled ``Secret Plans?`` is a ``Rejected`` tool
    error without the hidden page's path or etag; the ``remember`` tool titled so (its file
    name is the hidden page's) is a ``rejected`` receipt naming neither."""
    from goat_core.host import Chat, GoatHome, MemoryHost

    root = _wiki(tmp_path, ("Secret Plans", "launch code swordfish\n"))
    before = _files(root)
    registry = Registry.load(PluginSettings(strict=True))
    assert register_plugin(registry.pm, HideByName("Secret Plans"), "policy")
    host = MemoryHost(home=GoatHome.at(tmp_path / "home"), registry=registry)
    try:
        tools = host.context_for(Chat("wk")).tools()
        out = await tools.call("wiki_write_page", {"title": "Secret Plans?", "body": "x"})
        assert out["error"] == {
            "type": "Rejected",
            "message": "a page titled 'Secret Plans?' cannot be written here: it clashes with "
            "a page hidden by policy; nothing was written",
        }
        out = await tools.call("remember", {"text": "x", "title": "Secret Plans?"})
        assert out["status"] == "rejected"
        assert out["reason"] == (
            "'Secret Plans?' clashes with a page hidden by policy; nothing was written"
        )
    finally:
        await host.aclose()
    assert _files(root) == before


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_hidden_source_is_not_named(tmp_path: Path, policies: list[object]) -> None:
    """With the raw source ``src1/codes.txt`` hidden (browsed as ``raw/src1/codes.txt``):
    ingesting it again does not say it is present (``degraded`` counts it), the log loses
    entries naming it, and lint loses the finding whose message names it."""
    from goat_core.host import Chat, GoatHome, MemoryHost

    _wiki(tmp_path)
    src = tmp_path / "src1"
    src.mkdir()
    (src / "codes.txt").write_text("launch code swordfish\n", "utf-8")
    assert goat("wiki", "ingest", str(src), "--pen", "wk").exit_code == 0
    written = goat(
        "wiki", "write", "Garden", "--file", "-", "--source", "src1/codes.txt", "--pen", "wk",
        stdin="Tomatoes.\n",
    )  # fmt: skip
    assert written.exit_code == 0, written.output
    policies.append(HideByName("src1/codes.txt"))

    again = goat("wiki", "ingest", str(src), "--pen", "wk")
    assert again.exit_code == 0, again.output
    assert again.stdout == "0 source(s) added, 0 already present, 0 skipped; 1 in the wiki\n"
    assert again.stderr == "goat: warning: 1 source hidden by policy\n"

    (src / "codes.txt").write_text("changed\n", "utf-8")  # Garden is now stale
    lint = goat("wiki", "lint", "--pen", "wk", "--json")
    report = json.loads(lint.stdout)
    assert [f["code"] for f in report["findings"]] == ["orphan-page"]
    assert report["degraded"] == ["1 finding hidden by policy"]
    assert "codes" not in lint.stdout

    registry = Registry.load(PluginSettings(strict=True))
    host = MemoryHost(home=GoatHome.at(tmp_path / "home"), registry=registry)
    try:
        log = await host.context_for(Chat("wk")).tools().call("wiki_read_page", {"page": "log"})
    finally:
        await host.aclose()
    # the ingest entry and Garden's write entry (its "- sources:" line) go whole
    assert log["text"] == "---\ngoat-wiki: log\n---\n# Log\n\n"
    assert log["degraded"] == ["8 lines hidden by policy"]
