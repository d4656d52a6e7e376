"""The markdown provider on real folders: every rule with the exact bad input."""

from __future__ import annotations

import os
import stat
import threading
import unicodedata
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import MakeStore
from pydantic import ValidationError

from goat_core import Registry
from goat_core.contract import Capability, Consistency, MemoryWrite, ReceiptStatus, Scope, ScopeKind
from goat_core.errors import (
    Ambiguous,
    BadInput,
    Conflict,
    NotFound,
    PathError,
    ScopeError,
    TooLarge,
)
from goat_core.filestore import parse_note
from goat_core.host import GoatHome
from goat_core.plugins import PluginSettings
from goat_markdown.plugin import MarkdownSettings, spec
from goat_markdown.provider import MarkdownProvider

pytestmark = pytest.mark.anyio

OBSIDIAN_NOTE = (
    "---\n"
    "aliases:\n"
    "  - How to/Internal link\n"
    "cssclasses:\n"
    "  - soft-embed\n"
    "description: Learn how to link to notes.\n"
    "publish: 'yes'   # a comment Obsidian keeps\n"
    "permalink: links\n"
    "---\n"
    "Obsidian supports [[Other note|an alias]] links.\r\n"
    "No trailing newline here"
)


def files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


# -- plugin declaration -------------------------------------------------------------------------


def test_entry_point_declares_markdown() -> None:
    registry = Registry.load(PluginSettings(load=("markdown",), strict=True))
    spec = registry.get_provider("markdown")
    assert spec.capabilities == {
        Capability.PAGES,
        Capability.MAP,
        Capability.FEEDBACK,
        Capability.SCOPED_STORES,
    }
    assert spec.consistency is Consistency.IMMEDIATE
    assert spec.settings_model is MarkdownSettings
    schema = spec.settings_schema()
    assert "description" in schema["properties"]["root"]
    with pytest.raises(ValueError, match="extra"):
        MarkdownSettings.model_validate({"root": "/x", "colour": "red"})


def test_plugin_import_is_cheap() -> None:
    import subprocess
    import sys

    code = (
        "import sys, goat_markdown.plugin as p; p.goat_register_providers();"
        "print(sorted(m for m in ('yaml','sqlite3','goat_markdown.provider',"
        "'goat_core.filestore.search')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- store roots --------------------------------------------------------------------------------


async def test_default_store_created_per_scope(store: MakeStore, home: GoatHome) -> None:
    g = store()
    pen = store(scope=Scope.pen("docs"))
    assert g.root == Path(os.path.realpath(home.stores_dir / "global"))
    assert pen.root == Path(os.path.realpath(home.stores_dir / "pens" / "docs"))
    assert stat.S_IMODE(g.root.stat().st_mode) == 0o700
    await g.remember(MemoryWrite(text="only in global zqglobal"))
    assert (await pen.recall("zqglobal")).items == ()
    assert [i.title for i in (await g.recall("zqglobal")).items] == ["only in global zqglobal"]


@pytest.mark.parametrize(
    ("root", "rule"),
    [
        ("/", "root-is-filesystem-root"),
        (str(Path.home()), "root-is-home"),
        ("/root", "root-is-home"),
    ],
)
def test_root_refused(home: GoatHome, root: str, rule: str) -> None:
    # The settings model refuses it at bind time, naming the rule ...
    with pytest.raises(ValidationError, match=rule):
        MarkdownSettings(root=Path(root))
    # ... and the provider refuses it too when handed settings that skipped validation
    # (e.g. a folder that changed after it was bound).
    with pytest.raises(PathError) as info:
        _unvalidated_store(home, Path(root))
    assert info.value.rule == rule


def test_forged_pen_id_refused(store: MakeStore, home: GoatHome) -> None:
    forged = Scope.model_construct(kind=ScopeKind.PEN, pen_id="../escape")
    with pytest.raises(ScopeError):
        store(scope=forged)
    assert not (home.stores_dir / "escape").exists()


def test_explicit_root_must_exist(home: GoatHome, tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="root-not-directory"):
        MarkdownSettings(root=tmp_path / "missing")
    with pytest.raises(PathError) as info:
        _unvalidated_store(home, tmp_path / "missing")
    assert info.value.rule == "root-not-directory"
    assert not (tmp_path / "missing").exists()


def _unvalidated_store(home: GoatHome, root: Path) -> None:
    """Build a provider from settings that bypassed validation (``model_construct``)."""
    from goat_core.contract import Binding, ProviderContext

    settings = MarkdownSettings.model_construct(root=root)
    context = ProviderContext(
        scope=Scope.global_(),
        binding=Binding(id="default", provider="markdown", settings={"root": str(root)}),
        settings=settings,
        home=home,
    )
    provider = spec().factory(context)
    raise AssertionError(f"provider accepted root {root}: {provider!r}")


# -- containment ----------------------------------------------------------------------------------

TRAVERSAL = [
    ("../outside.md", "parent-traversal"),
    ("sub/../../outside.md", "parent-traversal"),
    ("/etc/passwd", "absolute-path"),
    ("a\x00b.md", "nul-byte"),
    ("sub/CON.md", "reserved-name"),
    ("sub//a.md", "empty-segment"),
]


@pytest.mark.parametrize(("ref", "rule"), TRAVERSAL)
async def test_traversal_refused_everywhere(
    store: MakeStore, vault: Path, tmp_path: Path, ref: str, rule: str
) -> None:
    (tmp_path / "outside.md").write_text("secret")
    (vault / "sub").mkdir()
    p = store(root=vault)
    for call in (p.get_page, p.forget, p.connections):
        with pytest.raises(PathError) as info:
            await call(ref)
        assert info.value.rule == rule
    with pytest.raises(PathError):
        await p.feedback(MemoryWrite(kind="feedback", text="x", on=ref))
    assert (tmp_path / "outside.md").read_text() == "secret"
    assert files(vault) == []


@pytest.mark.parametrize("ref", ["%2e%2e/outside.md", "sub%2f..%2foutside.md", "..\\outside.md"])
async def test_encoded_and_backslashed_names_stay_inside(
    store: MakeStore, vault: Path, tmp_path: Path, ref: str
) -> None:
    """On POSIX ``%2e`` and ``\\`` are characters of a file name, never a climb: each
    reference names a file inside the store (absent here), never ``../outside.md``."""
    (tmp_path / "outside.md").write_text("secret")
    (vault / "sub").mkdir()
    p = store(root=vault)
    for call in (p.get_page, p.forget, p.connections):
        with pytest.raises(NotFound):
            await call(ref)
    assert (tmp_path / "outside.md").read_text() == "secret"


async def test_symlinks_outside_skipped_and_reported(
    store: MakeStore, vault: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("zqsecretword lives here")
    (vault / "mine.md").write_text("zqmineword")
    (vault / "leak").symlink_to(outside)
    (vault / "leak.md").symlink_to(outside / "secret.md")
    p = store(root=vault)
    assert (await p.recall("zqsecretword")).items == ()
    listing = await p.list_pages()
    assert [i.path for i in listing.items] == ["mine.md"]
    assert listing.complete is False  # the walk left notes out
    assert "leak: skipped, symlink points outside the store" in listing.degraded
    assert "leak.md: skipped, symlink points outside the store" in listing.degraded
    result = await p.recall("zqmineword")
    assert [i.path for i in result.items] == ["mine.md"]
    assert any("symlink points outside" in d for d in result.degraded)
    with pytest.raises(PathError) as info:
        await p.get_page("leak/secret.md")
    assert info.value.rule == "symlink-escape"


async def test_symlink_cycle_does_not_loop(store: MakeStore, vault: Path) -> None:
    (vault / "a").mkdir()
    (vault / "a" / "n.md").write_text("zqcycle")
    (vault / "a" / "loop").symlink_to(vault / "a")
    (vault / "back").symlink_to(vault)
    p = store(root=vault)
    listing = await p.list_pages()
    assert [i.path for i in listing.items] == ["a/n.md"]
    assert listing.complete is True  # every note is listed under its own path
    assert [i.path for i in (await p.recall("zqcycle")).items] == ["a/n.md"]


# -- remember --------------------------------------------------------------------------------------


async def test_remember_creates_note_with_frontmatter(store: MakeStore, vault: Path) -> None:
    p = store(root=vault)
    r = await p.remember(
        MemoryWrite(
            text="Deploys run on Fridays", title="Ops", source="cli", tags=("ops", "deploy")
        )
    )
    assert r.status is ReceiptStatus.STORED and r.id == r.path == "Ops.md"
    assert r.scope == "global"
    note = parse_note((vault / "Ops.md").read_text())
    assert list(note.data) == ["id", "title", "created", "updated", "tags", "kind", "source"]
    assert note.data["title"] == "Ops" and note.data["kind"] == "remember"
    assert note.data["source"] == "cli" and note.data["tags"] == ["ops", "deploy"]
    assert note.body == "Deploys run on Fridays\n"
    page = await p.get_page("Ops")
    assert page.provenance == {
        "source": "cli",
        "created": page.frontmatter["created"],
        "kind": "remember",
    }
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((vault / "Ops.md").stat().st_mode) == 0o644 & ~umask


async def test_remember_same_title_appends_dated_entry(store: MakeStore, vault: Path) -> None:
    p = store(root=vault)
    await p.remember(MemoryWrite(text="first", title="Ops"))
    before = (vault / "Ops.md").read_text()
    r = await p.remember(MemoryWrite(text="second", title="Ops"))
    after = (vault / "Ops.md").read_text()
    assert r.path == "Ops.md" and files(vault) == ["Ops.md"]
    updated_line = next(ln for ln in before.splitlines(True) if ln.startswith("updated:"))
    new_updated = next(ln for ln in after.splitlines(True) if ln.startswith("updated:"))
    assert after.replace(new_updated, updated_line, 1).startswith(before)
    tail = after[len(before) :]
    import re

    assert re.fullmatch(r"\n## \d{4}-\d\d-\d\d \d\d:\d\d UTC\n\nsecond\n", tail)


async def test_remember_into_file_name_match(store: MakeStore, vault: Path) -> None:
    (vault / "Plain note.md").write_text("no frontmatter at all")
    p = store(root=vault)
    await p.remember(MemoryWrite(text="added", title="Plain note"))
    text = (vault / "Plain note.md").read_text()
    assert text.startswith("no frontmatter at all\n\n## ")  # no frontmatter added
    assert text.endswith("\n\nadded\n")


async def test_identical_text_twice_is_never_lost(store: MakeStore, vault: Path) -> None:
    p = store(root=vault)
    a = await p.remember(MemoryWrite(text="Same words again"))
    b = await p.remember(MemoryWrite(text="Same words again"))
    assert (a.path, b.path) == ("Same words again.md", "Same words again-2.md")
    await p.remember(MemoryWrite(text="dup", title="T"))
    await p.remember(MemoryWrite(text="dup", title="T"))
    assert (vault / "T.md").read_text().count("\ndup\n") == 2
    assert len((await p.recall("same words again")).items) == 2


async def test_case_only_twin_is_conflict(store: MakeStore, vault: Path) -> None:
    (vault / "Internal Links.md").write_text("existing")
    p = store(root=vault)
    with pytest.raises(Conflict, match=r"Internal Links\.md") as info:
        await p.remember(MemoryWrite(text="x", title="internal links"))
    assert info.value.exit_code == 5
    assert files(vault) == ["Internal Links.md"]
    assert (vault / "Internal Links.md").read_text() == "existing"


async def test_file_name_taken_by_other_title_is_conflict(store: MakeStore, vault: Path) -> None:
    p = store(root=vault)
    await p.remember(MemoryWrite(text="a", title="A-B"))
    with pytest.raises(Conflict, match=r"taken by note 'A-B\.md'"):
        await p.remember(MemoryWrite(text="b", title="A/B"))
    assert files(vault) == ["A-B.md"]


async def test_slash_in_title_stays_one_file(store: MakeStore, vault: Path) -> None:
    p = store(root=vault)
    r = await p.remember(MemoryWrite(text="t", title="CI/CD: pipelines"))
    assert r.path == "CI-CD pipelines.md" and files(vault) == ["CI-CD pipelines.md"]
    assert (await p.get_page("CI/CD: pipelines")).title == "CI/CD: pipelines"
    await p.remember(MemoryWrite(text="more", title="CI/CD: pipelines"))
    assert files(vault) == ["CI-CD pipelines.md"]
    assert (await p.get_page("CI-CD pipelines.md")).body.endswith("\n\nmore\n")


async def test_nfc_title(store: MakeStore, vault: Path) -> None:
    p = store(root=vault)
    nfd = unicodedata.normalize("NFD", "Café notes")
    r = await p.remember(MemoryWrite(text="one", title=nfd))
    assert r.path == "Café notes.md"
    assert os.listdir(vault) == [unicodedata.normalize("NFC", "Café notes.md")]
    await p.remember(MemoryWrite(text="two", title="Café notes"))  # NFC spelling appends
    assert files(vault) == ["Café notes.md"]
    assert parse_note((vault / "Café notes.md").read_text()).data["title"] == "Café notes"


@pytest.mark.parametrize(("title", "rule"), [("CON", "reserved-name"), ("???", "empty-title")])
async def test_bad_titles_refused(store: MakeStore, vault: Path, title: str, rule: str) -> None:
    p = store(root=vault)
    with pytest.raises(PathError) as info:
        await p.remember(MemoryWrite(text="x", title=title))
    assert info.value.rule == rule and files(vault) == []


async def test_too_large_and_empty_write_nothing(store: MakeStore, vault: Path) -> None:
    p = store(root=vault)
    limit = p.spec.max_input_chars
    with pytest.raises(TooLarge):
        await p.remember(MemoryWrite(text="x" * (limit + 1), title="Big"))
    with pytest.raises(BadInput, match="empty"):
        await p.remember(MemoryWrite(text="  \n "))
    assert files(vault) == []
    assert (await p.remember(MemoryWrite(text="x" * limit, title="Big"))).path == "Big.md"


# -- Obsidian notes --------------------------------------------------------------------------------


async def test_obsidian_note_bytes_preserved_after_append(store: MakeStore, vault: Path) -> None:
    (vault / "Links.md").write_bytes(OBSIDIAN_NOTE.encode())
    (vault / "Other note.md").write_bytes(b"target")
    p = store(root=vault)
    await p.list_pages()
    await p.recall("links")
    assert (vault / "Links.md").read_bytes() == OBSIDIAN_NOTE.encode()  # reads never write
    await p.remember(MemoryWrite(text="appended entry", title="Links"))
    after = (vault / "Links.md").read_bytes().decode()
    fm_end = OBSIDIAN_NOTE.index("---\nObsidian")
    updated = after[fm_end : after.index("---\nObsidian")]
    assert updated.startswith("updated: ") and updated.count("\n") == 1
    assert after[:fm_end] == OBSIDIAN_NOTE[:fm_end]
    rest = after[fm_end + len(updated) :]
    assert rest.startswith(OBSIDIAN_NOTE[fm_end:])
    # the note uses CRLF somewhere, so the new lines do too
    assert rest[len(OBSIDIAN_NOTE) - fm_end :].endswith("\r\n\r\nappended entry\r\n")
    page = await p.get_page("Links")
    assert page.frontmatter["publish"] == "yes"
    assert page.frontmatter["aliases"] == ["How to/Internal link"]


@pytest.mark.parametrize(
    "frontmatter",
    [
        "title: [unclosed",
        # a date that does not exist: PyYAML builds it, Python refuses it
        "title: Broken\ncreated: 2023-02-30",
    ],
)
async def test_unparsable_frontmatter_listed_searchable_never_rewritten(
    store: MakeStore, vault: Path, frontmatter: str
) -> None:
    broken = f"---\n{frontmatter}\n---\nzqbrokenword text\n"
    (vault / "Broken.md").write_text(broken)
    (vault / "Fine.md").write_text("zqbrokenword too")
    p = store(root=vault)
    listing = await p.list_pages()
    assert [i.path for i in listing.items] == ["Broken.md", "Fine.md"]
    assert any(d.startswith("Broken.md: frontmatter does not parse") for d in listing.degraded)
    result = await p.recall("zqbrokenword")
    assert {i.path for i in result.items} == {"Broken.md", "Fine.md"}
    assert any("Broken.md" in d for d in result.degraded)
    page = await p.get_page("Broken")
    assert page.frontmatter == {} and page.body == broken
    with pytest.raises(Conflict, match="never rewritten"):
        await p.remember(MemoryWrite(text="more", title="Broken"))
    with pytest.raises(Conflict, match="never rewritten"):
        await p.feedback(MemoryWrite(kind="feedback", text="more", on="Broken"))
    assert (vault / "Broken.md").read_text() == broken


@pytest.mark.parametrize(
    "frontmatter",
    ["title: Odd\nupdated: &u 2020-01-01\nlast_seen: *u", 'title: Odd\n"updated": 2020-01-01'],
)
async def test_frontmatter_not_editable_line_by_line_is_never_rewritten(
    store: MakeStore, vault: Path, frontmatter: str
) -> None:
    text = f"---\n{frontmatter}\n---\nbody\n"
    (vault / "Odd.md").write_text(text)
    p = store(root=vault)
    with pytest.raises(Conflict, match="note not edited"):
        await p.remember(MemoryWrite(text="more", title="Odd"))
    with pytest.raises(Conflict, match="note not edited"):
        await p.feedback(MemoryWrite(kind="feedback", text="more", on="Odd"))
    assert (vault / "Odd.md").read_text() == text


async def test_non_finite_frontmatter_floats_reach_json_as_text(
    store: MakeStore, vault: Path
) -> None:
    import json

    (vault / "Inf.md").write_text("---\nm: -.inf\nn: .nan\n---\nbody\n")
    page = await store(root=vault).get_page("Inf")
    assert (page.frontmatter["m"], page.frontmatter["n"]) == ("-.inf", ".nan")
    json.dumps(page.model_dump(mode="json"), allow_nan=False)  # strict JSON on every surface


def test_goat_show_json_of_non_finite_floats_is_strict_json(tmp_path: Path, vault: Path) -> None:
    import json

    from click.testing import CliRunner

    from goat_core.cli import cli

    (vault / "Inf.md").write_text("---\nm: -.inf\nn: .nan\n---\nbody\n")
    home = str(tmp_path / "cli-home")
    runner = CliRunner()
    bound = runner.invoke(
        cli, ["bind", "--pen", "inf", "markdown", "--set", f"root={vault}", "--home", home]
    )
    assert bound.exit_code == 0, bound.output
    shown = runner.invoke(cli, ["show", "Inf", "--pen", "inf", "--json", "--home", home])
    assert shown.exit_code == 0, shown.output

    def refuse(constant: str) -> None:
        raise AssertionError(f"not JSON: {constant}")

    data = json.loads(shown.stdout, parse_constant=refuse)
    assert (data["frontmatter"]["m"], data["frontmatter"]["n"]) == ("-.inf", ".nan")


async def test_frontmatter_dates_are_recalled_in_words(store: MakeStore, vault: Path) -> None:
    (vault / "Spring.md").write_text("---\ncreated: 2023-03-27T13:10:00\n---\nzqdated walk\n")
    (vault / "Summer.md").write_text("---\ndate: 2022-07-09\n---\nzqdated swim\n")
    (vault / "Edited.md").write_text("---\nupdated: 2023-03-28\n---\nzqdated edit\n")
    p = store(root=vault)
    march = await p.recall("zqdated March 2023")
    assert march.items[0].path == "Spring.md"
    assert (await p.recall("what happened in March 2023")).items[0].path == "Spring.md"
    assert [i.path for i in (await p.recall("9 July 2022")).items] == ["Summer.md"]
    assert [i.path for i in (await p.recall("2022-07-09")).items] == ["Summer.md"]
    # ``updated`` is when a file was edited, not what it remembers: never searched
    assert [i.path for i in (await p.recall("28")).items] == []
    now = datetime.now(UTC)
    r = await p.remember(MemoryWrite(text="zqtoday standup notes", title="Standup"))
    month = f"{now.strftime('%B')} {now.year}"  # a month name in English
    got = await p.recall(f"standup {month}")
    assert [i.path for i in got.items] == [r.path]


# -- feedback and forget ---------------------------------------------------------------------------


async def test_feedback_on_page_and_new(store: MakeStore, vault: Path) -> None:
    p = store(root=vault)
    await p.remember(MemoryWrite(text="base", title="Topic"))
    r = await p.feedback(MemoryWrite(kind="feedback", text="helpful", on="topic"))
    assert r.path == "Topic.md"
    assert " UTC feedback\n\nhelpful\n" in (vault / "Topic.md").read_text()
    r2 = await p.feedback(MemoryWrite(kind="feedback", text="the recall missed zqfb"))
    assert parse_note((vault / r2.path).read_text()).data["kind"] == "feedback"
    with pytest.raises(NotFound):
        await p.feedback(MemoryWrite(kind="feedback", text="x", on="Nope"))


async def test_forget_removes_and_reports(store: MakeStore, vault: Path, tmp_path: Path) -> None:
    p = store(root=vault)
    await p.remember(MemoryWrite(text="zqforget me", title="Gone"))
    (vault / "real.md").write_text("zqtarget")
    (vault / "link.md").symlink_to(vault / "real.md")
    r = await p.forget("gone")
    assert r.removed == ("Gone.md",) and not (vault / "Gone.md").exists()
    assert (await p.recall("zqforget")).items == ()
    await p.forget("link.md")
    assert not (vault / "link.md").exists() and (vault / "real.md").read_text() == "zqtarget"
    with pytest.raises(NotFound):
        await p.forget("Gone")


# -- browse ----------------------------------------------------------------------------------------


async def test_list_pages_paginates_47(store: MakeStore, vault: Path) -> None:
    names = [f"{'N' if i % 2 else 'n'}ote {i:02d}.md" for i in range(47)]
    (vault / "sub").mkdir()
    for name in names[:40]:
        (vault / name).write_text(name)
    for name in names[40:]:
        (vault / "sub" / name).write_text(name)
    p = store(root=vault)
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        listing = await p.list_pages(limit=10, cursor=cursor)
        pages += 1
        seen += [i.path for i in listing.items]
        if listing.next_cursor is None:
            assert listing.complete
            break
        assert not listing.complete and len(listing.items) == 10
        cursor = listing.next_cursor
    assert pages == 5 and len(seen) == 47 == len(set(seen))
    assert seen == sorted(seen, key=str.casefold)
    with pytest.raises(BadInput, match="cursor"):
        await p.list_pages(cursor="!!not-base64!!")
    for bad in (0, 1001):
        with pytest.raises(BadInput):
            await p.list_pages(limit=bad)


async def test_get_page_resolution_order(store: MakeStore, vault: Path) -> None:
    (vault / "a").mkdir()
    (vault / "b").mkdir()
    (vault / "a" / "Same.md").write_text("---\nid: abc123\n---\none")
    (vault / "b" / "Same.md").write_text("two")
    (vault / "Titled.md").write_text("---\ntitle: Fancy Title\n---\nthree")
    p = store(root=vault)
    assert (await p.get_page("a/Same.md")).body == "one"
    assert (await p.get_page("b/Same")).body == "two"
    assert (await p.get_page("abc123")).path == "a/Same.md"
    assert (await p.get_page("fancy title")).path == "Titled.md"
    assert (await p.get_page("titled")).path == "Titled.md"
    with pytest.raises(Ambiguous) as info:
        await p.get_page("same")
    assert info.value.candidates == ["a/Same.md", "b/Same.md"]
    with pytest.raises(NotFound):
        await p.get_page("nothing here")


async def test_recall_follows_external_edits(store: MakeStore, vault: Path) -> None:
    p = store(root=vault)
    (vault / "n.md").write_text("zqalpha")
    assert [i.path for i in (await p.recall("zqalpha")).items] == ["n.md"]
    (vault / "n.md").write_text("zqbeta and more")
    assert (await p.recall("zqalpha")).items == ()
    assert [i.path for i in (await p.recall("zqbeta")).items] == ["n.md"]
    # the second call started the file watcher: from here on a change reaches the index when
    # watchdog delivers its event, which a loaded machine may do after the next call's 50 ms
    # settle window (and watchdog may hold a rename's first half for 0.5 s), so poll
    (vault / "n.md").rename(vault / "m.md")
    await eventually(lambda: sees(p, "zqbeta", ["m.md"]))
    for i in range(3):
        (vault / f"x{i}.md").write_text("zqmany")

    async def two_of_three() -> bool:
        r = await p.recall("zqmany", limit=2)
        return len(r.items) == 2 and not r.complete

    await eventually(two_of_three)
    with pytest.raises(BadInput):
        await p.recall("x", limit=0)


async def test_recall_item_shape(store: MakeStore, vault: Path) -> None:
    p = store(root=vault)
    await p.remember(
        MemoryWrite(text="The backup runs nightly at zqtwo", title="Backups", source="cli")
    )
    item = (await p.recall("backup nightly")).items[0]
    assert (item.id, item.title, item.path, item.source) == (
        "Backups.md",
        "Backups",
        "Backups.md",
        "cli",
    )
    assert item.score > 0 and "nightly" in item.snippet
    assert item.text == "The backup runs nightly at zqtwo"


async def test_map_and_connections(store: MakeStore, vault: Path) -> None:
    (vault / "A.md").write_text("see [[B]] and [[Missing]] and ![[pic.png]]\n`[[NotALink]]`")
    (vault / "B.md").write_text("back to [A](A.md)")
    (vault / "pic.png").write_bytes(b"\x89PNG")
    p = store(root=vault)
    m = await p.link_map()
    assert [n.id for n in m.nodes] == ["A.md", "B.md"]
    got = {(e.source, e.target, e.resolution.value) for e in m.edges}
    assert got == {
        ("A.md", "B.md", "name"),
        ("A.md", None, "missing"),
        ("A.md", "pic.png", "attachment"),
        ("B.md", "A.md", "exact"),
    } or got == {
        ("A.md", "B.md", "name"),
        ("A.md", None, "missing"),
        ("A.md", "pic.png", "attachment"),
        ("B.md", "A.md", "name"),
    }
    c = await p.connections("B")
    assert [e.source for e in c.backlinks] == ["A.md"]
    assert [link.target for link in c.outgoing] == ["A.md"]


async def test_check_and_reindex(store: MakeStore, vault: Path) -> None:
    (vault / "a.md").write_text("x")
    (vault / "b.md").write_text("y")
    p = store(root=vault)
    assert (await p.check()).ok
    counts = await p.reindex()
    assert counts["added"] == 2 and counts["notes"] == 2
    calls: list[tuple[int, int]] = []
    (vault / "c.md").write_text("z")
    assert (await p.reindex(lambda d, t: calls.append((d, t))))["added"] == 1
    assert calls[-1] == (1, 1)
    assert not any(p.name.endswith(".sqlite") for p in vault.iterdir())


# -- cost proportional to what changed -------------------------------------------------------------


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Paths of every note read and parsed by any markdown provider during the test."""
    seen: list[str] = []
    lock = threading.Lock()
    original = MarkdownProvider._load

    def counting(self: MarkdownProvider, rel: str, *args: Any) -> Any:
        with lock:
            seen.append(rel)
        return original(self, rel, *args)

    monkeypatch.setattr(MarkdownProvider, "_load", counting)
    return seen


async def test_fresh_instance_reads_only_changed_and_returned_notes(
    store: MakeStore, vault: Path, loads: list[str]
) -> None:
    n = 60
    for i in range(n):
        extra = " zqunique" if i == 7 else ""
        (vault / f"Note {i:02d}.md").write_text(f"---\ntitle: Note {i:02d}\n---\nzqcommon{extra}\n")
    (vault / "Broken.md").write_text("---\ntitle: [unclosed\n---\nzqcommon\n")
    first = store(root=vault)
    assert len((await first.recall("zqunique")).items) == 1
    assert len(loads) == n + 2  # the first index reads all n + 1 notes once, then the hit
    await first.close()

    loads.clear()
    (vault / "Note 30.md").write_text("---\ntitle: Note 30\n---\nzqcommon edited zqunique\n")
    p = store(root=vault)  # a new process: same GOAT home, empty memory
    result = await p.recall("zqunique", limit=5)
    assert {i.path for i in result.items} == {"Note 07.md", "Note 30.md"}
    # the edited note is parsed once for the index, then each hit once for its text
    assert sorted(loads) == ["Note 07.md", "Note 30.md", "Note 30.md"]
    assert any(d.startswith("Broken.md: frontmatter does not parse") for d in result.degraded)

    loads.clear()
    r = await p.recall("zqcommon", limit=3)
    assert len(r.items) == 3 and not r.complete
    assert sorted(loads) == sorted(i.path for i in r.items)  # nothing changed: only the hits

    loads.clear()
    listing = await p.list_pages(limit=4)
    assert [i.path for i in listing.items] == [
        "Broken.md",
        "Note 00.md",
        "Note 01.md",
        "Note 02.md",
    ]
    assert listing.items[1].title == "Note 00"
    assert any(d.startswith("Broken.md: frontmatter does not parse") for d in listing.degraded)
    assert sorted(loads) == sorted(i.path for i in listing.items)

    loads.clear()
    assert (await p.get_page("note 45")).path == "Note 45.md"
    assert loads == ["Note 45.md"]

    loads.clear()
    await p.remember(MemoryWrite(text="appended", title="Note 12"))
    assert set(loads) == {"Note 12.md"}  # re-read under the lock, then re-indexed
    assert "appended" in (vault / "Note 12.md").read_text()
    with pytest.raises(Conflict, match="never rewritten"):
        await p.remember(MemoryWrite(text="more", title="Broken"))

    loads.clear()
    assert (await p.forget("Note 59")).removed == ("Note 59.md",)
    assert loads == []


async def test_recall_parses_a_returned_note_again_only_when_it_changed(
    store: MakeStore, vault: Path, loads: list[str]
) -> None:
    """A hit's text comes from the note as it is now: kept parsed between recalls, read again
    when its (mtime_ns, size) changed, after the store's own write, and gone when deleted."""
    (vault / "a.md").write_text("zqkept first text")
    (vault / "b.md").write_text("zqkept other")
    p = store(root=vault)
    assert {i.path: i.text for i in (await p.recall("zqkept")).items} == {
        "a.md": "zqkept first text",
        "b.md": "zqkept other",
    }
    loads.clear()
    assert len((await p.recall("zqkept")).items) == 2
    assert loads == []  # nothing changed: no note read or parsed again
    (vault / "a.md").write_text("zqkept second, longer text")  # an external edit
    os.utime(vault / "a.md", ns=(1, 1))  # a new mtime for certain

    async def edited() -> bool:
        items = (await p.recall("zqkept")).items
        return {i.path: i.text for i in items}["a.md"] == "zqkept second, longer text"

    await eventually(edited)
    loads.clear()
    await p.remember(MemoryWrite(text="zqkept appended", title="b"))
    text = {i.path: i.text for i in (await p.recall("zqkept")).items}["b.md"]
    assert text is not None and text.startswith("zqkept other") and "zqkept appended" in text
    (vault / "b.md").unlink()
    await eventually(lambda: sees(p, "zqkept", ["a.md"]))


# -- file watching in a long-lived host ------------------------------------------------------------


@pytest.fixture
def full_scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Roots of every full change scan (``walk_notes`` of a store root) a provider ran."""
    import goat_markdown.provider as module

    roots: list[str] = []
    original = module.walk_notes

    def counting(root: Any, **kwargs: Any) -> Any:
        roots.append(str(root))
        return original(root, **kwargs)

    monkeypatch.setattr(module, "walk_notes", counting)
    return roots


async def eventually(check: Callable[[], Awaitable[bool]], timeout_s: float = 10.0) -> None:
    """Poll ``await check()`` until it is true (file events arrive on the watcher's thread)."""
    import time

    deadline = time.monotonic() + timeout_s
    while not await check():
        assert time.monotonic() < deadline, "the watched store never saw the change"
        await anyio.sleep(0.02)


async def paths(p: Any, query: str) -> list[str]:
    return sorted(i.path for i in (await p.recall(query)).items)


async def sees(p: Any, query: str, want: list[str]) -> bool:
    return await paths(p, query) == want


async def test_one_call_never_starts_a_watcher(store: MakeStore, vault: Path) -> None:
    (vault / "a.md").write_text("zqonce")
    p = store(root=vault)
    assert await paths(p, "zqonce") == ["a.md"]
    assert p._watch is None  # a one-shot command makes one call


async def test_reindex_never_starts_a_watcher(store: MakeStore, vault: Path) -> None:
    """An explicit reindex always scans in full, so it never starts the watcher; a later
    read of the same object does."""
    (vault / "a.md").write_text("zqre")
    p = store(root=vault)
    await p.reindex()
    await p.reindex()
    assert p._watch is None
    assert await paths(p, "zqre") == ["a.md"]
    assert p._watch is not None


async def test_watched_store_follows_external_changes_without_full_scans(
    store: MakeStore, vault: Path, full_scans: list[str]
) -> None:
    (vault / "a.md").write_text("zqalpha")
    (vault / "Folder").mkdir()
    (vault / "Folder" / "Deep").mkdir()
    (vault / "Folder" / "Deep" / "b.md").write_text("zqbravo")
    (vault / "Folder" / "c.md").write_text("zqcharlie")
    p = store(root=vault)
    assert await paths(p, "zqalpha") == ["a.md"]
    assert await paths(p, "zqbravo") == ["Folder/Deep/b.md"]  # second read: the watcher starts
    assert p._watch is not None and p._watch.alive()
    full = len(full_scans)
    assert full == 2

    (vault / "a.md").write_text("zqalpha edited zqecho")  # external edit
    await eventually(lambda: sees(p, "zqecho", ["a.md"]))
    (vault / "new.md").write_text("zqfoxtrot")  # create
    await eventually(lambda: sees(p, "zqfoxtrot", ["new.md"]))
    (vault / "new.md").unlink()  # delete
    await eventually(lambda: sees(p, "zqfoxtrot", []))
    (vault / "a.md").rename(vault / "renamed.md")  # rename
    await eventually(lambda: sees(p, "zqecho", ["renamed.md"]))
    (vault / "Folder").rename(vault / "Moved")  # folder rename: both sides re-walked
    await eventually(lambda: sees(p, "zqbravo", ["Moved/Deep/b.md"]))
    assert await paths(p, "zqcharlie") == ["Moved/c.md"]
    (vault / ".obsidian").mkdir()  # a dot-folder is not part of the vault
    (vault / ".obsidian" / "w.md").write_text("zqhidden")
    (vault / "Moved" / "Deep" / "d.md").write_text("zqdelta")
    await eventually(lambda: sees(p, "zqdelta", ["Moved/Deep/d.md"]))
    assert await paths(p, "zqhidden") == []
    root_scans = [r for r in full_scans[full:] if Path(r) == p.root]
    assert root_scans == []  # every change above came from the watcher alone
    assert (await p.get_page("renamed")).path == "renamed.md"
    # a page list still walks the folder: the watched index agrees with it
    assert [i.path for i in (await p.list_pages()).items] == [
        "Moved/c.md",
        "Moved/Deep/b.md",
        "Moved/Deep/d.md",
        "renamed.md",
    ]

    await p.close()
    assert p._watch is None  # close() stops the observer


async def test_own_writes_and_forget_stay_in_line_while_watched(
    store: MakeStore, vault: Path, full_scans: list[str]
) -> None:
    (vault / "a.md").write_text("zqalpha")
    p = store(root=vault)
    await p.recall("zqalpha")
    await p.recall("zqalpha")
    await p.remember(MemoryWrite(text="zqgolf remembered", title="Golf"))
    assert await paths(p, "zqgolf") == ["Golf.md"]
    await p.forget("Golf")
    assert await paths(p, "zqgolf") == []
    assert await paths(p, "zqalpha") == ["a.md"]


async def test_a_replaced_or_removed_root_is_never_answered_from_the_old_watch(
    store: MakeStore, vault: Path
) -> None:
    """The exact inputs, with a long-lived provider watching ``vault``: ``mv vault gone;
    mkdir vault`` plus a new note, then ``rm -r vault``. inotify follows the folder that
    moved, so the watch of the old one must never answer for the new one."""
    import shutil

    from goat_core.errors import PathError

    (vault / "old.md").write_text("zqroot old")
    p = store(root=vault)
    for _ in range(3):  # the second call starts the watcher
        assert await paths(p, "zqroot") == ["old.md"]
    assert p._watch is not None
    vault.rename(vault.with_name("gone"))
    vault.mkdir()
    (vault / "new.md").write_text("zqroot new")
    assert await paths(p, "zqroot") == ["new.md"]
    assert p._watch is not None and p._watch.alive()  # watching the folder there now
    (vault / "later.md").write_text("zqroot later")
    await eventually(lambda: sees(p, "zqroot", ["later.md", "new.md"]))
    shutil.rmtree(vault)
    with pytest.raises(PathError, match="is not an existing directory"):
        await p.recall("zqroot")


async def test_a_note_or_folder_moved_out_is_gone_at_the_next_recall(
    store: MakeStore, vault: Path, tmp_path: Path, full_scans: list[str]
) -> None:
    """The exact inputs: ``mv vault/q2.md outside/`` and ``mv vault/Sub outside/``, each
    right before a recall. watchdog holds a rename's first half up to 0.5 s for its other
    half; the recall right after must not list what left the store."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (vault / "q1.md").write_text("zqmove one")
    (vault / "q2.md").write_text("zqmove two")
    (vault / "Sub").mkdir()
    (vault / "Sub" / "q3.md").write_text("zqmove three")
    p = store(root=vault)
    for _ in range(3):  # the second call starts the watcher
        assert await paths(p, "zqmove") == ["Sub/q3.md", "q1.md", "q2.md"]
    assert p._watch is not None
    before = len(full_scans)
    (vault / "q2.md").rename(outside / "q2.md")
    assert await paths(p, "zqmove") == ["Sub/q3.md", "q1.md"]
    (vault / "Sub").rename(outside / "Sub")
    assert await paths(p, "zqmove") == ["q1.md"]
    assert len(full_scans) == before  # the watcher's paths alone


async def test_watch_falls_back_to_full_scans(
    store: MakeStore, vault: Path, full_scans: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import logging

    import goat_markdown.provider as module

    (vault / "a.md").write_text("zqalpha")
    p = store(root=vault)
    await p.recall("zqalpha")
    await p.recall("zqalpha")
    assert p._watch is not None
    before = len(full_scans)
    # watchdog warns that events were lost (an inotify queue overflow): one full scan
    logging.getLogger("watchdog.observers.inotify_c").warning(
        "Inotify queue overflowed; filesystem events were lost"
    )
    assert await paths(p, "zqalpha") == ["a.md"]
    assert len(full_scans) == before + 1
    assert await paths(p, "zqalpha") == ["a.md"]
    assert len(full_scans) == before + 1  # trusted again afterwards

    # a safety interval with no full scan: the next read scans the folder again
    monkeypatch.setattr(module, "WATCH_RESCAN_S", 0.0)
    await paths(p, "zqalpha")
    assert len(full_scans) == before + 2
    monkeypatch.setattr(module, "WATCH_RESCAN_S", 300.0)

    # a symlinked folder inside the store: events would name the target, never the link,
    # so every read scans the whole store again
    # (a link to a listed folder is an alias, left out; one to a hidden folder is followed);
    # wait until the watcher's event for the link has arrived and a full scan has seen it
    (vault / ".Real").mkdir()
    (vault / ".Real" / "r.md").write_text("zqromeo")
    (vault / "Link").symlink_to(vault / ".Real", target_is_directory=True)

    async def linked() -> bool:
        return await paths(p, "zqromeo") == ["Link/r.md"] and p._known is None

    await eventually(linked)
    n = len(full_scans)
    (vault / ".Real" / "r.md").write_text("zqsierra")
    assert await paths(p, "zqsierra") == ["Link/r.md"]
    assert len(full_scans) == n + 1


async def test_settle_checks_twice_and_sleeps_only_between_checks(
    store: MakeStore, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    import goat_markdown.provider as module

    (vault / "a.md").write_text("zqalpha")
    p = store(root=vault)
    for _ in range(3):  # the second call starts the watcher
        assert await paths(p, "zqalpha") == ["a.md"]
    watch = p._watch
    assert watch is not None
    steps: list[str] = []

    class Clock:
        monotonic = staticmethod(time.monotonic)

        @staticmethod
        def sleep(seconds: float) -> None:
            steps.append(f"sleep {seconds}")

    unfinished = iter([1, 0, 0, 0])

    class Queue:
        @property
        def unfinished_tasks(self) -> int:
            steps.append("check")
            return next(unfinished)

    class Observer:
        event_queue = Queue()

    monkeypatch.setattr(module, "time", Clock)
    monkeypatch.setattr(watch, "_observer", Observer())
    monkeypatch.setattr(watch, "_fds", ())  # the queue alone decides here
    watch.settle()
    # busy, then quiet twice in a row: a sleep between checks, none after the last
    assert steps == ["check", "sleep 0.0002", "check", "sleep 0.0002", "check"]
    steps.clear()
    unfinished = iter([0, 0])
    watch.settle()
    assert steps == ["check", "sleep 0.0002", "check"]


async def test_watcher_that_cannot_start_leaves_full_scans(
    store: MakeStore, vault: Path, full_scans: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import goat_markdown.provider as module

    def refuse(self: Any) -> None:
        raise OSError(28, "inotify watch limit reached")

    monkeypatch.setattr(module._Watch, "start", refuse)
    (vault / "a.md").write_text("zqalpha")
    p = store(root=vault)
    for _ in range(3):
        assert await paths(p, "zqalpha") == ["a.md"]
    (vault / "a.md").write_text("zqbeta")
    assert await paths(p, "zqbeta") == ["a.md"]  # the change scan sees it at once
    assert p._watch is None
    assert len(full_scans) == 4


async def test_repeating_forget_does_not_remove_a_same_named_page(
    store: MakeStore, vault: Path
) -> None:
    (vault / "Plan.md").write_text("top plan\n")
    (vault / "b").mkdir()
    (vault / "b" / "Plan.md").write_text("b plan\n")
    p = store(root=vault)
    assert (await p.forget("Plan.md")).removed == ("Plan.md",)
    with pytest.raises(NotFound):
        await p.forget("Plan.md")
    assert (vault / "b" / "Plan.md").exists()
