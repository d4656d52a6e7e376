"""``goat wiki ...`` through the real ``goat`` CLI (plugins loaded from installed entry
points, a fresh GOAT home per test), plus the generic memory commands on a wiki."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from wiki_helpers import write_tree

from goat_core.cli import cli


@pytest.fixture
def goat_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "goat-home"
    monkeypatch.setenv("GOAT_HOME", str(path))
    monkeypatch.delenv("GOAT_LOAD_PLUGINS", raising=False)
    monkeypatch.delenv("GOAT_DISABLE_PLUGINS", raising=False)
    return path


def goat(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def test_wiki_commands_on_a_bound_vault(goat_home: Path, tmp_path: Path) -> None:
    vault = write_tree(tmp_path / "vault", {"Projects/Plan.md": "The plan.\n"})
    docs = write_tree(
        tmp_path / "docs",
        {"a/readme.md": "alpha source\n", "b/readme.md": "beta source\n"},
    )
    bound = goat("bind", "--pen", "w", "wiki", "--set", f"root={vault}")
    assert bound.exit_code == 0, bound.output

    ingested = goat("wiki", "ingest", str(docs), "--pen", "w", "--json")
    assert ingested.exit_code == 0, ingested.output
    assert json.loads(ingested.stdout)["added"] == ["docs/a/readme.md", "docs/b/readme.md"]
    again = goat("wiki", "ingest", str(docs / "a"), "--pen", "w")
    assert again.exit_code == 0
    assert "0 source(s) added, 1 already present" in again.stdout
    assert "present docs/a/readme.md\n" in again.stdout  # ids, as `write --source` takes

    page = tmp_path / "page.md"
    page.write_text("Joins [[Projects/Plan]] with the alpha source. Quokka.\n")
    written = goat(
        "wiki",
        "write",
        "Alpha",
        "--file",
        str(page),
        "--folder",
        "synthesis",
        "--source",
        "docs/a/readme.md",
        "--pen",
        "w",
        "--json",
    )
    assert written.exit_code == 0, written.output
    result = json.loads(written.stdout)
    assert result["page"] == "syntheses/Alpha.md"

    refused = goat("wiki", "write", "Beta", "--file", str(page), "--folder", "people", "--pen", "w")
    assert refused.exit_code == 2
    assert "allowed folders: Projects, syntheses" in refused.stderr

    lint = goat("wiki", "lint", "--json", "--pen", "w")
    findings = json.loads(lint.stdout)["findings"]
    assert {f["code"] for f in findings} == {"orphan-page"}
    assert set(findings[0]) == {"code", "severity", "path", "line", "target", "message", "fixable"}
    assert lint.exit_code == 1  # warnings remain

    recalled = goat("recall", "quokka", "--pen", "w", "--json")
    assert recalled.exit_code == 0, recalled.output
    assert [i["id"] for i in json.loads(recalled.stdout)["items"]] == [result["page"]]
    pages = goat("pages", "--pen", "w", "--json")
    assert [i["id"] for i in json.loads(pages.stdout)["items"]] == [
        "Projects/Plan.md",
        result["page"],
    ]
    shown = goat("show", "Alpha", "--pen", "w", "--json")
    assert json.loads(shown.stdout)["provenance"]["sources"][0]["id"] == "docs/a/readme.md"
    mapped = goat("map", "--pen", "w", "--json")
    edges = json.loads(mapped.stdout)["edges"]
    assert {(e["source"], e["target"]) for e in edges} == {(result["page"], "Projects/Plan.md")}
    remembered = goat("remember", "an extra thought", "--title", "Alpha", "--pen", "w")
    assert remembered.exit_code == 0, remembered.output
    assert "remember | Alpha" in (vault / "log.md").read_text()


def test_wiki_command_refuses_a_scope_without_a_wiki(goat_home: Path) -> None:
    result = goat("wiki", "lint", "--pen", "nowiki")  # a Pen without a binding has no memory
    assert result.exit_code == 6
    bad = goat("wiki", "lint", "--pen", "Not/Valid")
    assert bad.exit_code == 2
    plain = goat("wiki", "lint")  # Global: the embedded markdown default, not a wiki
    if plain.exit_code == 6:  # goat-markdown is not installed (this plugin's own tox env)
        assert "goat: error:" in plain.stderr
    else:
        assert plain.exit_code == 4
        assert "uses provider 'markdown', not a wiki" in plain.stderr


def test_lint_fix_exits_zero_when_clean(goat_home: Path, tmp_path: Path) -> None:
    assert goat("bind", "--pen", "w", "wiki").exit_code == 0
    page = tmp_path / "p.md"
    page.write_text("Self contained.\n")
    assert goat("wiki", "write", "Only", "--file", str(page), "--pen", "w").exit_code == 0
    result = goat("wiki", "lint", "--fix", "--pen", "w")
    # one page: an orphan without sources, reported (not fixable)
    assert result.exit_code == 1
    assert "orphan-page" in result.stdout and "no-sources" in result.stdout


def test_ingest_progress_goes_to_stderr(goat_home: Path, tmp_path: Path) -> None:
    """The installed ``goat`` script, as a user runs it: the progress bar is on stderr only."""
    docs = write_tree(tmp_path / "docs", {f"n{i}.md": f"note {i}\n" for i in range(5)})
    assert goat("bind", "--pen", "w", "wiki").exit_code == 0
    script = Path(sys.executable).with_name("goat")
    proc = subprocess.run(
        [str(script), "wiki", "ingest", str(docs), "--pen", "w"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "GOAT_HOME": str(goat_home)},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "5 source(s) added, 0 already present, 0 skipped; 5 in the wiki\n" + (
        "".join(f"added   docs/n{i}.md\n" for i in range(5))
    )
    assert "ingesting" in proc.stderr


def test_lint_counts_read_as_english(goat_home: Path, tmp_path: Path) -> None:
    """Three warnings read "3 warnings", never "3 warning"."""
    vault = write_tree(
        tmp_path / "vault", {f"Notes/n{i}.md": f"orphan note {i}\n" for i in range(3)}
    )
    assert goat("bind", "--pen", "w", "wiki", "--set", f"root={vault}").exit_code == 0
    lint = goat("wiki", "lint", "--pen", "w")
    summary = lint.stderr.strip().splitlines()[-1]
    counts = dict(
        (noun, int(n)) for n, noun in (part.split() for part in summary.split(";")[0].split(", "))
    )
    assert counts.get("warnings", 0) >= 3, summary
    assert not re.search(r"\b([02-9]|\d\d+) (warning|error)\b", summary), summary


def test_ingest_shows_control_characters_in_names(goat_home: Path, tmp_path: Path) -> None:
    """A source named with an OSC "set window title" sequence is listed visibly: the
    terminal never receives the escape (the id itself, in ``--json``, stays exact)."""
    docs = write_tree(tmp_path / "docs", {"s\x1b]0;own\x1b\\x.txt": "a source\n"})
    assert goat("bind", "--pen", "w", "wiki").exit_code == 0
    ingested = goat("wiki", "ingest", str(docs), "--pen", "w")
    assert ingested.exit_code == 0, ingested.output
    assert "\x1b" not in ingested.output
    assert "added   docs/s\u241b]0;own\u241b\\x.txt\n" in ingested.output


def test_ingest_and_lint_keep_each_row_one_line(goat_home: Path, tmp_path: Path) -> None:
    """The exact names ``s\\nrc\\u202e.md`` (ingested) and ``bro\\nken.md`` holding
    ``[[miss\\tit]]`` (linted): each row stays one line, the newline, tab and U+202E shown."""
    docs = write_tree(tmp_path / "docs", {"s\nrc\u202e.md": "a source\n"})
    vault = write_tree(tmp_path / "vault", {"bro\nken.md": "hello [[miss\tit]]\n"})
    assert goat("bind", "--pen", "w", "wiki", "--set", f"root={vault}").exit_code == 0
    ingested = goat("wiki", "ingest", str(docs), "--pen", "w")
    assert ingested.exit_code == 0, ingested.output
    assert "added   docs/s\u240arc\ufffd.md\n" in ingested.stdout, ingested.stdout
    lint = goat("wiki", "lint", "--pen", "w")
    rows = [line for line in lint.stdout.split("\n") if "ken" in line]
    assert rows and all("bro\u240aken.md" in r for r in rows), lint.stdout
    assert "\t" not in lint.stdout and "\u202e" not in lint.output, lint.output


def test_a_page_whose_name_is_not_utf8_makes_recall_incomplete(
    goat_home: Path, tmp_path: Path
) -> None:
    """The exact name ``bad\\xffname.md`` (bytes) in the wiki's folder: recall of a word it
    holds is not complete, and ``degraded`` names it with its byte escaped."""
    vault = write_tree(tmp_path / "vault", {"good.md": "kettle too\n"})
    with open(os.path.join(os.fsencode(vault), b"bad\xffname.md"), "wb") as f:
        f.write(b"kettle here\n")
    assert goat("bind", "--pen", "w", "wiki", "--set", f"root={vault}").exit_code == 0
    data = json.loads(goat("recall", "kettle", "--pen", "w", "--json").stdout)
    assert data["complete"] is False
    assert (
        "bad\\xffname.md: not searched, its name is not UTF-8, so it is not indexed"
        in (data["degraded"])
    )
    # every write rebuilds the wiki's index, which is UTF-8 text: that page gets no line
    assert goat("remember", "kettle note", "--pen", "w", "--title", "New one").exit_code == 0
    docs = write_tree(tmp_path / "docs", {"a.md": "a kettle source\n"})
    assert goat("wiki", "ingest", str(docs), "--pen", "w").exit_code == 0
    linted = goat("wiki", "lint", "--fix", "--pen", "w")  # exit 1: orphan pages remain
    assert linted.exit_code == 1 and "orphan-page" in linted.output
    assert "unexpected" not in linted.output
    index = (vault / "index.md").read_text(encoding="utf-8")
    assert "New one" in index and "bad" not in index


def test_a_page_the_index_cannot_hold_still_reports_its_bad_frontmatter(
    goat_home: Path, tmp_path: Path
) -> None:
    """``both\\xfd.md`` (bytes) with frontmatter ``title: [bad``: no index row keeps its
    problem, yet ``goat pages`` of the wiki names it, read as body."""
    vault = write_tree(tmp_path / "vault", {"good.md": "plain\n"})
    with open(os.path.join(os.fsencode(vault), b"both\xfd.md"), "wb") as f:
        f.write(b"---\ntitle: [bad\n---\nbody\n")
    assert goat("bind", "--pen", "w", "wiki", "--set", f"root={vault}").exit_code == 0
    data = json.loads(goat("pages", "--pen", "w", "--json").stdout)
    assert os.fsencode("both\udcfd.md") in [os.fsencode(i["path"]) for i in data["items"]]
    problem = [d for d in data["degraded"] if d.startswith("both\\xfd.md: ")]
    assert len(problem) == 1 and problem[0].endswith("; read as body"), data["degraded"]
