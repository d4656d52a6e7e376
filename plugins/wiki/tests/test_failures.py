"""Each known failure of the LLM Wiki pattern (docs/design.md, Bindings and providers), with
its exact input: made impossible, or reported by lint."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest
from wiki_helpers import MakeWiki, write_tree

from goat_core.contract import MemoryWrite
from goat_core.errors import BadInput, Conflict, PathError
from goat_core.testing.conformance.faults import Fault, filesystem_fault
from goat_wiki.provider import PageWrite, WikiProvider

pytestmark = pytest.mark.anyio


def codes(report: Any, code: str) -> list[Any]:
    return [f for f in report.findings if f.code == code]


def index_paths(root: Path, name: str = "index.md") -> list[str]:
    from goat_wiki.text import parse_index

    return sorted(parse_index((root / name).read_text("utf-8")))


def log_headings(root: Path, name: str = "log.md") -> list[str]:
    return [ln for ln in (root / name).read_text("utf-8").splitlines() if ln.startswith("## ")]


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    return write_tree(
        tmp_path / "docs",
        {
            "a/readme.md": "Alpha readme: attention weighs tokens.\n",
            "b/readme.md": "Beta readme: transformers stack attention layers.\n",
        },
    )


# -- index and log drift ---------------------------------------------------------------------
async def test_every_write_keeps_index_and_log_true(wiki: MakeWiki, sources: Path) -> None:
    w = wiki()
    root = w.root
    await w.ingest(sources)
    await w.write_page(
        PageWrite("Attention", "Weighs tokens.", folder="concepts", sources=("docs/a/readme.md",))
    )
    await w.remember(MemoryWrite(text="a remembered thought", title="Thought", source="cli"))
    await w.feedback(MemoryWrite(kind="feedback", text="good page", on="Attention", source="cli"))
    await w.remember(MemoryWrite(text="to be forgotten", title="Gone", source="cli"))
    await w.forget("Gone")
    assert index_paths(root) == ["concepts/Attention.md", "syntheses/Thought.md"]
    heads = log_headings(root)
    assert [h.split("] ", 1)[1] for h in heads] == [
        "ingest | docs",
        "write | Attention",
        "remember | Thought",
        "feedback | Attention",
        "remember | Gone",
        "forget | Gone",
    ]
    assert all(h.startswith("## [") and h[4:14].count("-") == 2 for h in heads)
    report = await w.lint()
    assert not codes(report, "index-drift") and not codes(report, "log-gap")


async def test_a_page_that_cannot_be_rolled_back_stands_and_is_completed_on_next_open(
    wiki: MakeWiki, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index write fails after the page landed, and the wiki folder turns read-only so
    the page cannot be removed again: the write stands (``stored``), its journal pending;
    the next open completes index and log."""
    first = wiki()
    await first.write_page(PageWrite("Seed", "seed page", folder="concepts"))
    root = first.root
    await first.close()
    read_only = filesystem_fault(root, Fault.READ_ONLY)

    def index_fails(self: WikiProvider, *args: Any) -> None:
        read_only.__enter__()  # from here on nothing under the wiki folder can be written
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(root / "index.md"))

    crashing = wiki()
    monkeypatch.setattr(WikiProvider, "_update_index", index_fails)
    try:
        result = await crashing.write_page(
            PageWrite("Landed", "the page landed", folder="concepts")
        )
    finally:
        read_only.__exit__(None, None, None)
    monkeypatch.undo()
    assert (result["status"], result["page"]) == ("stored", "concepts/Landed.md")
    assert (root / "concepts/Landed.md").exists()
    assert crashing._journal_path.exists()
    assert "concepts/Landed.md" not in index_paths(root)  # drifted until the next open
    await crashing.close()

    fresh = wiki()
    await fresh.list_pages()
    assert index_paths(root) == ["concepts/Landed.md", "concepts/Seed.md"]
    assert sum("write | Landed" in h for h in log_headings(root)) == 1
    report = await fresh.lint()
    assert not codes(report, "index-drift") and not codes(report, "log-gap")


async def test_page_added_by_hand_is_index_drift_and_fix_rebuilds(wiki: MakeWiki) -> None:
    w = wiki()
    await w.write_page(PageWrite("Seed", "seed page", folder="concepts"))
    root = w.root
    (root / "concepts/By hand.md").write_text("Written in an editor.\n", encoding="utf-8")
    drift = codes(await w.lint(), "index-drift")
    assert [(f.target, f.fixable) for f in drift] == [("concepts/By hand.md", True)]
    fixed = await w.lint(fix=True)
    assert [f.code for f in fixed.fixed] == ["index-drift"]
    assert not codes(fixed, "index-drift")
    assert "concepts/By hand.md" in index_paths(root)
    assert log_headings(root)[-1].endswith("lint | rebuild index")


async def test_log_gaps_are_reported(wiki: MakeWiki) -> None:
    w = wiki()
    await w.write_page(PageWrite("Seed", "seed page", folder="concepts"))
    root = w.root
    log = root / "log.md"
    log.write_text(
        log.read_text("utf-8").replace("## [", "## [2099-01-01] write | Later\n\n## [", 1)
        + "\n## not an entry\n",
        encoding="utf-8",
    )
    (root / "concepts/Unlogged.md").write_text(
        "---\ntitle: Unlogged\nsources: []\n---\nNo log entry.\n", encoding="utf-8"
    )
    gaps = codes(await w.lint(), "log-gap")
    messages = " ".join(f.message for f in gaps)
    assert "follows one dated 2099-01-01" in messages
    assert "not a log entry heading" in messages
    assert any(f.path == "concepts/Unlogged.md" for f in gaps)


# -- bare wikilinks --------------------------------------------------------------------------
async def test_bare_wikilinks_resolve_are_reported_and_fixed(wiki: MakeWiki) -> None:
    w = wiki()
    await w.write_page(PageWrite("Transformer", "A model. See [[Attention]].", folder="entities"))
    result = await w.write_page(
        PageWrite(
            "Attention",
            "Uses [[Transformer]] and [[Transformer#Layers|layers]].\n\n"
            "| page | note |\n| --- | --- |\n| [[Transformer]] | x |\n\n## Layers\n",
            folder="concepts",
        )
    )
    assert {f["code"] for f in result["findings"]} >= {"bare-link"}
    edges = [e for e in (await w.link_map()).edges if e.source == "concepts/Attention.md"]
    assert {e.target for e in edges} == {"entities/Transformer.md"}  # resolved, not orphaned
    report = await w.lint()
    assert not codes(report, "orphan-page")
    assert len(codes(report, "bare-link")) == 4
    await w.lint(fix=True)
    root = w.root
    text = (root / "concepts/Attention.md").read_text("utf-8")
    assert "Uses [[entities/Transformer|Transformer]] and " in text
    assert "[[entities/Transformer#Layers|layers]]" in text
    assert "| [[entities/Transformer\\|Transformer]] | x |" in text  # escaped inside a table
    assert "See [[concepts/Attention|Attention]]." in (root / "entities/Transformer.md").read_text()
    assert not codes(await w.lint(), "bare-link")


# -- schema folders --------------------------------------------------------------------------
async def test_undefined_folder_is_rejected_with_the_allowed_ones(wiki: MakeWiki) -> None:
    w = wiki()
    with pytest.raises(BadInput) as info:
        await w.write_page(PageWrite("Ada", "A person.", folder="people"))
    assert "sources, entities, concepts, syntheses" in str(info.value)
    assert "rule schema-folder" in str(info.value)
    assert not list(w.root.rglob("Ada.md"))


@pytest.mark.parametrize(
    ("folder", "expected"),
    [
        ("entity", "entities"),
        ("Concept", "concepts"),
        ("synthesis", "syntheses"),
        ("source", "sources"),
    ],
)
async def test_obvious_folder_is_mapped(wiki: MakeWiki, folder: str, expected: str) -> None:
    w = wiki()
    result = await w.write_page(PageWrite("Ada", "A person.", folder=folder))
    assert result["page"] == f"{expected}/Ada.md"


async def test_folder_in_title_and_type_hint(wiki: MakeWiki) -> None:
    w = wiki()
    assert (await w.write_page(PageWrite("entities/Ada", "A person.")))["page"] == "entities/Ada.md"
    assert (await w.write_page(PageWrite("Grace", "A person.", type="entity")))["page"] == (
        "entities/Grace.md"
    )
    assert (await w.write_page(PageWrite("Idea", "Plain.")))["page"] == "syntheses/Idea.md"
    slash = await w.write_page(PageWrite("TCP/IP", "A protocol suite.", folder="concepts"))
    assert slash["page"] == "concepts/TCP-IP.md"
    assert (await w.get_page("concepts/TCP-IP")).title == "TCP/IP"


async def test_page_in_folder_outside_schema_is_drift(wiki: MakeWiki) -> None:
    w = wiki()
    await w.write_page(PageWrite("Seed", "seed", folder="concepts"))
    write_tree(w.root, {"misc/Stray.md": "stray\n", "Loose.md": "loose\n"})
    drift = codes(await w.lint(), "schema-folder-drift")
    assert sorted(f.path for f in drift) == ["Loose.md", "misc/Stray.md"]


# -- same-named and overlapping sources ------------------------------------------------------
async def test_same_named_sources_stay_distinct(
    wiki: MakeWiki, sources: Path, tmp_path: Path
) -> None:
    w = wiki()
    result = await w.ingest(sources)
    assert result["added"] == ["docs/a/readme.md", "docs/b/readme.md"]
    x = write_tree(tmp_path / "x", {"readme.md": "x readme\n"})
    y = write_tree(tmp_path / "y", {"readme.md": "y readme\n"})
    first = (await w.ingest(x / "readme.md"))["added"]
    second = (await w.ingest(y / "readme.md"))["added"]
    assert first == ["readme.md"]
    assert len(second) == 1 and second[0].startswith("readme.") and second[0] != "readme.md"
    raw = w.root / "raw"
    assert (raw / "readme.md").read_text() == "x readme\n"
    assert (raw / second[0]).read_text() == "y readme\n"
    assert (raw / "docs/a/readme.md").read_text() != (raw / "docs/b/readme.md").read_text()


async def test_overlapping_ingests_add_nothing_twice(wiki: MakeWiki, sources: Path) -> None:
    w = wiki()
    await w.ingest(sources)
    again = await w.ingest(sources)
    inner = await w.ingest(sources / "a")
    single = await w.ingest(sources / "b" / "readme.md")
    assert again["added"] == inner["added"] == single["added"] == []
    assert sorted(again["present"]) == ["docs/a/readme.md", "docs/b/readme.md"]
    assert inner["present"] == ["docs/a/readme.md"] and single["present"] == ["docs/b/readme.md"]
    assert (await w.sources())["sources"].__len__() == 2
    files = [p for p in (w.root / "raw").rglob("*") if p.is_file()]
    assert len(files) == 3  # two sources and the manifest
    assert sum("ingest |" in h for h in log_headings(w.root)) == 1


async def test_ingest_refuses_the_wiki_itself(wiki: MakeWiki) -> None:
    w = wiki()
    await w.write_page(PageWrite("Seed", "seed", folder="concepts"))
    with pytest.raises(BadInput, match="source-inside-wiki"):
        await w.ingest(w.root / "concepts")


# -- alias pipes -----------------------------------------------------------------------------
async def test_alias_pipe_escaped_outside_table_is_reported_and_fixed(wiki: MakeWiki) -> None:
    w = wiki()
    await w.write_page(PageWrite("Attention", "Target.", folder="concepts"))
    await w.write_page(
        PageWrite(
            "Notes",
            "See [[concepts/Attention\\|attn]] here.\n\n"
            "| a | b |\n| - | - |\n| [[concepts/Attention\\|attn]] | ok |\n",
            folder="syntheses",
        )
    )
    found = codes(await w.lint(), "escaped-alias-pipe")
    assert [(f.path, f.line, f.fixable) for f in found] == [("syntheses/Notes.md", 9, True)]
    await w.lint(fix=True)
    text = (w.root / "syntheses/Notes.md").read_text("utf-8")
    assert "See [[concepts/Attention|attn]] here." in text
    assert "| [[concepts/Attention\\|attn]] | ok |" in text
    assert not codes(await w.lint(), "escaped-alias-pipe")


async def test_fix_never_rewrites_a_code_sample_or_a_note_that_is_not_utf8(wiki: MakeWiki) -> None:
    """lint --fix edits only a link that stands once on its line outside code; a note that is
    not valid UTF-8 is never rewritten (its bytes stay as they were)."""
    w = wiki()
    await w.write_page(PageWrite("Attention", "Target.", folder="concepts"))
    sample = "Escape like `[[concepts/Attention\\|b]]` but here [[concepts/Attention\\|b]]\n"
    await w.write_page(PageWrite("Sample", sample, folder="syntheses"))
    raw = b"caf\xe9 see [[concepts/Attention\\|x]]\n"
    (w.root / "syntheses" / "Latin1.md").write_bytes(raw)
    await w.lint(fix=True)
    assert (w.root / "syntheses" / "Latin1.md").read_bytes() == raw
    text = (w.root / "syntheses/Sample.md").read_text("utf-8")
    assert "`[[concepts/Attention\\|b]]`" in text  # the code sample is untouched


# -- aliases, anchors, footnotes, code: no false positives -----------------------------------
LINT_INPUT = """Links that are fine: [[concepts/Target|an alias]], [[concepts/Target#Section]],
[[concepts/Target#Section#Sub part|deep]], [[concepts/Target#^blk-1]], ![[concepts/Target]],
[[#Own heading]], [md](Target.md), [[concepts/Target#`code` heading?]].

Code is not a link: `[[Nowhere]]` and ``[[Nowhere|x]] [^nodef]``.

```
[[Nowhere]] and [^nodef]
```

%% [[Nowhere]] hidden %%

A footnote[^ok] and a missing one[^missing] and inline^[fine].

[^ok]: Defined.

## Own heading

Broken: [[concepts/Target#No such heading]] and [[Nowhere at all]].
"""


async def test_lint_handles_aliases_anchors_embeds_footnotes_and_code(wiki: MakeWiki) -> None:
    w = wiki()
    await w.write_page(
        PageWrite(
            "Target",
            "## Section\n\n### Sub part\n\nA block. ^blk-1\n\n## `code` heading?\n",
            folder="concepts",
            sources=(),
        )
    )
    await w.write_page(PageWrite("Links", LINT_INPUT, folder="syntheses"))
    report = await w.lint()
    page = [f for f in report.findings if f.path == "syntheses/Links.md"]
    got = sorted((f.code, f.target) for f in page if f.code not in {"no-sources", "orphan-page"})
    assert got == [
        ("broken-anchor", "concepts/Target.md#No such heading"),
        ("broken-link", "Nowhere at all"),
        ("footnote-undefined", "^missing"),
    ]


async def test_a_derived_summary_carries_no_footnote_and_lint_reads_footnotes_in_the_body_only(
    wiki: MakeWiki,
) -> None:
    """The index line derived from a body that opens with footnotes drops them (it has no
    definitions to point to), and a reference quoted in frontmatter is not a footnote:
    exactly one finding, for the body's undefined ``[^2]``, at its line in the file."""
    w = wiki()
    await w.write_page(
        PageWrite("Boards", "Boards hold cards[^1] and^[inline] lanes[^2].\n\n[^1]: Defined.\n")
    )
    text = (w.root / "syntheses" / "Boards.md").read_text(encoding="utf-8")
    assert "summary: Boards hold cards and lanes.\n" in text
    body_line = text.splitlines().index("Boards hold cards[^1] and^[inline] lanes[^2].") + 1
    found = [
        (f.line, f.target)
        for f in (await w.lint()).findings
        if f.code == "footnote-undefined" and f.path == "syntheses/Boards.md"
    ]
    assert found == [(body_line, "^2")]
    assert "[^2]" not in w.root.joinpath("index.md").read_text(encoding="utf-8")
    await w.write_page(PageWrite("Lanes", "Lanes hold boards.", summary="Lanes, as in [^9]"))
    assert "summary: Lanes, as in [^9]\n" in (w.root / "syntheses" / "Lanes.md").read_text(
        encoding="utf-8"
    )
    assert not [
        f
        for f in (await w.lint()).findings
        if f.code == "footnote-undefined" and f.path == "syntheses/Lanes.md"
    ]


# -- stale claims ----------------------------------------------------------------------------
async def test_claims_go_stale_when_their_source_changes(wiki: MakeWiki, sources: Path) -> None:
    w = wiki()
    await w.ingest(sources)
    await w.write_page(
        PageWrite("Attention", "Weighs tokens.", folder="concepts", sources=("docs/a/readme.md",))
    )
    await w.write_page(
        PageWrite("Stack", "Layers.", folder="concepts", sources=("raw/docs/b/readme.md",))
    )
    assert not codes(await w.lint(), "stale-page")
    page = await w.get_page("Attention")
    assert page.provenance["sources"][0]["id"] == "docs/a/readme.md"
    assert len(page.provenance["sources"][0]["hash"]) == 32

    origin = sources / "a/readme.md"
    origin.write_text("Alpha readme, revised: attention is all you need.\n", encoding="utf-8")
    os.utime(origin, ns=(1, 1))
    stale = codes(await w.lint(), "stale-page")
    assert [(f.path, f.target) for f in stale] == [("concepts/Attention.md", "docs/a/readme.md")]
    assert "changed at its origin" in stale[0].message

    renewed = (await w.ingest(sources))["added"]
    assert len(renewed) == 1 and renewed[0] != "docs/a/readme.md"
    stale = codes(await w.lint(), "stale-page")
    assert "has a newer version" in stale[0].message

    raw_b = w.root / "raw/docs/b/readme.md"
    raw_b.unlink()
    messages = {f.path: f.message for f in codes(await w.lint(), "stale-page")}
    assert "vanished" in messages["concepts/Stack.md"]


async def test_unknown_source_id_is_rejected(wiki: MakeWiki) -> None:
    w = wiki()
    with pytest.raises(BadInput, match="unknown source id"):
        await w.write_page(PageWrite("X", "x", folder="concepts", sources=("nope.md",)))


async def test_page_without_sources_is_a_warning_not_a_rejection(wiki: MakeWiki) -> None:
    w = wiki()
    result = await w.write_page(PageWrite("Lonely", "No sources.", folder="concepts"))
    assert [f["code"] for f in result["findings"] if f["code"] == "no-sources"] == ["no-sources"]


# -- updates, etags, provider files ----------------------------------------------------------
async def test_update_needs_the_current_etag(wiki: MakeWiki) -> None:
    w = wiki()
    first = await w.write_page(PageWrite("Page", "v1\n", folder="concepts"))
    with pytest.raises(Conflict, match="pass its etag"):
        await w.write_page(PageWrite("Page", "v2\n"))
    with pytest.raises(Conflict, match="changed since it was read"):
        await w.write_page(PageWrite("Page", "v2\n", etag="0" * 32))
    second = await w.write_page(PageWrite("Page", "v2\n", etag=first["etag"]))
    assert second["op"] == "update" and second["page"] == "concepts/Page.md"
    assert (await w.get_page("Page")).body == "v2\n"


async def test_body_with_frontmatter_keeps_its_keys(wiki: MakeWiki) -> None:
    w = wiki()
    await w.write_page(
        PageWrite(
            "Ada",
            "---\ntype: person\naliases: [Countess]\n---\nA person.\n",
            folder="entities",
            summary="Mathematician",
        )
    )
    page = await w.get_page("entities/Ada")
    assert page.frontmatter["type"] == "person"
    assert page.frontmatter["aliases"] == ["Countess"]
    assert page.frontmatter["summary"] == "Mathematician"
    assert "- [[entities/Ada|Ada]] — Mathematician" in (w.root / "index.md").read_text()


@pytest.mark.parametrize(
    ("title", "folder", "error", "rule"),
    [
        ("index", None, BadInput, "provider-file"),
        ("Log", "concepts", BadInput, "provider-file"),
        ("x", "raw", BadInput, "raw-is-immutable"),
        ("raw/x", None, BadInput, "raw-is-immutable"),
        ("x", "../outside", PathError, "parent-traversal"),
        ("concepts/../../x", None, PathError, "parent-traversal"),
    ],
)
async def test_writes_cannot_reach_provider_files_raw_or_outside(
    wiki: MakeWiki, title: str, folder: str | None, error: type[Exception], rule: str
) -> None:
    w = wiki()
    with pytest.raises(error) as info:
        await w.write_page(PageWrite(title, "text", folder=folder))
    assert rule in str(info.value) or getattr(info.value, "rule", None) == rule


async def test_bound_vault_in_place_never_takes_over_users_files(
    wiki: MakeWiki, vault: Path
) -> None:
    users_index = "# My own index\n\n- [[Projects/Plan]]\n"
    write_tree(
        vault,
        {
            "index.md": users_index,
            "Projects/Plan.md": "The plan.\n",
            "Areas/Health.md": "Health [[Plan]].\n",
            "raw/Notes on raw.md": "A user's raw folder.\n",
        },
    )
    w = wiki(root=vault)
    assert [p.id for p in (await w.list_pages()).items] == [
        "Areas/Health.md",
        "index.md",
        "Projects/Plan.md",
        "raw/Notes on raw.md",
    ]
    assert not (vault / "schema.md").exists()  # added only when first needed
    result = await w.write_page(PageWrite("Synthesis one", "Joins [[Projects/Plan]].", sources=()))
    assert result["page"] == "syntheses/Synthesis one.md"
    assert (vault / "index.md").read_text() == users_index
    assert (vault / "wiki-index.md").read_text().startswith("---\ngoat-wiki: index\n")
    assert (vault / "log.md").read_text().startswith("---\ngoat-wiki: log\n")
    schema = (await w.read("schema"))["text"]
    assert "folders: [Areas, Projects, raw, syntheses]" in schema
    taken = codes(await w.lint(), "name-taken")
    assert sorted(f.path for f in taken) == ["index.md", "raw"]
    await w.ingest(write_tree(vault.parent / "src", {"s.md": "source\n"}) / "s.md")
    assert (vault / "wiki-raw/s.md").exists()
    assert not (vault / "raw/s.md").exists()
    assert "index.md" in [p.id for p in (await w.list_pages(limit=100)).items]


async def test_recall_in_a_fresh_process_reads_only_the_hits(
    wiki: MakeWiki, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = wiki()
    for i in range(20):
        await w.write_page(PageWrite(f"Page {i}", f"common words page{i}", folder="concepts"))
    await w.close()
    reads: list[str] = []
    original = WikiProvider._load

    def counting(self: WikiProvider, rel: str, *args: Any) -> Any:
        reads.append(rel)
        return original(self, rel, *args)

    monkeypatch.setattr(WikiProvider, "_load", counting)
    fresh = wiki()
    result = await fresh.recall("page7", limit=3)
    assert [i.id for i in result.items] == ["concepts/Page 7.md"]
    assert reads == ["concepts/Page 7.md"]


async def test_links_to_sources_and_provider_files_are_files_not_pages(
    wiki: MakeWiki, sources: Path
) -> None:
    w = wiki()
    await w.ingest(sources)
    await w.write_page(
        PageWrite(
            "A",
            "From [[raw/docs/a/readme.md]]; see [[index]].",
            folder="concepts",
            sources=("docs/a/readme.md",),
        )
    )
    edges = {e.raw: (e.target, e.resolution.value) for e in (await w.link_map()).edges}
    assert edges == {
        "[[raw/docs/a/readme.md]]": ("raw/docs/a/readme.md", "attachment"),
        "[[index]]": ("index.md", "attachment"),
    }
    assert [n.id for n in (await w.link_map()).nodes] == ["concepts/A.md"]
    report = await w.lint()
    assert not codes(report, "broken-link") and not codes(report, "missing-attachment")


async def test_remember_with_title_appends_a_dated_entry_with_provenance(wiki: MakeWiki) -> None:
    w = wiki()
    await w.write_page(PageWrite("Deploys", "How we deploy.\n", folder="concepts"))
    before = (w.root / "concepts/Deploys.md").read_text("utf-8")
    receipt = await w.remember(
        MemoryWrite(text="Keys rotate every 90 days.", title="Deploys", source="cli")
    )
    assert receipt.path == "concepts/Deploys.md"
    after = (w.root / "concepts/Deploys.md").read_text("utf-8")
    body_before = before.split("---\n", 2)[2]
    assert after.split("---\n", 2)[2].startswith(body_before)  # earlier text untouched
    tail = after[len(after) - len("Keys rotate every 90 days.\n") - 40 :]
    assert " UTC remember (cli)\n\nKeys rotate every 90 days.\n" in tail
    first = await w.remember(MemoryWrite(text="same words", source="model"))
    second = await w.remember(MemoryWrite(text="same words", source="model"))
    assert (first.path, second.path) == ("syntheses/same words.md", "syntheses/same words-2.md")
    assert (await w.get_page(first.path)).provenance["remembered_by"] == "model"
    with pytest.raises(Conflict, match="differs only in case"):
        await w.remember(MemoryWrite(text="x", title="deploys", source="cli"))


# -- a GOAT home that cannot be written ------------------------------------------------------
async def test_writes_fail_before_any_page_changes_when_the_index_cannot_be_written(
    wiki: MakeWiki, sources: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GOAT home's search index on a full disk: a write, an ingest, a remember is
    ``StoreUnwritable`` naming the index file, and nothing of the wiki changes."""
    import sqlite3

    from goat_core.errors import StoreUnwritable
    from goat_core.filestore.search import SearchIndex

    w = wiki()
    root = w.root
    await w.write_page(PageWrite("Seed", "seed page", folder="concepts"))
    before = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    await w.close()

    def full(self: SearchIndex) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(SearchIndex, "_open_writable", full)
    w = wiki(root=root)
    db = w._index_path
    said = f"cannot write the search index {db}: the disk is full (database or disk is full)"
    for attempt in (
        lambda: w.write_page(PageWrite("New", "new page", folder="concepts")),
        lambda: w.ingest(sources),
        lambda: w.remember(MemoryWrite(text="a thought", title="Thought", source="cli")),
        lambda: w.lint(fix=True),
    ):
        with pytest.raises(StoreUnwritable) as raised:
            await attempt()
        assert str(raised.value).startswith(said)
    after = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert after == before
    assert (await w.get_page("Seed")).body.strip() == "seed page"


async def test_a_symlink_out_of_the_wiki_makes_its_page_list_incomplete(
    wiki: MakeWiki, vault: Path, tmp_path: Path
) -> None:
    """``leak.md -> ../outside/secret.md``: the page is not listed, the listing is not
    complete and ``degraded`` names the skipped path (docs/design.md, Browsing and links)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("not the wiki's\n")
    write_tree(vault, {"Projects/Plan.md": "The plan.\n"})
    w = wiki(root=vault)
    assert (await w.list_pages()).complete is True
    (vault / "leak.md").symlink_to(outside / "secret.md")
    listing = await w.list_pages()
    assert [p.id for p in listing.items] == ["Projects/Plan.md"]
    assert listing.complete is False
    assert "leak.md: skipped, symlink points outside the store" in listing.degraded


@pytest.mark.parametrize(
    "frontmatter",
    ["title: Odd\nupdated: &u 2020-01-01\nlast_seen: *u", 'title: Odd\n"updated": 2020-01-01'],
)
async def test_a_page_not_editable_line_by_line_is_a_conflict(
    wiki: MakeWiki, frontmatter: str
) -> None:
    """Remember, feedback and a page write onto a page whose frontmatter parses but cannot be
    edited line by line are refused as conflicts; the page keeps every byte."""
    w = wiki()
    path = w.root / "syntheses" / "Odd.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = f"---\n{frontmatter}\n---\nbody\n"
    path.write_text(text, "utf-8")
    with pytest.raises(Conflict, match="was not changed: note not edited"):
        await w.remember(MemoryWrite(text="more", title="Odd"))
    with pytest.raises(Conflict, match="was not changed: note not edited"):
        await w.feedback(MemoryWrite(kind="feedback", text="more", on="Odd"))
    page = await w.get_page("Odd")
    with pytest.raises(Conflict, match="was not changed: note not edited"):
        await w.write_page(PageWrite("Odd", "new body", folder="syntheses", etag=page.etag))
    assert path.read_text("utf-8") == text
