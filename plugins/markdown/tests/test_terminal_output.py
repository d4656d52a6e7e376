"""Note content never reaches a terminal as control codes (``goat recall``, ``pages``,
``show``, ``map``): an escape sequence in a note could clear the screen or set the window
title. Text output shows each control character (but tab and newline) as one visible
character; ``--json`` keeps the text exact (JSON escapes it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from goat_core.cli import cli

EVIL = "evil \x1b]0;pwned\x07 \x1b[2J storm here\x9b\x7f\r\nline two\tend\n"
CONTROLS = [chr(c) for c in range(0x20) if chr(c) not in "\t\n"] + ["\x7f"]
CONTROLS += [chr(c) for c in range(0x80, 0xA0)]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "Evil.md").write_text(EVIL, encoding="utf-8", newline="")
    (vault / "Titled.md").write_text(
        '---\ntitle: "t\\e[31mred\\e]0;x\\a"\n---\nstorm [[Evil]]\n', encoding="utf-8"
    )
    home = tmp_path / "home"
    bound = CliRunner().invoke(
        cli, ["bind", "--pen", "e", "markdown", "--set", f"root={vault}", "--home", str(home)]
    )
    assert bound.exit_code == 0, bound.output
    return home


def _goat(home: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, [*args, "--pen", "e", "--home", str(home)])
    assert result.exit_code == 0, result.output
    return result.output


def _no_controls(text: str) -> None:
    assert not [c for c in text if c in CONTROLS], repr(text)


def test_recall_pages_show_and_map_show_control_characters(home: Path) -> None:
    """The exact input ``printf 'evil \\033]0;pwned\\007 \\033[2J …'`` in a note's body, and
    ESC/BEL in a title."""
    recalled = _goat(home, "recall", "storm")
    _no_controls(recalled)
    assert "evil \u241b]0;pwned\u2407 \u241b[2J storm here" in recalled
    pages = _goat(home, "pages")
    _no_controls(pages)
    assert "t\u241b[31mred\u241b]0;x\u2407" in pages
    shown = _goat(home, "show", "Evil")
    _no_controls(shown)
    assert shown == "evil \u241b]0;pwned\u2407 \u241b[2J storm here\ufffd\u2421\nline two\tend\n"
    _no_controls(_goat(home, "map"))


def test_json_keeps_the_text_exact(home: Path) -> None:
    page = json.loads(_goat(home, "show", "Evil", "--json"))
    assert page["body"] == EVIL
    listing = json.loads(_goat(home, "pages", "--json"))
    assert "t\x1b[31mred\x1b]0;x\x07" in [i["title"] for i in listing["items"]]


def test_status_and_check_show_control_characters_of_a_store_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store root whose name holds an escape sequence is shown, never sent to the
    terminal, by ``goat status`` and ``goat check``."""
    from click.testing import CliRunner

    from goat_core.cli import cli

    monkeypatch.setenv("GOAT_HOME", str(tmp_path / "home"))
    root = tmp_path / "v\x1b[31mred"
    root.mkdir()
    run = CliRunner()
    assert (
        run.invoke(cli, ["bind", "--pen", "e", "markdown", "--set", f"root={root}"]).exit_code == 0
    )
    for args in (["status"], ["check", "--pen", "e"]):
        out = run.invoke(cli, args)
        assert out.exit_code == 0, out.output
        assert "\x1b" not in out.output and "v\u241b[31mred" in out.output, out.output


BIDI = [
    "\u061c",
    "\u200e",
    "\u200f",
    *map(chr, range(0x202A, 0x202F)),
    *map(chr, range(0x2066, 0x206A)),
]


def test_a_file_name_with_a_newline_or_tab_keeps_each_row_one_line(tmp_path: Path) -> None:
    """The exact names ``two\\nlines.md`` and ``tab\\there.md``: each table row stays one line
    (``recall``, ``pages``, ``map``), the newline and tab shown as U+240A and U+2409."""
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "two\nlines.md").write_text("kettle two\n", encoding="utf-8")
    (vault / "tab\there.md").write_text("kettle tab [[two\nlines]]\n", encoding="utf-8")
    home = tmp_path / "home"
    bound = CliRunner().invoke(
        cli, ["bind", "--pen", "e", "markdown", "--set", f"root={vault}", "--home", str(home)]
    )
    assert bound.exit_code == 0, bound.output
    recalled = _goat(home, "recall", "kettle").splitlines()
    assert len(recalled) == 3, recalled  # the header and one line a note
    assert {r.split()[1] for r in recalled[1:]} == {"two\u240alines.md", "tab\u2409here.md"}
    pages = _goat(home, "pages").splitlines()
    assert pages[1:] == [
        "tab\u2409here.md   tab\u2409here",
        "two\u240alines.md  two\u240alines",
    ], pages
    outline = _goat(home, "map")
    assert "two\u240alines.md  (two\u240alines)" in outline.splitlines(), outline
    assert "\t" not in recalled and "\t" not in pages and "\t" not in outline


def test_bidirectional_controls_are_shown_not_obeyed(tmp_path: Path) -> None:
    """U+202E (right-to-left override) in a name or a body reverses the text after it on
    screen ("Trojan Source"): text output shows every bidirectional control as U+FFFD,
    ``--json`` keeps it."""
    vault = tmp_path / "v"
    vault.mkdir()
    name = "invoice\u202egpj.md"
    (vault / name).write_text("kettle " + "".join(BIDI) + " done\n", encoding="utf-8")
    home = tmp_path / "home"
    bound = CliRunner().invoke(
        cli, ["bind", "--pen", "e", "markdown", "--set", f"root={vault}", "--home", str(home)]
    )
    assert bound.exit_code == 0, bound.output
    for args in (("recall", "kettle"), ("pages",), ("show", name), ("map",)):
        out = _goat(home, *args)
        assert not [c for c in out if c in BIDI], (args, out)
        assert "invoice\ufffdgpj" in out or "\ufffd" * len(BIDI) in out, (args, out)
    data = json.loads(_goat(home, "recall", "kettle", "--json"))
    assert data["items"][0]["path"] == name


def _bound(tmp_path: Path) -> tuple[Path, Path]:
    vault = tmp_path / "v"
    vault.mkdir()
    home = tmp_path / "home"
    bound = CliRunner().invoke(
        cli, ["bind", "--pen", "e", "markdown", "--set", f"root={vault}", "--home", str(home)]
    )
    assert bound.exit_code == 0, bound.output
    return vault, home


def test_receipts_show_the_names_they_name(tmp_path: Path) -> None:
    """``remember``, ``forget``: the exact names ``es\\x1b]0;PWN\\x07c.md`` (sets the window
    title) and ``two\\nlines.md`` in the receipt line are shown, one line each."""
    vault, home = _bound(tmp_path)
    (vault / "es\x1b]0;PWN\x07c.md").write_text("---\ntitle: evil\n---\nbody\n", "utf-8")
    (vault / "two\nlines.md").write_text("---\ntitle: split\n---\nbody\n", "utf-8")
    added = _goat(home, "remember", "more", "--title", "evil")
    assert added == "remembered in es\u241b]0;PWN\u2407c.md (pen:e)\n", added
    gone = _goat(home, "forget", "split")
    assert gone.count("\n") == 1 and "two\u240alines.md" in gone, gone
    titled = _goat(home, "remember", "body", "--title", "ti\u202eX")
    assert "\u202e" not in titled and "ti\ufffdX" in titled, titled


def test_line_separators_and_undecodable_names_keep_rows_whole(tmp_path: Path) -> None:
    """A link holding U+2028 (``[[ls\\u2028sep]]``) keeps each ``map`` row one line, and a
    file whose name is not UTF-8 (``c1\\x9b2Jx.md``: 0x9B is the 8-bit CSI) is shown as
    U+FFFD, never as its raw bytes, in ``pages`` and ``map``."""
    import os

    vault, home = _bound(tmp_path)
    (vault / "links.md").write_text("hello [[ls\u2028sep]] [[miss\u2028ing]]\n", "utf-8")
    with open(os.path.join(os.fsencode(vault), b"c1\x9b2Jx.md"), "wb") as f:
        f.write(b"kettle\n")
    outline = _goat(home, "map")
    rows = [line for line in outline.split("\n") if "ls" in line or "miss" in line]
    assert all("sep" in r or "ing" in r for r in rows) and "\u2028" not in outline, outline
    for out in (outline, _goat(home, "pages")):
        assert "c1\ufffd2Jx.md" in out, out
        assert not [c for c in out if "\ud800" <= c <= "\udfff"], repr(out)
