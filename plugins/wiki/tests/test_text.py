"""Focused tests of the wiki's text rules and settings (property tests for the parsers)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from goat_wiki import text as wt
from goat_wiki.plugin import WikiSettings

MARKDOWNISH = st.lists(
    st.sampled_from([*list("ab [](){}|\\^#`~%<!->:\n\t"), "```", "[^1]", "%%", "<!--"]),
    max_size=120,
).map("".join)


@given(MARKDOWNISH)
def test_mask_code_keeps_length_and_line_breaks(text: str) -> None:
    masked = wt.mask_code(text)
    assert len(masked) == len(text)
    assert [i for i, c in enumerate(masked) if c in "\r\n"] == [
        i for i, c in enumerate(text) if c in "\r\n"
    ]


@given(MARKDOWNISH)
def test_parsers_never_raise(text: str) -> None:
    wt.footnote_problems(text)
    wt.table_lines(text)
    wt.heading_keys(text)
    wt.block_ids(text)
    wt.parse_index(text)
    wt.parse_log(text)
    summary = wt.derive_summary({}, text)
    assert "\n" not in summary and len(summary) <= 160


def test_footnotes_exact_input() -> None:
    text = (
        "A[^1] b[^named] c[^gone] d^[inline] `[^code]`\n\n"
        "```\n[^fenced]\n```\n\n[^1]: one\n   [^named]: indented definition\n"
    )
    assert wt.footnote_problems(text) == [(1, "gone")]


def test_table_lines_inside_quotes_and_not_in_code() -> None:
    text = "> a | b\n> -- | --\n> x | y\n\n```\n| c | d |\n| - | - |\n```\n\nplain | pipe\n"
    assert wt.table_lines(text) == {1, 2, 3}


@given(
    st.dictionaries(
        st.from_regex(r"[a-z]{1,8}(/[A-Za-z ]{1,10}){0,2}\.md", fullmatch=True),
        st.tuples(st.text(max_size=30), st.text(max_size=80)),
        max_size=20,
    )
)
def test_index_round_trips(pages: dict[str, tuple[str, str]]) -> None:
    lines = {
        p: wt.index_line(wt.IndexEntry(p, title, wt.derive_summary({"summary": s}, "")))
        for p, (title, s) in pages.items()
    }
    text = wt.render_index(lines, "---\ngoat-wiki: index\n---\n")
    parsed = wt.parse_index(text)
    assert {p: line for p, (_n, line) in parsed.items()} == lines


def test_log_parse_exact_input() -> None:
    text = (
        "---\ngoat-wiki: log\n---\n# Log\n\n## [2026-11-29] write | A | B\n\n- page: x/A.md\n"
        "\n## [2026-1-1] bad | no\n\n## [2026-11-30] forget | A\n\n- page: x/A.md\n"
    )
    entries, malformed = wt.parse_log(text)
    assert [(e.date, e.op, e.title, e.pages) for e in entries] == [
        ("2026-11-29", "write", "A | B", ("x/A.md",)),
        ("2026-11-30", "forget", "A", ("x/A.md",)),
    ]
    assert malformed == [(10, "## [2026-1-1] bad | no")]


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        ("entities", "entities"),
        ("ENTITY", "entities"),
        ("synthesis", "syntheses"),
        ("concept", "concepts"),
        ("sources", "sources"),
        ("people", None),
        ("", None),
    ],
)
def test_folder_for(requested: str, expected: str | None) -> None:
    assert wt.folder_for(requested, ("sources", "entities", "concepts", "syntheses")) == expected


def test_heading_keys_follow_the_help_vaults_links() -> None:
    text = "### `hasTag()`\n## How large can each remote vault be?\n```\n# not a heading\n```\n"
    keys = wt.heading_keys(text)
    assert wt.heading_key("hasTag") in keys
    assert wt.heading_key("How large can each remote vault be") in keys
    assert wt.heading_key("not a heading") not in keys


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"folders": ()}, "at least one"),
        ({"folders": ("a/b",)}, "plain folder name"),
        ({"folders": ("Notes", "notes")}, "differ ignoring case"),
        ({"index_file": "../index.md"}, "plain Markdown file name"),
        ({"log_fallback": "index.md"}, "must all differ"),
        ({"raw_folder": ".hidden"}, "plain folder name"),
        ({"root": "/"}, "root-is-filesystem-root"),
        ({"unknown": 1}, "Extra inputs"),
    ],
)
def test_settings_rules(settings: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        WikiSettings.model_validate(settings)


def test_settings_root_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "w").mkdir()
    monkeypatch.chdir(tmp_path)
    assert WikiSettings(root=Path("w")).root == tmp_path / "w"


def test_plugin_import_is_cheap() -> None:
    code = (
        "import sys, goat_wiki.plugin as p; p.spec(); "
        "heavy = [m for m in ('yaml', 'sqlite3', 'goat_wiki.provider', 'goat_wiki.cli', "
        "'goat_core.filestore.search') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_entry_point_registers_provider_and_commands() -> None:
    import click

    from goat_core.plugins import PluginSettings, Registry, make_plugin_manager

    registry = Registry(make_plugin_manager(PluginSettings(load=("wiki",), strict=True)))
    assert "wiki" in registry.providers()
    group = click.Group("goat")
    registry.register_commands(group)
    wiki = group.commands["wiki"]
    assert isinstance(wiki, click.Group)
    assert sorted(wiki.commands) == ["ingest", "lint", "write"]
