"""A copy of Obsidian's English help vault bound as a wiki, in place.

The vault is found through ``GOAT_TEST_VAULT``, else ``$GOAT_SHARED_DIR/data/obsidian-help-en``,
else ``<repo>/../shared/data/obsidian-help-en`` (``goat_core.testing.fixtures.
locate_test_vault``: the first that is set decides). Without it these tests skip, naming the
paths tried, except under ``CI=true`` where a missing vault fails. Its attachments were left
out of the copy, so its 252 attachment embeds (and one plain link to a screenshot) are
``missing-attachment`` findings of severity ``info``, never broken note links.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from wiki_helpers import MakeWiki

from goat_core.contract import LinkResolution
from goat_core.testing.fixtures import copy_test_vault
from goat_wiki.provider import PageWrite
from goat_wiki.text import parse_index

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def help_vault(tmp_path: Path) -> Path:
    return copy_test_vault(REPO, tmp_path / "obsidian-help-en")


#: The vault's only links to notes that do not exist (``Internal links.md`` shows the syntax
#: with a made-up note ``Example``), as (line, raw link).
EXAMPLE_LINKS = [
    (154, "[[Example]]"),
    (155, "[[Example#Details]]"),
    (162, "[[Example|Custom name]]"),
    (163, "[[Example#Details|Section name]]"),
    (168, "[Custom name](Example.md)"),
    (169, "[Section name](Example.md#Details)"),
]

#: Notes no other note links to (checked by hand: each is only mentioned in plain text).
ORPHANS = [
    "Editing and formatting/HTML content.md",
    "Editing and formatting/Multiple cursors.md",
    "Files and folders/Symbolic links and junctions.md",
    "Obsidian Publish/Troubleshoot Obsidian Publish.md",
    "Obsidian/Official website.md",
    "Teams/Obsidian for teams.md",
    "User interface/Drag and drop.md",
    "User interface/Language settings.md",
]


def _hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*.md")
    }


async def test_lint_reports_real_broken_links_and_orphans_only(
    wiki: MakeWiki, help_vault: Path
) -> None:
    before = _hashes(help_vault)
    w = wiki(root=help_vault)
    report = await w.lint()
    broken = [f for f in report.findings if f.code == "broken-link"]
    assert [(f.path, f.line) for f in broken] == [
        ("Linking notes and files/Internal links.md", line) for line, _raw in EXAMPLE_LINKS
    ]
    assert [f.message.split(":")[0] for f in broken] == [raw for _line, raw in EXAMPLE_LINKS]
    assert sorted(f.path for f in report.findings if f.code == "orphan-page") == ORPHANS
    attachments = [f for f in report.findings if f.code == "missing-attachment"]
    assert len(attachments) == 253 and {f.severity for f in attachments} == {"info"}
    warnings = {f.code for f in report.findings if f.severity != "info"}
    assert warnings == {"broken-link", "orphan-page", "index-drift"}  # no index yet
    infos = {f.code for f in report.findings if f.severity == "info"}
    assert infos == {"missing-attachment"}  # no anchor, alias, footnote or code noise
    assert _hashes(help_vault) == before  # lint reads, it never writes


async def test_fix_builds_the_index_and_a_written_page_shows_everywhere(
    wiki: MakeWiki, help_vault: Path, tmp_path: Path
) -> None:
    before = _hashes(help_vault)
    w = wiki(root=help_vault)
    fixed = await w.lint(fix=True)
    assert {f.code for f in fixed.fixed} == {"index-drift"}
    index = parse_index((help_vault / "index.md").read_text("utf-8"))
    assert len(index) == 173
    assert set(index) == set(before)
    after = _hashes(help_vault)
    assert {k: v for k, v in after.items() if k in before} == before  # no note rewritten
    assert sorted(set(after) - set(before)) == ["index.md", "log.md", "schema.md"]
    assert not [f for f in fixed.findings if f.code == "index-drift"]

    schema = (await w.read("schema"))["text"]
    assert "syntheses" in schema and "Editing and formatting" in schema

    source = tmp_path / "notes" / "linking.md"
    source.parent.mkdir()
    source.write_text("Obsidian resolves bare wikilinks by file name.\n", encoding="utf-8")
    sid = (await w.ingest(source))["added"][0]
    result = await w.write_page(
        PageWrite(
            "Link resolution",
            "How [[Linking notes and files/Internal links|internal links]] resolve: "
            "by path, then by name. Zyzzyva marker.\n",
            sources=(sid,),
        )
    )
    rel = result["page"]
    assert rel == "syntheses/Link resolution.md"
    assert rel in parse_index((help_vault / "index.md").read_text("utf-8"))
    assert f"- page: {rel}" in (help_vault / "log.md").read_text("utf-8")
    assert [i.id for i in (await w.recall("zyzzyva")).items] == [rel]
    link_map = await w.link_map()
    assert rel in {n.id for n in link_map.nodes}
    edges = [e for e in link_map.edges if e.source == rel]
    assert [(e.target, e.resolution) for e in edges] == [
        ("Linking notes and files/Internal links.md", LinkResolution.EXACT)
    ]
    back = await w.connections("Internal links")
    assert rel in {e.source for e in back.backlinks}
    final = await w.lint()
    own = [f.code for f in final.findings if f.path == rel]
    assert own == ["orphan-page"]  # nothing links to the new page yet; everything else clean
    assert sorted(f.path for f in final.findings if f.code == "orphan-page") == sorted(
        [*ORPHANS, rel]
    )
