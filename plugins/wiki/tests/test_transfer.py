"""Export to an OKF bundle, then import into a wiki Pen (docs/design.md, Copy, export and
import): each page ingested once as a source plus a page citing it, index and log true,
and lint shows no broken link the vault did not already have."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from goat_core.contract import Scope, TransferOutcome
from goat_core.filestore import parse_note
from goat_core.host import Chat, GoatHome, SyncMemoryHost
from goat_core.testing.fixtures import copy_test_vault
from goat_wiki.text import parse_index

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def host(tmp_path: Path) -> Iterator[SyncMemoryHost]:
    with SyncMemoryHost(home=GoatHome.at(tmp_path / "home")) as h:
        yield h


def _broken(host: SyncMemoryHost, pen: str) -> set[tuple[str | None, str | None]]:
    report = host.context_for(Chat(pen)).run_operation("lint")
    return {(f.path, f.target) for f in report.findings if f.code == "broken-link"}


def test_export_then_import_into_a_wiki(tmp_path: Path, host: SyncMemoryHost) -> None:
    vault = copy_test_vault(REPO, tmp_path / "obsidian-help-en")
    baseline = copy_test_vault(REPO, tmp_path / "baseline")
    host.bind(Scope.pen("docs"), "wiki", {"root": str(vault)})
    host.bind(Scope.pen("before"), "wiki", {"root": str(baseline)})
    host.bind(Scope.pen("research"), "wiki", {})
    bundle = tmp_path / "bundle"

    exported = host.export_bundle(Scope.pen("docs"), bundle)
    assert exported.complete and len(exported.items) == 173
    report = host.import_bundle(bundle, Scope.pen("research"))
    assert report.summary["copied"] == 173 and report.summary["conflicts"] == 0

    wiki = host.context_for(Chat("research"))
    root = Path(wiki._provider.root)  # type: ignore[union-attr]
    assert _broken(host, "research") <= _broken(host, "before")  # no new broken links
    lint = wiki.run_operation("lint")
    codes = {f.code for f in lint.findings}
    assert not codes & {"index-drift", "log-gap", "ambiguous-link", "no-sources"}

    manifest = json.loads((root / "raw" / ".goat-wiki-manifest.json").read_text())
    assert len(manifest["sources"]) == 173
    home = parse_note((root / "Home.md").read_text("utf-8"))
    (cited,) = home.data["sources"]
    assert cited["id"] == "imports/Home.md.txt"
    assert home.data["imported_from"]["scope"] == "pen:docs"
    assert home.body == parse_note((baseline / "Home.md").read_text("utf-8")).body
    index = parse_index((root / "index.md").read_text("utf-8"))
    assert len(index) >= 173
    log = (root / "log.md").read_text("utf-8")
    assert "import | 173 pages from pen:docs" in log

    again = host.import_bundle(bundle, Scope.pen("research"))
    assert {i.outcome for i in again.items} == {TransferOutcome.DUPLICATE}
    assert (
        len(json.loads((root / "raw" / ".goat-wiki-manifest.json").read_text())["sources"]) == 173
    )


def _bundle(folder: Path) -> Path:
    folder.mkdir()
    for n in range(3):
        (folder / f"page {n}.md").write_text(f"---\ntitle: Page {n}\n---\nbody {n}\n")
    return folder


@pytest.mark.parametrize("fault", ["disk_full", "read_only"])
def test_an_import_into_an_unwritable_wiki_is_typed_and_writes_nothing(
    tmp_path: Path, host: SyncMemoryHost, fault: str
) -> None:
    """The wiki's folder is full (or read-only) from the start: ``StoreUnwritable``
    saying so (it was a raw ``OSError`` from the layout's first folder), nothing written;
    the same import afterwards stores every page."""
    from goat_core.errors import StoreUnwritable
    from goat_core.testing.conformance.faults import Fault, filesystem_fault

    root = tmp_path / "wiki"
    root.mkdir()
    host.bind(Scope.pen("w"), "wiki", {"root": str(root)})
    bundle = _bundle(tmp_path / "bundle")
    with filesystem_fault(root, Fault(fault)):
        with pytest.raises(StoreUnwritable) as raised:
            host.import_bundle(bundle, Scope.pen("w"))
    assert "nothing was written" in str(raised.value)
    assert list(root.rglob("*")) == []
    report = host.import_bundle(bundle, Scope.pen("w"))
    assert [i.outcome for i in report.items] == [TransferOutcome.STORED] * 3


def test_a_wiki_filling_up_mid_import_names_the_pages_that_landed(
    tmp_path: Path, host: SyncMemoryHost
) -> None:
    """The disk fills after the first of three pages of the wiki's one-step batch: the
    typed error names that page, and importing again finds it as a duplicate and stores
    the other two, with index and log true."""
    from contextlib import ExitStack

    from goat_core.errors import StoreUnwritable
    from goat_core.testing.conformance.faults import Fault, filesystem_fault

    root = tmp_path / "wiki"
    root.mkdir()
    host.bind(Scope.pen("w"), "wiki", {"root": str(root)})
    bundle = _bundle(tmp_path / "bundle")
    with ExitStack() as stack:

        def progress(done: int, total: int) -> None:
            if done == 1:
                stack.enter_context(filesystem_fault(root, Fault.DISK_FULL))

        with pytest.raises(StoreUnwritable) as raised:
            host.import_bundle(bundle, Scope.pen("w"), progress=progress)
    message = str(raised.value)
    landed = sorted(p.name for p in root.glob("page *.md"))
    assert landed == ["page 0.md"]
    assert "1 page(s) were written before it and stay: page 0.md" in message
    report = host.import_bundle(bundle, Scope.pen("w"))
    assert [i.outcome.value for i in report.items] == ["duplicate", "stored", "stored"]
    wiki = host.context_for(Chat("w"))
    lint = wiki.run_operation("lint")
    assert not [f for f in lint.findings if f.code in ("index-drift", "broken-link")], lint
