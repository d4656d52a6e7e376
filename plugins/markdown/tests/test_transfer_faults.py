"""Faults under an import into a markdown store (docs/design.md, Copy, export and import;
Writes and outcomes): the store plans the whole batch under its lock, so a fault leaves
nothing partial, or, where the store cannot even undo (it turned read-only), the typed
error names exactly what stays; a killed import loses nothing and the next import finishes
it. Faults are armed with the suite's protocol (``goat_core.testing.conformance.faults``)."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from click.testing import CliRunner

from goat_core.cli import cli
from goat_core.contract import Scope, TransferOutcome
from goat_core.errors import GoatError, StoreUnwritable
from goat_core.filestore import parse_note
from goat_core.host import Chat, GoatHome, SyncMemoryHost
from goat_core.testing.conformance.faults import Fault, filesystem_fault

PAGES = {f"notes/page {n}.md": f"---\ntags: [n{n}]\n---\nPage number {n}.\n" for n in range(5)}


def _tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _bundle(folder: Path, pages: dict[str, str]) -> Path:
    for rel, text in pages.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def host(tmp_path: Path, root: Path) -> Iterator[SyncMemoryHost]:
    with SyncMemoryHost(home=GoatHome.at(tmp_path / "home")) as h:
        h.bind(Scope.pen("dst"), "markdown", {"root": str(root)})
        yield h


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "dst"
    folder.mkdir()
    (folder / "own.md").write_text("the store's own note\n", encoding="utf-8")
    return folder


def _after(n: int, root: Path, fault: Fault, stack: ExitStack):  # type: ignore[no-untyped-def]
    """A progress callback arming ``fault`` on ``root`` once ``n`` pages were written."""

    def progress(done: int, total: int) -> None:
        if done == n:
            stack.enter_context(filesystem_fault(root, fault))

    return progress


@pytest.mark.parametrize("fault", [Fault.DISK_FULL, Fault.READ_ONLY])
def test_goat_import_into_an_unwritable_store_writes_nothing(
    tmp_path: Path, host: SyncMemoryHost, root: Path, fault: Fault
) -> None:
    """The store is full (or read-only) from the start: ``goat import`` exits 6 with the
    typed error naming the store and what is wrong, and the folder is unchanged."""
    bundle = _bundle(tmp_path / "bundle", PAGES)
    before = _tree(root)
    with filesystem_fault(root, fault):
        result = CliRunner().invoke(
            cli, ["import", str(bundle), "--pen", "dst", "--home", str(tmp_path / "home")]
        )
    assert result.exit_code == 6, result.output
    what = "the disk is full" if fault is Fault.DISK_FULL else "it is read-only"
    assert what in result.output and "nothing was written" in result.output, result.output
    assert "Traceback" not in result.output
    assert _tree(root) == before


def test_a_write_failing_after_two_pages_leaves_nothing_partial(
    tmp_path: Path, host: SyncMemoryHost, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The third of five page writes fails (``EIO``) while the store stays writable: the two
    written are removed again (with the folder the batch made), the typed error says so,
    the listing shows none of them, and the import, run again, stores all five."""
    import goat_markdown.transfer as transfer

    bundle = _bundle(tmp_path / "bundle", PAGES)
    before = _tree(root)
    real, calls = transfer.atomic_write, []

    def failing(path: Path, data: bytes, **kw: object) -> str:
        calls.append(path)
        if len(calls) == 3:
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(path))
        return real(path, data, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(transfer, "atomic_write", failing)
    with pytest.raises(GoatError) as raised:
        host.import_bundle(bundle, Scope.pen("dst"))
    message = str(raised.value)
    assert raised.value.exit_code == 1 and not isinstance(raised.value, StoreUnwritable)
    assert "the import stopped at 'notes/page 2.md'" in message
    assert "the 2 page(s) written before it were removed: nothing was written" in message
    assert _tree(root) == before and not (root / "notes").exists()
    listing = host.context_for(Chat("dst")).list_pages()
    assert [i.path for i in listing.items] == ["own.md"] and listing.complete

    monkeypatch.setattr(transfer, "atomic_write", real)
    report = host.import_bundle(bundle, Scope.pen("dst"))
    assert [i.outcome for i in report.items] == [TransferOutcome.STORED] * 5


@pytest.mark.parametrize("fault", [Fault.DISK_FULL, Fault.READ_ONLY])
def test_a_store_unwritable_mid_import_names_what_stays(
    tmp_path: Path, host: SyncMemoryHost, root: Path, fault: Fault
) -> None:
    """The store turns read-only (or full: the protocol's full disk refuses removals too)
    after the third page: they cannot be removed, so ``StoreUnwritable`` names exactly
    those three; importing again finds them as duplicates and stores the other two
    (nothing lost, nothing twice)."""
    bundle = _bundle(tmp_path / "bundle", PAGES)
    with ExitStack() as stack:
        with pytest.raises(StoreUnwritable) as raised:
            host.import_bundle(bundle, Scope.pen("dst"), progress=_after(3, root, fault, stack))
    message = str(raised.value)
    assert raised.value.reason == ("full" if fault is Fault.DISK_FULL else "read-only")
    assert "the import stopped at 'notes/page 3.md'" in message
    written = ["notes/page 0.md", "notes/page 1.md", "notes/page 2.md"]
    stay = f"3 page(s) written before it could not be removed and stay: {', '.join(written)}"
    assert stay in message
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md")) == [
        *written,
        "own.md",
    ]
    report = host.import_bundle(bundle, Scope.pen("dst"))
    assert [i.outcome.value for i in report.items] == ["duplicate"] * 3 + ["stored"] * 2


_CHILD = """
import os, sys, time
from pathlib import Path
from goat_core.contract import Scope
from goat_core.host import Chat, GoatHome, SyncMemoryHost

home, bundle, stop_at = sys.argv[1], sys.argv[2], int(sys.argv[3])
real_fsync, seen = os.fsync, []

def fsync_then_stop(fd):
    real_fsync(fd)
    try:
        name = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return
    if name.endswith(".goat-tmp") and "/pages/" in name:
        seen.append(name)
        if len(seen) == stop_at:  # the page's temp file is written, not yet renamed
            print("in-write", name, flush=True)
            time.sleep(60)

os.fsync = fsync_then_stop
with SyncMemoryHost(home=GoatHome.at(home)) as host:
    host.import_bundle(Path(bundle), Scope.pen("dst"))
"""


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc (Linux)")
def test_a_killed_import_loses_nothing_and_the_next_one_finishes_it(
    tmp_path: Path, host: SyncMemoryHost, root: Path
) -> None:
    """``kill -9`` of ``goat import`` inside the write of page 31 of 60 (its temp file
    written, not renamed): every page that landed is whole and carries its provenance, the
    GOAT temp file is gone after the next import, which stores exactly the missing pages
    and finds the landed ones as duplicates."""
    pages = {f"pages/p{n:02}.md": f"---\nn: {n}\n---\nbody {n}\n" for n in range(60)}
    bundle = _bundle(tmp_path / "bundle", pages)
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(tmp_path / "home"), str(bundle), "31"],
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
    landed = sorted(p.relative_to(root).as_posix() for p in (root / "pages").glob("*.md"))
    assert landed == sorted(pages)[:30]
    assert [p.name for p in (root / "pages").glob(".*.goat-tmp")]  # the kill left its temp
    for rel in landed:
        note = parse_note((root / rel).read_text("utf-8"))
        assert note.error is None and note.body == parse_note(pages[rel]).body
        assert note.data["imported_from"]["id"] == rel

    report = host.import_bundle(bundle, Scope.pen("dst"))
    outcomes = [i.outcome.value for i in report.items]
    assert outcomes == ["duplicate"] * 30 + ["stored"] * 30
    assert sorted(p.relative_to(root).as_posix() for p in (root / "pages").rglob("*")) == sorted(
        pages
    )  # every page once, and no temp file left
    assert json.dumps(report.summary) == json.dumps(
        {"copied": 30, "duplicates": 30, "conflicts": 0, "rejected": 0, "unknown": 0, "planned": 0}
    )


_EXPORT_CHILD = """
import sys, time
import goat_core.fileio as fileio
from goat_core.cli import cli

real = fileio.atomic_write

def slow(path, data, **kw):  # each bundle file takes a moment: the kill lands midway
    time.sleep(0.004)
    return real(path, data, **kw)

fileio.atomic_write = slow
cli.main(sys.argv[1:])
"""


def test_a_killed_export_leaves_no_partial_bundle(tmp_path: Path, host: SyncMemoryHost) -> None:
    """The exact input: ``goat export D`` of many pages, ``kill -9`` once its staging folder
    held some, left ``.md`` files in D with no manifest. Now D is absent: only the staging
    folder beside it stays, an import of it is refused as an interrupted export, and the
    next export names it, removes it and writes D whole."""
    import time

    src = tmp_path / "SRC"
    src.mkdir()
    pages = 400
    for n in range(pages):
        (src / f"p{n:04}.md").write_text(f"page {n}\n", encoding="utf-8")
    host.bind(Scope.pen("src"), "markdown", {"root": str(src)})
    out = tmp_path / "out"
    out.mkdir()
    target = out / "D"
    home = str(tmp_path / "home")
    args = ["export", str(target), "--pen", "src", "--home", home]
    child = subprocess.Popen(
        [sys.executable, "-c", _EXPORT_CHILD, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    staging: Path | None = None
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and child.poll() is None:
            here = [*out.iterdir(), *(target.iterdir() if target.is_dir() else ())]
            found = [p for p in here if p.name.startswith(".goat-export.")]
            if found and len(list(found[0].glob("*.md"))) >= 20:
                staging = found[0]
                break
            time.sleep(0.005)
    finally:
        child.kill()
        child.wait(timeout=60)
    assert staging is not None, "the export ended before it could be killed"
    assert not target.exists()
    assert [p.name for p in out.iterdir()] == [staging.name]
    assert not (staging / "goat-export.json").exists()

    code, said = _goat(Path(home), "import", str(target), "--pen", "dst")
    assert code == 3, said  # no D: nothing that looks like a bundle
    code, said = _goat(Path(home), "import", str(staging), "--pen", "dst")
    assert code == 2 and "interrupted export" in said, said

    code, said = _goat(Path(home), "export", str(target), "--pen", "src")
    assert code == 0, said
    assert staging.name in said and "removed" in said, said
    assert sorted(p.name for p in out.iterdir()) == ["D"]
    manifest = json.loads((target / "goat-export.json").read_text(encoding="utf-8"))
    assert manifest["counts"]["pages"] == pages == len(list(target.glob("*.md")))


def _goat(home: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [*args, "--home", str(home)])
    return result.exit_code, result.output
