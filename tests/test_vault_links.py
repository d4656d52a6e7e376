"""Links of the real Obsidian help vault (a copy of ../shared/data/obsidian-help-en, or where
GOAT_TEST_VAULT / GOAT_SHARED_DIR point: see ``conftest.locate_test_vault``).

The vault is Obsidian's public help site. Its attachments (screenshots, icons, audio) were left
out of the copy, so links whose target has an attachment extension from ``Accepted file
formats.md`` resolve to nothing here although Obsidian, with the full site, shows them
resolved; they are counted separately. Every other unresolved link is one Obsidian itself
shows unresolved, listed below with the reason.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections import Counter
from pathlib import Path, PurePosixPath

import pytest

from goat_core.cli._maphtml import render_map_html
from goat_core.contract import LinkResolution, PageSummary
from goat_core.filestore import LinkIndex, parse_links

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from conftest import locate_test_vault  # noqa: E402

REPO = HERE.parent

# Accepted file formats.md: every format Obsidian opens besides Markdown.
ATTACHMENT_EXTENSIONS = {
    ".base", ".canvas", ".avif", ".bmp", ".gif", ".jpeg", ".jpg", ".png", ".svg", ".webp",
    ".flac", ".m4a", ".mp3", ".ogg", ".wav", ".webm", ".3gp", ".mkv", ".mov", ".mp4", ".ogv",
    ".pdf",
}  # fmt: skip

IL = "Linking notes and files/Internal links.md"
# (source note, line, link as written): what Obsidian shows unresolved in this vault.
EXPECTED_MISSING_NOTES = {
    # "Change the link display text" demonstrates display text with live links to a note
    # named Example, which the help vault does not contain; each example is written once in
    # backticks (code, not a link) and once live, and only the live ones are listed.
    (IL, 154, "[[Example]]"),  # "`[[Example]]` displays as [[Example]]"
    (IL, 155, "[[Example#Details]]"),  # same, with a heading of the absent note
    (IL, 162, "[[Example|Custom name]]"),  # display text does not change the target
    (IL, 163, "[[Example#Details|Section name]]"),
    (IL, 168, "[Custom name](Example.md)"),  # the Markdown-link form of the same examples
    (IL, 169, "[Section name](Example.md#Details)"),
}


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = locate_test_vault(REPO)  # skips, or under CI=true fails, when it is absent
    copy = tmp_path_factory.mktemp("vault") / "obsidian-help-en"
    shutil.copytree(source, copy)
    return copy


# -- where the vault is looked for (the rule shared with plugins/markdown/tests) -------------
def test_locate_prefers_goat_test_vault(tmp_path: Path) -> None:
    explicit, shared = tmp_path / "explicit", tmp_path / "shared"
    explicit.mkdir()
    (shared / "data" / "obsidian-help-en").mkdir(parents=True)
    env = {"GOAT_TEST_VAULT": str(explicit), "GOAT_SHARED_DIR": str(shared)}
    assert locate_test_vault(tmp_path / "repo", env) == explicit


def test_locate_uses_goat_shared_dir(tmp_path: Path) -> None:
    vault = tmp_path / "elsewhere" / "data" / "obsidian-help-en"
    vault.mkdir(parents=True)
    env = {"GOAT_SHARED_DIR": str(tmp_path / "elsewhere")}
    assert locate_test_vault(tmp_path / "repo", env) == vault


def test_locate_falls_back_to_shared_beside_the_clone(tmp_path: Path) -> None:
    vault = tmp_path / "shared" / "data" / "obsidian-help-en"
    vault.mkdir(parents=True)
    (tmp_path / "repo").mkdir()
    assert locate_test_vault(tmp_path / "repo", {}) == vault


def test_missing_vault_skips_naming_the_paths_tried(tmp_path: Path) -> None:
    env = {"GOAT_SHARED_DIR": str(tmp_path / "nowhere")}
    with pytest.raises(pytest.skip.Exception) as skipped:
        locate_test_vault(tmp_path / "repo", env)
    message = str(skipped.value)
    assert "GOAT_TEST_VAULT (unset)" in message
    assert str(tmp_path / "nowhere" / "data" / "obsidian-help-en") in message
    with pytest.raises(pytest.skip.Exception, match=r"GOAT_TEST_VAULT=.*typo"):
        locate_test_vault(tmp_path / "repo", {"GOAT_TEST_VAULT": str(tmp_path / "typo")})


@pytest.mark.parametrize("ci", ["true", "1", "TRUE"])
def test_missing_vault_fails_under_ci(tmp_path: Path, ci: str) -> None:
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        locate_test_vault(tmp_path / "repo", {"CI": ci})


@pytest.fixture(scope="module")
def index(vault: Path) -> LinkIndex:
    paths: list[str] = []
    pages: list[tuple[PageSummary, str]] = []
    for folder, _, files in os.walk(vault):
        for name in files:
            rel = (Path(folder) / name).relative_to(vault).as_posix()
            paths.append(rel)
            if name.endswith(".md"):
                text = (Path(folder) / name).read_text(encoding="utf-8")
                pages.append((PageSummary(id=rel, title=name[:-3], path=rel), text))
    return LinkIndex(pages, paths)


def _is_attachment_name(target_text: str) -> bool:
    return PurePosixPath(target_text).suffix.lower() in ATTACHMENT_EXTENSIONS


def test_vault_missing_links_are_what_obsidian_shows_unresolved(index: LinkIndex) -> None:
    assert len(index.pages) == 173
    links = [(pid, link) for pid, page_links in index.links.items() for link in page_links]
    missing = [(pid, x) for pid, x in links if x.resolution is LinkResolution.MISSING]
    left_out = [(pid, x) for pid, x in missing if _is_attachment_name(x.target_text)]
    notes = {(pid, x.line, x.raw) for pid, x in missing if not _is_attachment_name(x.target_text)}
    counts = Counter(x.resolution.value for _, x in links)
    link_map = index.link_map()
    print(
        f"\nobsidian-help-en: {len(index.pages)} notes, {len(links)} links, "
        f"{len(link_map.edges)} edges, {len(notes)} missing notes, "
        f"{len(left_out)} links to attachments left out of the copy; {dict(sorted(counts.items()))}"
    )
    assert notes == EXPECTED_MISSING_NOTES
    assert counts["attachment"] == 0  # the copy holds no attachment files
    assert len(left_out) == 253


def test_vault_with_attachments_restored(vault: Path, index: LinkIndex) -> None:
    """Put the left-out attachments back (empty files under Attachments/, as the help site
    keeps them): every such link becomes an attachment and only the notes above stay missing."""
    names = {
        PurePosixPath(x.target_text).name
        for links in index.links.values()
        for x in links
        if x.resolution is LinkResolution.MISSING and _is_attachment_name(x.target_text)
    }
    pages = [(index.pages[pid], (vault / pid).read_text(encoding="utf-8")) for pid in index.pages]
    paths = [*index.pages, *(f"Attachments/{name}" for name in sorted(names))]
    full = LinkIndex(pages, paths)
    resolved = [(pid, x) for pid, links in full.links.items() for x in links]
    missing = {
        (pid, x.line, x.raw) for pid, x in resolved if x.resolution is LinkResolution.MISSING
    }
    assert missing == EXPECTED_MISSING_NOTES
    attachments = [x for _, x in resolved if x.resolution is LinkResolution.ATTACHMENT]
    assert len(attachments) == 253
    assert all(x.target and x.target.startswith("Attachments/") for x in attachments)


def test_vault_resolution_details(index: LinkIndex) -> None:
    by_raw = {(pid, x.raw): x for pid, links in index.links.items() for x in links}
    # A bare name matches case-insensitively: the file is "Embed files.md".
    embed = by_raw[(IL, "[[Embed Files]]")]
    assert (embed.target, embed.resolution) == (
        "Linking notes and files/Embed files.md",
        LinkResolution.NAME,
    )
    # Two notes are named "Security and privacy": a bare link from Obsidian Sync resolves to
    # the one in its own folder; folder-qualified links resolve by path.
    sync = "Obsidian Sync/Introduction to Obsidian Sync.md"
    amb = by_raw[(sync, "[[Security and privacy]]")]
    assert (amb.target, amb.resolution) == (
        "Obsidian Sync/Security and privacy.md",
        LinkResolution.AMBIGUOUS,
    )
    publish = by_raw[
        (
            "Obsidian Publish/Manage sites.md",
            "[[Obsidian Publish/Security and privacy#Add a site password\\|Set a password]]",
        )
    ]
    assert (publish.target, publish.resolution, publish.heading, publish.alias) == (
        "Obsidian Publish/Security and privacy.md",
        LinkResolution.EXACT,
        "Add a site password",
        "Set a password",
    )
    # Same-note heading links, sub-headings and block embeds.
    assert by_raw[(IL, "[[#Preview a linked file]]")].resolution is LinkResolution.SELF
    sub = by_raw[(IL, "[[Help and support#Questions and advice#Report bugs and request features]]")]
    assert (sub.target, sub.heading) == (
        "Help and support.md",
        "Questions and advice#Report bugs and request features",
    )
    block = by_raw[("Linking notes and files/Embed files.md", "![[Internal links#^b15695]]")]
    assert (block.target, block.block, block.embed) == (IL, "b15695", True)
    # Backlinks from Embed files.md: its live links to Internal links, never its code examples.
    back = index.connections(IL).backlinks
    assert [e.raw for e in back if e.source == "Linking notes and files/Embed files.md"] == [
        "[[Internal links|Internal link]]",
        "[[Internal links#Link to a heading in a note|headings]]",
        "[[Internal links#Link to a block in a note|blocks]]",
        "![[Internal links#^b15695]]",  # the ```md examples of lines 23 and 29 are code
        "[[Internal links#Link to a block in a note|block identifier]]",
    ]


def test_vault_code_examples_are_not_links(vault: Path) -> None:
    text = (vault / IL).read_text(encoding="utf-8")
    raws = {x.raw for x in parse_links(text)}
    # Written only inside backticks or fenced code in Internal links.md.
    for example in (
        "[[Three laws of motion]]",
        "[[2023-01-01#^37066d]]",
        "[[## team]]",
        "[[Figure 1.png]]",
        "[[Projects/Three laws of motion]]",
    ):
        assert example not in raws


def test_vault_map_html(index: LinkIndex, tmp_path: Path) -> None:
    html = render_map_html(index.link_map(), title="Obsidian help")
    (tmp_path / "map.html").write_text(html, encoding="utf-8")
    assert html.count('"missing":false') == 173
