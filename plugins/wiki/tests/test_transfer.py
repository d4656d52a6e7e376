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
