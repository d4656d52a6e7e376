"""The wiki's journal under faults (docs/design.md, Writes and outcomes: a write that did not
land is never recorded; An unwritable store): a failed write leaves no log entry, a read-only
wiki folder is ``StoreUnwritable`` (exit 6) naming the path with nothing written, a journal
that cannot be applied never makes a read fail, and a killed import is recovered to what
landed (log, index and source manifest) and finished by the next import. Read-only folders
are made with the suite's fault injector (``goat_core.testing.conformance.faults``) and, as
root, with a real read-only bind mount."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from wiki_helpers import MakeWiki, write_tree

from goat_core.cli import cli
from goat_core.contract import MemoryWrite
from goat_core.errors import StoreUnwritable
from goat_core.filestore import current_etag, etag
from goat_core.testing.conformance.faults import Fault, filesystem_fault
from goat_wiki.provider import PageWrite, WikiProvider
from goat_wiki.sources import MANIFEST_NAME, Manifest

pytestmark = pytest.mark.anyio


@pytest.fixture
def goat_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "goat-home"
    monkeypatch.setenv("GOAT_HOME", str(path))
    monkeypatch.delenv("GOAT_LOAD_PLUGINS", raising=False)
    monkeypatch.delenv("GOAT_DISABLE_PLUGINS", raising=False)
    return path


def goat(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def log_headings(root: Path) -> list[str]:
    text = (root / "log.md").read_text("utf-8")
    return [ln.split("] ", 1)[1] for ln in text.splitlines() if ln.startswith("## [")]


def files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


# -- the log records only writes that landed ---------------------------------------------
def test_a_title_mapping_to_an_existing_file_name_is_a_conflict_and_never_logged(
    goat_home: Path,
) -> None:
    """``Alpha?`` maps to ``Alpha.md`` (``?`` cannot stand in a file name), page ``Alpha``'s
    file: exit 5 saying so, and neither that call nor the next read logs a write."""
    assert goat("bind", "--pen", "w2", "wiki").exit_code == 0
    assert goat("wiki", "write", "Alpha", "--file", "-", "--pen", "w2", input="a\n").exit_code == 0
    clash = goat("wiki", "write", "Alpha?", "--file", "-", "--pen", "w2", input="b\n")
    assert clash.exit_code == 5
    assert (
        "title 'Alpha?' maps to the file name 'syntheses/Alpha.md', which is the existing page "
        "'syntheses/Alpha.md' (title 'Alpha')" in clash.stderr
    )
    assert "created since it was read" not in clash.stderr
    assert goat("pages", "--pen", "w2").exit_code == 0
    root = goat_home / "data" / "stores" / "pens" / "w2"
    assert log_headings(root) == ["write | Alpha"]
    assert (root / "syntheses" / "Alpha.md").read_text("utf-8").endswith("\na\n")
    remembered = goat("remember", "b", "--title", "Alpha?", "--pen", "w2")
    assert remembered.exit_code == 5
    assert "title 'Alpha?' maps to the file name 'syntheses/Alpha.md'" in remembered.stderr
    assert log_headings(root) == ["write | Alpha"]


async def test_a_journal_left_with_nothing_landed_logs_nothing(wiki: MakeWiki) -> None:
    """A journal as a failed page write left it (``expect`` empty, the page never written):
    the next read completes it without a log entry and removes it."""
    w = wiki()
    await w.write_page(PageWrite("Seed", "seed page", folder="concepts"))
    root = w.root
    journal = w._journal_path
    await w.close()
    journal.write_text(
        json.dumps(
            {
                "op": "write",
                "title": "Alpha?",
                "pages": ["concepts/Alpha-.md"],
                "details": ["- page: concepts/Alpha-.md"],
                "date": "2026-01-01",
                "log_before": current_etag(root / "log.md"),
                "expect": {},
            }
        ),
        "utf-8",
    )
    fresh = wiki(root=root)
    assert [p.id for p in (await fresh.list_pages()).items] == ["concepts/Seed.md"]
    assert log_headings(root) == ["write | Seed"]
    assert not journal.exists()


async def test_a_page_write_whose_file_fails_is_not_logged(wiki: MakeWiki) -> None:
    """The page's own write fails (the wiki folder turned read-only after the schema, index
    and log exist): ``StoreUnwritable`` naming the path, no page, no log entry, no journal
    left, and the next read logs nothing either."""
    w = wiki()
    await w.write_page(PageWrite("Seed", "seed page", folder="concepts"))
    root = w.root
    before = files(root)
    for attempt in (
        lambda: w.write_page(PageWrite("Beta", "beta page", folder="concepts")),
        lambda: w.remember(MemoryWrite(text="hello", source="cli")),
        lambda: w.remember(MemoryWrite(text="more", title="Seed", source="cli")),
        lambda: w.forget("Seed"),
    ):
        with filesystem_fault(root, Fault.READ_ONLY), pytest.raises(StoreUnwritable) as raised:
            await attempt()
        assert f"cannot write the store at {root}/" in str(raised.value)
        assert "it is read-only" in str(raised.value)
        assert not w._journal_path.exists()
    assert [p.id for p in (await w.list_pages()).items] == ["concepts/Seed.md"]
    assert files(root) == before
    assert log_headings(root) == ["write | Seed"]


def test_a_page_write_whose_index_update_finds_the_disk_full_is_rolled_back(
    goat_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page file lands, then the disk is full for the index line: exit 6 "nothing was
    stored" is true (the page file is removed again, no log entry, no journal pending);
    once there is room the same write stores the page and logs it once."""
    assert goat("bind", "--pen", "f", "wiki").exit_code == 0
    root = goat_home / "data" / "stores" / "pens" / "f"
    (tmp_path / "s1.txt").write_text("source one\n", "utf-8")
    assert goat("wiki", "ingest", str(tmp_path / "s1.txt"), "--pen", "f").exit_code == 0
    small = tmp_path / "small.md"
    small.write_text("x" * 2999 + "\n", "utf-8")
    real = WikiProvider._update_index

    def full_disk(self: WikiProvider, *args: Any) -> None:
        with filesystem_fault(root, Fault.DISK_FULL):
            real(self, *args)

    args = ("wiki", "write", "Small", "--file", str(small), "--source", "s1.txt", "--pen", "f")
    with monkeypatch.context() as patch:
        patch.setattr(WikiProvider, "_update_index", full_disk)
        failed = goat(*args)
    assert failed.exit_code == 6, failed.output
    assert f"cannot write the store at {root}: the disk is full" in failed.stderr
    assert "nothing was stored" in failed.stderr
    assert not (root / "syntheses" / "Small.md").exists()
    pages = goat("pages", "--pen", "f", "--json")
    assert pages.exit_code == 0, pages.output
    listed = json.loads(pages.stdout)
    assert "syntheses/Small.md" not in [i["id"] for i in listed["items"]]
    assert listed["degraded"] == []
    assert log_headings(root) == ["ingest | s1.txt"]
    stored = goat(*args)
    assert stored.exit_code == 0, stored.output
    assert (root / "syntheses" / "Small.md").read_text("utf-8").endswith("x" * 2999 + "\n")
    assert log_headings(root) == ["ingest | s1.txt", "write | Small"]


def test_lint_fix_with_one_read_only_folder_says_which_fixes_landed(
    goat_home: Path, tmp_path: Path
) -> None:
    """Bare-link fixes pending in ``notes/Plans.md`` and ``other/Vis2.md``, ``other/``
    read-only: exit 6 naming the fix that landed (and was logged) and the one not written;
    never "nothing was stored"."""
    page = "---\nsources: []\n---\n"  # a wiki page (its frontmatter has sources)
    vault = write_tree(
        tmp_path / "vault",
        {"notes/Plans.md": f"{page}See [[Vis2]].\n", "other/Vis2.md": f"{page}See [[Plans]].\n"},
    )
    assert goat("bind", "--pen", "lf", "wiki", "--set", f"root={vault}").exit_code == 0
    assert goat("remember", "seed", "--title", "Seed", "--pen", "lf").exit_code == 0
    with filesystem_fault(vault / "other", Fault.READ_ONLY):
        result = goat("wiki", "lint", "--fix", "--pen", "lf")
    assert result.exit_code == 6, result.output
    assert result.stderr.startswith(f"goat: error: cannot write the store at {vault}/other: it is")
    assert (
        "fixed and logged: notes/Plans.md; not fixed (nothing written): other/Vis2.md"
        in result.stderr
    )
    assert "nothing was stored" not in result.stderr
    assert (vault / "notes/Plans.md").read_text("utf-8") == f"{page}See [[other/Vis2|Vis2]].\n"
    assert (vault / "other/Vis2.md").read_text("utf-8") == f"{page}See [[Plans]].\n"
    assert log_headings(vault) == ["remember | Seed", "fix | Plans"]
    again = goat("wiki", "lint", "--fix", "--pen", "lf")
    assert (vault / "other/Vis2.md").read_text("utf-8") == f"{page}See [[notes/Plans|Plans]].\n"
    assert log_headings(vault)[:3] == ["remember | Seed", "fix | Plans", "fix | Vis2"], again


# -- a read-only wiki folder -------------------------------------------------------------
def test_wiki_write_ingest_and_lint_fix_on_a_read_only_folder_exit_6_writing_nothing(
    goat_home: Path, tmp_path: Path
) -> None:
    vault = write_tree(
        tmp_path / "vault",
        {"Notes/Plan.md": "The plan.\n", "Notes/Goal.md": "The goal.\n"},
    )
    docs = write_tree(tmp_path / "docs", {"a.md": "a source\n"})
    assert goat("bind", "--pen", "ro", "wiki", "--set", f"root={vault}").exit_code == 0
    assert goat("remember", "seed", "--title", "Seed", "--pen", "ro").exit_code == 0
    write_tree(vault, {"Notes/By hand.md": "Added by hand.\n"})  # index drift: --fix rebuilds
    before = files(vault)
    with filesystem_fault(vault, Fault.READ_ONLY):
        for args in (
            ("wiki", "write", "Beta", "--file", "-", "--pen", "ro"),
            ("wiki", "ingest", str(docs), "--pen", "ro"),
            ("wiki", "lint", "--fix", "--pen", "ro"),
            ("remember", "hello", "--pen", "ro"),
            ("import", str(docs), "--pen", "ro"),
        ):
            result = goat(*args, input="beta\n")
            assert result.exit_code == 6, (args, result.output)
            assert f"cannot write the store at {vault}" in result.stderr, args
            assert "it is read-only" in result.stderr, args
            assert "unexpected" not in result.stderr
            assert ".goat-tmp" not in result.stderr or args[0] in {"remember", "import"}
            listed = goat("pages", "--pen", "ro", "--json")
            assert listed.exit_code == 0, (args, listed.output)
            assert json.loads(listed.stdout)["degraded"] == []
            assert goat("recall", "plan", "--pen", "ro").exit_code == 0
    assert files(vault) == before
    assert log_headings(vault) == ["remember | Seed"]
    goat("wiki", "lint", "--fix", "--pen", "ro")  # writable again: the fix runs
    assert "[[Notes/By hand|By hand]]" in (vault / "index.md").read_text("utf-8")
    assert log_headings(vault) == ["remember | Seed", "lint | rebuild index"]


async def test_a_journal_that_cannot_be_applied_never_fails_a_read(wiki: MakeWiki) -> None:
    """A crash after the page landed left the journal; then the wiki folder turned
    read-only: pages and recall answer, degraded with the reason; a write is
    ``StoreUnwritable``; once writable, the next write applies the journal first."""
    w = wiki()
    await w.write_page(PageWrite("Seed", "seed page", folder="concepts"))
    root = w.root
    journal = w._journal_path
    await w.close()
    # what a kill right after the page landed leaves: the page and the journal expecting it
    page = b"---\ntitle: Landed\nsources: []\n---\nthe page landed\n"
    (root / "concepts/Landed.md").write_bytes(page)
    journal.write_text(
        json.dumps(
            {
                "op": "write",
                "title": "Landed",
                "pages": ["concepts/Landed.md"],
                "details": ["- page: concepts/Landed.md"],
                "date": "2026-01-01",
                "log_before": current_etag(root / "log.md"),
                "planned": {"concepts/Landed.md": etag(page)},
                "expect": {"concepts/Landed.md": etag(page)},
            }
        ),
        "utf-8",
    )

    fresh = wiki(root=root)
    with filesystem_fault(root, Fault.READ_ONLY):
        listing = await fresh.list_pages()
        assert [p.id for p in listing.items] == ["concepts/Landed.md", "concepts/Seed.md"]
        (reason,) = listing.degraded
        assert reason.startswith(f"an interrupted write's journal ({journal}) could not be applied")
        assert "may be behind until a write can apply it" in reason
        recalled = await fresh.recall("landed")
        assert [i.id for i in recalled.items] == ["concepts/Landed.md"]
        assert reason in recalled.degraded
        assert (await fresh.get_page("Landed")).body.strip() == "the page landed"
        with pytest.raises(StoreUnwritable, match="it is read-only"):
            await fresh.remember(MemoryWrite(text="x", title="Other", source="cli"))
        assert journal.exists()
    assert log_headings(root) == ["write | Seed"]
    await fresh.remember(MemoryWrite(text="now writable", title="Other", source="cli"))
    assert not journal.exists()
    assert log_headings(root) == ["write | Seed", "write | Landed", "remember | Other"]
    assert (await fresh.list_pages()).degraded == ()


def test_check_warns_on_a_read_only_wiki_folder_mounted_read_only(
    goat_home: Path, tmp_path: Path
) -> None:
    """A real read-only bind mount of a populated wiki (root only, else skipped): ``goat
    check`` is ``ok (warn)`` naming the folder, a write exits 6, reads answer."""
    if os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root")
    vault = write_tree(tmp_path / "vault", {"Notes/Plan.md": "The plan.\n"})
    assert goat("bind", "--pen", "rw", "wiki", "--set", f"root={vault}").exit_code == 0
    assert goat("pages", "--pen", "rw").exit_code == 0
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", "--bind", str(vault), str(mnt)], check=False).returncode:
        pytest.skip("mount --bind is not permitted here")
    try:
        ro = subprocess.run(["mount", "-o", "remount,ro,bind", str(mnt)], check=False)
        if ro.returncode:
            pytest.skip("remounting read-only is not permitted here")
        assert goat("bind", "--pen", "ro", "wiki", "--set", f"root={mnt}").exit_code == 0
        checked = goat("check", "--pen", "ro")
        assert checked.exit_code == 0
        assert "ok (warn)" in checked.stdout
        assert f"wiki folder {mnt} is read-only" in checked.stdout
        written = goat("wiki", "write", "Beta", "--file", "-", "--pen", "ro", input="b\n")
        assert written.exit_code == 6
        assert f"cannot write the store at {mnt}" in written.stderr
        assert goat("pages", "--pen", "ro").exit_code == 0
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


# -- kill -9 during an import -----------------------------------------------------------
_CHILD = """
import os, sys, time
from pathlib import Path
from goat_core.contract import Scope
from goat_core.host import GoatHome, SyncMemoryHost

home, bundle, stop_at = sys.argv[1], sys.argv[2], int(sys.argv[3])
real_fsync, seen = os.fsync, []

def fsync_then_stop(fd):
    real_fsync(fd)
    try:
        name = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return
    if name.endswith(".goat-tmp") and "/wiki/pages/" in name:
        seen.append(name)
        if len(seen) == stop_at:  # the page's temp file is written, not yet renamed
            print("in-write", name, flush=True)
            time.sleep(60)

os.fsync = fsync_then_stop
with SyncMemoryHost(home=GoatHome.at(home)) as host:
    host.import_bundle(Path(bundle), Scope.pen("dst"))
"""


@pytest.fixture
def killed_import(goat_home: Path, tmp_path: Path) -> Iterator[tuple[Path, Path, list[str]]]:
    """60 pages imported into a wiki bound to an empty folder, ``kill -9`` inside the write
    of page 31 (its source stored, its temp file written, not renamed)."""
    pages = {f"pages/p{n:02}.md": f"---\nn: {n}\n---\nbody {n}\n" for n in range(60)}
    bundle = write_tree(tmp_path / "bundle", pages)
    root = tmp_path / "wiki"
    root.mkdir()
    assert goat("bind", "--pen", "dst", "wiki", "--set", f"root={root}").exit_code == 0
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(goat_home), str(bundle), "31"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "GOAT_STRICT_PLUGINS": "1"},
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.startswith("in-write"), (line, child.stderr.read() if child.stderr else "")
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=60)
    yield root, bundle, sorted(pages)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc (Linux)")
def test_a_killed_wiki_import_is_recovered_to_what_landed_and_finished_by_the_next(
    killed_import: tuple[Path, Path, list[str]],
) -> None:
    root, bundle, pages = killed_import
    landed = sorted(p.relative_to(root).as_posix() for p in (root / "pages").glob("*.md"))
    assert landed == pages[:30]

    listed = goat("pages", "--pen", "dst", "--json", "--limit", "100")  # the recovery runs
    assert listed.exit_code == 0
    assert [i["id"] for i in json.loads(listed.stdout)["items"]] == landed
    log_text = (root / "log.md").read_text("utf-8")
    assert re.findall(r"## \[[0-9-]+\] (.*)", log_text) == ["import | 30 pages from folder"]
    assert re.findall(r"- page: (.*)", log_text) == landed
    manifest = Manifest.load(root / "raw" / MANIFEST_NAME)
    stored = sorted(s.id for s in manifest.sources)
    # every page that landed cites a source the manifest holds; page 31's source, stored
    # before the kill, is removed with its page never written
    assert stored == [f"imports/{p}.txt" for p in pages[:30]]
    assert sorted(p.name for p in (root / "raw/imports/pages").iterdir()) == [
        f"{p[6:]}.txt" for p in pages[:30]
    ]
    from goat_wiki.text import parse_index

    assert sorted(parse_index((root / "index.md").read_text("utf-8"))) == landed
    lint = json.loads(goat("wiki", "lint", "--pen", "dst", "--json").stdout)["findings"]
    assert [f for f in lint if f["code"] in {"stale-page", "index-drift", "log-gap"}] == []

    again = goat("import", str(bundle), "--pen", "dst", "--json")
    assert again.exit_code == 0, again.output
    summary = json.loads(again.stdout)["summary"]
    assert (summary["duplicates"], summary["copied"], summary["conflicts"]) == (30, 30, 0)
    assert sorted(p.relative_to(root).as_posix() for p in (root / "pages").rglob("*")) == pages
    log_text = (root / "log.md").read_text("utf-8")
    assert re.findall(r"## \[[0-9-]+\] (.*)", log_text) == [
        "import | 30 pages from folder",
        "import | 30 pages from folder",
    ]
    assert re.findall(r"- page: (.*)", log_text) == pages
    manifest = Manifest.load(root / "raw" / MANIFEST_NAME)
    assert sorted(s.id for s in manifest.sources) == [f"imports/{p}.txt" for p in pages]
    lint = json.loads(goat("wiki", "lint", "--pen", "dst", "--json").stdout)["findings"]
    assert [f for f in lint if f["code"] in {"stale-page", "index-drift", "log-gap"}] == []


def test_lint_on_a_read_only_wiki_with_a_pending_journal_reports_no_bookkeeping_findings(
    killed_import: tuple[Path, Path, list[str]],
) -> None:
    """The killed import's journal cannot be applied (the wiki folder read-only): lint
    reports none of the index, log and source findings the journal will repair, and says
    in ``degraded`` that it is pending."""
    root, _bundle, _pages = killed_import
    with filesystem_fault(root, Fault.READ_ONLY):
        result = goat("wiki", "lint", "--pen", "dst", "--json")
        text = goat("wiki", "lint", "--pen", "dst")
    report = json.loads(result.stdout)
    codes = {f["code"] for f in report["findings"]}
    assert codes & {"stale-page", "index-drift", "log-gap"} == set(), report["findings"]
    (reason,) = report["degraded"]
    assert reason.startswith("an interrupted write's journal (")
    assert "could not be applied (Read-only file system: " in reason
    assert f"goat: warning: {reason}" in text.stderr
    assert (root / "log.md").read_text("utf-8").count("## [") == 0


# -- import --rename and the wiki's own files ------------------------------------------------
def test_import_rename_gives_a_page_named_like_the_wikis_own_files_the_next_free_name(
    goat_home: Path, tmp_path: Path
) -> None:
    """A bundle holding ``schema.md`` and ``wiki-log.md`` (the wiki's schema and its log's
    fallback name; a bundle's own ``index.md`` and ``log.md`` are its catalog, never pages):
    without ``--rename`` both are conflicts (exit 5, nothing written); with it they land as
    ``schema-2.md`` and ``wiki-log-2.md``, while ``raw/x.md`` stays a conflict (the raw
    folder holds only sources)."""
    bundle = write_tree(
        tmp_path / "bundle",
        {"schema.md": "my own schema\n", "wiki-log.md": "my own log\n", "notes/a.md": "a\n"},
    )
    assert goat("bind", "--pen", "w", "wiki").exit_code == 0
    assert goat("remember", "seed", "--title", "Seed", "--pen", "w").exit_code == 0
    root = goat_home / "data" / "stores" / "pens" / "w"
    refused = goat("import", str(bundle), "--pen", "w", "--json")
    assert refused.exit_code == 5
    outcomes = {i["source"]: i["outcome"] for i in json.loads(refused.stdout)["items"]}
    assert outcomes["schema.md"] == outcomes["wiki-log.md"] == "conflict"
    assert not (root / "notes").exists()
    renamed = goat("import", str(bundle), "--pen", "w", "--rename", "--json")
    assert renamed.exit_code == 0, renamed.output
    targets = {i["source"]: i["target"] for i in json.loads(renamed.stdout)["items"]}
    assert targets == {
        "notes/a.md": "notes/a.md",
        "schema.md": "schema-2.md",
        "wiki-log.md": "wiki-log-2.md",
    }
    assert "my own schema" in (root / "schema-2.md").read_text("utf-8")
    assert (root / "schema.md").read_text("utf-8").startswith("---\ngoat-wiki: schema\n")
    raw = write_tree(tmp_path / "raw-bundle", {"raw/x.md": "x\n"})
    still = goat("import", str(raw), "--pen", "w", "--rename", "--json")
    assert still.exit_code == 5
    (item,) = json.loads(still.stdout)["items"]
    assert (item["outcome"], item["target"]) == ("conflict", "raw/x.md")


# -- pages on a full GOAT home ---------------------------------------------------------------
async def test_pages_on_a_full_home_is_not_complete_while_the_index_is_behind(
    wiki: MakeWiki, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page added by hand while the GOAT home's disk is full: the listing names it, says
    the index is behind in ``degraded`` and is ``complete=False``, as markdown's is."""
    import sqlite3

    from goat_core.filestore.search import SearchIndex

    w = wiki()
    await w.write_page(PageWrite("Seed", "seed page", folder="concepts"))
    root = w.root
    await w.close()
    assert (await wiki(root=root).list_pages()).complete is True

    def full(self: SearchIndex) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(SearchIndex, "_open_writable", full)
    write_tree(root, {"concepts/By hand.md": "Added by hand.\n"})
    listing = await wiki(root=root).list_pages()
    assert [p.id for p in listing.items] == ["concepts/By hand.md", "concepts/Seed.md"]
    assert listing.degraded and "disk is full" in listing.degraded[0]
    assert listing.complete is False


async def test_a_forget_whose_page_vanished_meanwhile_is_not_logged(
    wiki: MakeWiki, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process removes ``concepts/Gone.md`` between the forget's lookup and its
    unlink: ``NotFound``, and the log records no forget (this write removed nothing)."""
    from goat_core.errors import NotFound

    w = wiki()
    await w.write_page(PageWrite("Gone", "to be removed", folder="concepts"))
    root = w.root
    real_unlink = os.unlink

    def raced(path: object, *args: object, **kwargs: object) -> None:
        if str(path).endswith("Gone.md"):
            real_unlink(path)  # the other process
        real_unlink(path)

    monkeypatch.setattr(os, "unlink", raced)
    with pytest.raises(NotFound, match="vanished meanwhile"):
        await w.forget("Gone")
    monkeypatch.undo()
    assert (await w.list_pages()).items == ()
    assert log_headings(root) == ["write | Gone"]
