"""One policy path: every wiki tool and every ``goat wiki`` command goes through the scope's
policy hooks (docs/design.md, Policy path), in both directions.

Two policy plugins: ``refuse_writes`` refuses every write (``goat_inspect_remember`` raises
Rejected); ``hide_reads`` empties every recall and hides every page (``goat_filter_recall``
and ``goat_filter_browse``). Each tool and operation the wiki declares is driven under both;
a tool or operation added without a case here fails :func:`test_every_tool_is_covered`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from wiki_helpers import write_tree

import goat_wiki.plugin
from goat_core import hookimpl
from goat_core.cli import cli
from goat_core.contract import PageSummary, Scope
from goat_core.host import Chat, GoatHome, MemoryHost
from goat_core.plugins import PluginSettings, Registry, make_plugin_manager, register_plugin
from goat_core.testing import HideReads, RefuseWrites

pytestmark = pytest.mark.anyio

TOOLS = {
    "wiki_read_page",
    "wiki_write_page",
    "wiki_search",
    "wiki_list_pages",
    "wiki_lint",
    "wiki_ingest_status",
}
OPERATIONS = {"import_pages", "ingest", "lint", "lint_fix", "write_page"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def registry(*policies: object) -> Registry:
    pm = make_plugin_manager(PluginSettings(autoload=False))
    assert register_plugin(pm, goat_wiki.plugin, "wiki")
    for i, policy in enumerate(policies):
        assert register_plugin(pm, policy, f"policy{i}")
    return Registry(pm)


def raw_files(root: Path) -> list[str]:
    raw = root / "raw"
    if not raw.exists():
        return []
    return sorted(p.relative_to(raw).as_posix() for p in raw.rglob("*") if p.is_file())


async def seeded_wiki(tmp_path: Path) -> tuple[GoatHome, Path]:
    """A wiki Pen ``w`` with a source, two pages (one linking the other bare) and an index."""
    home = GoatHome.at(tmp_path / "home")
    root = tmp_path / "wiki"
    root.mkdir()
    host = MemoryHost(home=home, registry=registry())
    try:
        await host.bind(Scope.pen("w"), "wiki", {"root": str(root)})
        ctx = host.context_for(Chat("w"))
        docs = write_tree(tmp_path / "docs", {"paper.md": "Quokkas sleep in the day."})
        await ctx.run_operation("ingest", docs)
        tools = ctx.tools()
        for title, body in (
            ("concepts/Quokka", "A quokka is a marsupial. Quokkas sleep in the day."),
            ("concepts/Island", "The island has many [[Quokka]] sightings."),
        ):
            out = await tools.call(
                "wiki_write_page", {"title": title, "body": body, "sources": ["docs/paper.md"]}
            )
            assert out.get("status") == "stored", out
    finally:
        await host.aclose()
    return home, root


def test_every_tool_is_covered(tmp_path: Path) -> None:
    """The cases below cover exactly the tools and operations the wiki declares."""
    import anyio

    async def names() -> tuple[set[str], set[str]]:
        host = MemoryHost(home=GoatHome.at(tmp_path / "home"), registry=registry())
        try:
            await host.bind(Scope.pen("w"), "wiki", {})
            ctx = host.context_for(Chat("w"))
            assert ctx._provider is not None
            extra = set(ctx.tools().names) - {"recall", "remember", "feedback", "reflect"}
            return extra, {op.name for op in ctx._provider.operations()}
        finally:
            await host.aclose()

    tools, ops = anyio.run(names)
    assert tools == TOOLS
    assert ops == OPERATIONS


# -- model tools ----------------------------------------------------------------------------
async def test_tools_refuse_writes(tmp_path: Path) -> None:
    refuse = RefuseWrites()
    home, root = await seeded_wiki(tmp_path)
    before = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    host = MemoryHost(home=home, registry=registry(refuse))
    try:
        tools = host.context_for(Chat("w")).tools()
        out = await tools.call("wiki_write_page", {"title": "New", "body": "Secret plan."})
        assert out["status"] == "rejected" and "writes are off" in out["reason"]
        assert refuse.seen == ["Secret plan."]  # the exact text it would store
        core = await tools.call("remember", {"text": "also refused"})
        assert core["status"] == "rejected"
        # reads still work under a write-only policy
        found = await tools.call("wiki_search", {"query": "quokka"})
        assert found["items"]
    finally:
        await host.aclose()
    after = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert after == before


async def test_tools_filter_reads(tmp_path: Path) -> None:
    home, _root = await seeded_wiki(tmp_path)
    host = MemoryHost(home=home, registry=registry(HideReads()))
    try:
        tools = host.context_for(Chat("w")).tools()
        assert (await tools.call("recall", {"query": "quokka"}))["items"] == []
        assert (await tools.call("wiki_search", {"query": "quokka"}))["items"] == []
        listing = await tools.call("wiki_list_pages", {})
        assert listing["items"] == [] and listing["complete"] is False
        assert any("hidden by policy" in d for d in listing["degraded"])
        page = await tools.call("wiki_read_page", {"page": "concepts/Quokka"})
        assert page["error"]["type"] == "NotFound"
        source = await tools.call("wiki_read_page", {"page": "raw/docs/paper.md"})
        assert source["error"]["type"] == "NotFound"
        index = await tools.call("wiki_read_page", {"page": "index"})
        assert "Quokka" not in index["text"] and "Island" not in index["text"]
        assert any("hidden by policy" in d for d in index["degraded"])
        lint = await tools.call("wiki_lint", {})
        assert all(f["path"] is None for f in lint["findings"])
        assert lint["complete"] is False and lint["degraded"]
        status = await tools.call("wiki_ingest_status", {})
        assert status["sources"] == [] and status["degraded"]
    finally:
        await host.aclose()


# -- plugin CLI commands ----------------------------------------------------------------------
@pytest.fixture
def policy_cli(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """Every ``Registry.load`` (what ``goat`` and ``goat wiki`` use) also registers the
    policies the test puts in the yielded list."""
    policies: list[object] = []
    original = Registry.load.__func__  # type: ignore[attr-defined]

    def load(cls: type[Registry], settings: PluginSettings | None = None) -> Registry:
        reg = original(cls, settings)
        for i, policy in enumerate(policies):
            assert register_plugin(reg.pm, policy, f"policy{i}")
        return reg

    monkeypatch.setattr(Registry, "load", classmethod(load))
    monkeypatch.delenv("GOAT_LOAD_PLUGINS", raising=False)
    monkeypatch.delenv("GOAT_DISABLE_PLUGINS", raising=False)
    yield policies


def goat(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


async def test_commands_refuse_writes(
    tmp_path: Path, policy_cli: list[object], monkeypatch: pytest.MonkeyPatch
) -> None:
    refuse = RefuseWrites()
    home, root = await seeded_wiki(tmp_path)
    monkeypatch.setenv("GOAT_HOME", str(home.config_dir))
    (root / "concepts" / "Island.md").write_text("Bare [[Quokka]] link.\n")
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    policy_cli.append(refuse)

    more = write_tree(tmp_path / "more", {"new.md": "Another source."})
    ingest = goat("wiki", "ingest", str(more), "--pen", "w", "--json")
    assert ingest.exit_code == 5, ingest.output
    assert json.loads(ingest.stdout)["skipped"][0]["reason"].startswith("rejected by policy")
    assert not [f for f in raw_files(root) if f.endswith("new.md")]

    page = tmp_path / "page.md"
    page.write_text("Refused text.\n")
    written = goat("wiki", "write", "Refused", "--file", str(page), "--pen", "w")
    assert written.exit_code == 5 and "rejected" in written.stderr

    fix = goat("wiki", "lint", "--fix", "--pen", "w", "--json")
    assert fix.exit_code in (0, 1), fix.output
    report = json.loads(fix.stdout)
    assert not [f for f in report["fixed"] if f["code"] == "bare-link"]
    assert (root / "concepts" / "Island.md").read_text() == "Bare [[Quokka]] link.\n"

    remember = goat("remember", "core refused too", "--pen", "w")
    assert remember.exit_code == 5
    after = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    changed = {p.relative_to(root).as_posix() for p in after if before.get(p) != after[p]}
    # only the provider's own record may change (a lint --fix rebuilds a drifted index)
    assert changed <= {"index.md", "log.md"}, changed


async def test_commands_filter_reads(
    tmp_path: Path, policy_cli: list[object], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, _root = await seeded_wiki(tmp_path)
    monkeypatch.setenv("GOAT_HOME", str(home.config_dir))
    policy_cli.append(HideReads())
    lint = goat("wiki", "lint", "--pen", "w", "--json")
    report = json.loads(lint.stdout)
    assert all(f["path"] is None for f in report["findings"])
    assert report.get("degraded"), report
    recall = goat("recall", "quokka", "--pen", "w", "--json")
    assert json.loads(recall.stdout)["items"] == []
    pages = goat("pages", "--pen", "w", "--json")
    assert json.loads(pages.stdout)["items"] == []


async def test_import_pages_passes_the_write_policy(tmp_path: Path) -> None:
    """A refused import writes no page, no source, and no index or log line."""
    refuse = RefuseWrites()
    bundle = write_tree(tmp_path / "bundle", {"Plan.md": "---\ntype: note\n---\nSecret plan.\n"})
    home = GoatHome.at(tmp_path / "home")
    root = tmp_path / "wiki"
    root.mkdir()
    host = MemoryHost(home=home, registry=registry(refuse))
    try:
        await host.bind(Scope.pen("w"), "wiki", {"root": str(root)})
        report = await host.import_bundle(bundle, Scope.pen("w"))
        # the exact note it would store, frontmatter included
        assert refuse.seen == ["---\ntype: note\n---\nSecret plan.\n"]
        assert [i.outcome.value for i in report.items] == ["rejected"]
        assert not (root / "Plan.md").exists()
        assert not (root / "raw" / "imports").exists()
    finally:
        await host.aclose()


class HideHidden:
    """Hides every page whose path or title says ``hidden``."""

    @hookimpl
    def goat_filter_browse(
        self, scope: Scope, items: Sequence[PageSummary]
    ) -> Sequence[PageSummary] | None:
        return [p for p in items if "hidden" not in f"{p.path} {p.title}".casefold()]


async def test_a_model_cannot_overwrite_a_page_it_cannot_see(tmp_path: Path) -> None:
    """The Conflict of a write over an existing page names its etag; for a page the browse
    policy hides, the write is refused without telling the path or etag, and the page keeps
    its text (a model that cannot read a page cannot replace it either)."""
    home, root = await seeded_wiki(tmp_path)
    host = MemoryHost(home=home, registry=registry())
    try:
        tools = host.context_for(Chat("w")).tools()
        out = await tools.call(
            "wiki_write_page", {"title": "concepts/hidden plan", "body": "launch code 1234"}
        )
        assert out.get("status") == "stored", out
    finally:
        await host.aclose()
    page = root / "concepts" / "hidden plan.md"
    before = page.read_bytes()
    host = MemoryHost(home=home, registry=registry(HideHidden()))
    try:
        tools = host.context_for(Chat("w")).tools()
        assert (await tools.call("wiki_read_page", {"page": "concepts/hidden plan"}))["error"][
            "type"
        ] == "NotFound"
        for args in (
            {"title": "concepts/hidden plan", "body": "overwritten"},
            {"title": "concepts/hidden plan", "body": "overwritten", "etag": "0" * 32},
        ):
            out = await tools.call("wiki_write_page", args)
            assert out["error"]["type"] == "Rejected", out
            assert "hidden plan.md" not in out["error"]["message"]
            assert "etag" not in out["error"]["message"]
    finally:
        await host.aclose()
    assert page.read_bytes() == before


async def test_import_shows_the_policy_the_whole_note(tmp_path: Path) -> None:
    """An imported page's frontmatter is stored too, so the policy sees it: a refusal for
    something only the frontmatter says leaves nothing written."""
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "fm.md").write_text("---\nnote: Secret plan in frontmatter\n---\nclean body\n")
    home = GoatHome.at(tmp_path / "home")
    refuse = RefuseWrites()
    for provider in ("wiki",):  # markdown shares the folder-store import (goat_core.filestore)
        pen = f"m-{provider}"
        host = MemoryHost(home=home, registry=Registry.load(PluginSettings(strict=True)))
        register_plugin(host.registry.pm, refuse, "policy")
        try:
            await host.bind(Scope.pen(pen), provider, {})
            report = await host.import_bundle(bundle, Scope.pen(pen))
            assert [i.outcome.value for i in report.items] == ["rejected"], report
        finally:
            await host.aclose()
    assert any("Secret plan in frontmatter" in seen for seen in refuse.seen)
    stores = home.data_dir / "stores"
    assert not [p for p in stores.rglob("fm.md")] and not [p for p in stores.rglob("fm.md.txt")]


async def test_a_page_write_shows_the_policy_its_summary_and_type(tmp_path: Path) -> None:
    """``summary`` and ``type`` are stored too (frontmatter, index line): the policy sees
    each, and a refusal of one writes nothing."""
    home, root = await seeded_wiki(tmp_path)
    before = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    index = (root / "index.md").read_text()
    refuse = RefuseWrites()
    host = MemoryHost(home=home, registry=registry(refuse))
    try:
        tools = host.context_for(Chat("w")).tools()
        out = await tools.call(
            "wiki_write_page",
            {"title": "ok page", "body": "clean body", "summary": "Secret plan summary"},
        )
        assert out["status"] == "rejected"
        assert refuse.seen == ["Secret plan summary"]
    finally:
        await host.aclose()
    after = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert after == before and (root / "index.md").read_text() == index


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


async def test_remember_and_feedback_leave_a_hidden_page_alone(tmp_path: Path) -> None:
    """With ``concepts/Quokka`` hidden: ``remember`` titled ``Quokka`` (which appends to that
    page) is ``rejected`` and ``feedback`` on it is ``NotFound``, as for a missing page; no
    page, index or log line changes. The visible page still takes both."""
    from goat_core.errors import NotFound
    from goat_core.testing import HidePages

    home, root = await seeded_wiki(tmp_path)
    before = _files(root)
    host = MemoryHost(home=home, registry=registry(HidePages("concepts/Quokka")))
    try:
        ctx = host.context_for(Chat("w"))
        receipt = await ctx.remember("quokkas hold the launch code", title="Quokka")
        assert receipt.status.value == "rejected"
        assert receipt.reason == (
            "a page titled 'Quokka' is hidden by policy and cannot be written through; "
            "nothing was written"
        )
        with pytest.raises(NotFound, match=r"^no page 'concepts/Quokka' in Pen `w` memory$"):
            await ctx.feedback("it leaks", on="concepts/Quokka")
        assert _files(root) == before
        assert (await ctx.remember("more sightings", title="Island")).status.value == "stored"
        assert (await ctx.feedback("fine", on="concepts/Island")).status.value == "stored"
    finally:
        await host.aclose()
    after = _files(root)
    assert after["concepts/Quokka.md"] == before["concepts/Quokka.md"]
    assert (
        b"more sightings" in after["concepts/Island.md"] and b"fine" in after["concepts/Island.md"]
    )


QUOKKA_LINKS = "Like [[Quokka#Sleep]] and [[Quokka]]."


async def test_tools_leave_out_what_names_a_hidden_page(tmp_path: Path) -> None:
    """With ``concepts/Quokka`` hidden: the log loses that page's whole entry (its heading
    names it by title), lint loses the bare-link finding of the visible ``Island`` whose
    target is the hidden page, and a write loses the findings about its links to it; each
    counts what it left out in ``degraded``. Without the policy the same calls name it."""
    from goat_core.testing import HidePages

    home, _root = await seeded_wiki(tmp_path)
    host = MemoryHost(home=home, registry=registry())
    try:
        tools = host.context_for(Chat("w")).tools()
        lint = await tools.call("wiki_lint", {})
        assert [(f["code"], f["path"], f["target"]) for f in lint["findings"]] == [
            ("orphan-page", "concepts/Island.md", None),
            ("bare-link", "concepts/Island.md", "concepts/Quokka.md"),
        ]
        log = (await tools.call("wiki_read_page", {"page": "log"}))["text"]
        assert "## " in log and "| Quokka\n" in log
        seen = await tools.call(
            "wiki_write_page",
            {"title": "concepts/Wallaby", "body": QUOKKA_LINKS, "sources": ["docs/paper.md"]},
        )
        assert [f["target"] for f in seen["findings"]] == [
            "concepts/Quokka.md",
            "concepts/Quokka.md#Sleep",
            "concepts/Quokka.md",
        ]
    finally:
        await host.aclose()

    host = MemoryHost(home=home, registry=registry(HidePages("concepts/Quokka")))
    try:
        tools = host.context_for(Chat("w")).tools()
        lint = await tools.call("wiki_lint", {})
        assert [(f["code"], f["path"]) for f in lint["findings"]] == [
            ("orphan-page", "concepts/Island.md"),
            ("orphan-page", "concepts/Wallaby.md"),
        ]
        assert lint["degraded"] == ["4 findings hidden by policy"]
        assert lint["complete"] is False
        log = await tools.call("wiki_read_page", {"page": "log"})
        assert "quokka" not in log["text"].casefold()
        assert "## [" in log["text"] and "| Island\n" in log["text"]
        assert log["degraded"] == ["5 lines hidden by policy"]  # heading, blank, 2 items, blank
        written = await tools.call(
            "wiki_write_page",
            {"title": "concepts/Wombat", "body": QUOKKA_LINKS, "sources": ["docs/paper.md"]},
        )
        assert written["status"] == "stored"
        assert written["findings"] == []
        assert written["degraded"] == ["3 findings hidden by policy"]
        assert "quokka" not in json.dumps(written).casefold()
    finally:
        await host.aclose()


async def test_commands_leave_out_what_names_a_hidden_page(
    tmp_path: Path, policy_cli: list[object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``goat wiki lint`` and ``goat wiki write`` with ``concepts/Quokka`` hidden: no finding
    names it, in JSON or in text, and JSON counts what was left out."""
    from goat_core.testing import HidePages

    home, _root = await seeded_wiki(tmp_path)
    monkeypatch.setenv("GOAT_HOME", str(home.config_dir))
    policy_cli.append(HidePages("concepts/Quokka"))

    lint = goat("wiki", "lint", "--pen", "w", "--json")
    assert lint.exit_code == 1, lint.output  # the orphan warning remains
    report = json.loads(lint.stdout)
    assert [(f["code"], f["path"]) for f in report["findings"]] == [
        ("orphan-page", "concepts/Island.md")
    ]
    assert report["degraded"] == ["1 finding hidden by policy"]
    text = goat("wiki", "lint", "--pen", "w")
    assert "quokka" not in text.output.casefold()

    page = tmp_path / "wombat.md"
    page.write_text(QUOKKA_LINKS)
    written = goat(
        "wiki", "write", "concepts/Wombat", "--file", str(page), "--source", "docs/paper.md",
        "--pen", "w", "--json",
    )  # fmt: skip
    assert written.exit_code == 0, written.output
    result = json.loads(written.stdout)
    assert result["findings"] == [] and result["degraded"] == ["3 findings hidden by policy"]
    again = goat(
        "wiki", "write", "concepts/Numbat", "--file", str(page), "--source", "docs/paper.md",
        "--pen", "w",
    )  # fmt: skip
    assert again.exit_code == 0, again.output
    assert "quokka" not in again.output.casefold()
