"""Truthful answers at the user's boundary (the ``goat`` CLI on the embedded markdown store),
each case with the exact input an adversarial run reported: a colon in a file name, titles
that read as paths, refreshing an operation id a markdown store never issued
(docs/design.md, Browsing and links; Writes and outcomes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from goat_core.cli import cli


@pytest.fixture
def goat_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    monkeypatch.setenv("GOAT_HOME", str(path))
    monkeypatch.delenv("GOAT_STRICT_PLUGINS", raising=False)
    return path


def goat(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def global_root(home: Path) -> Path:
    return home / "data" / "stores" / "global"


def test_a_colon_in_a_file_name_never_breaks_the_map(goat_home: Path, tmp_path: Path) -> None:
    """``x:y.md`` made ``goat map`` and ``map --html`` fail with exit 2."""
    assert goat("remember", "first note", "--title", "Plain").exit_code == 0
    (global_root(goat_home) / "x:y.md").write_text("links to [[Plain]]\n", encoding="utf-8")
    outline = goat("map")
    assert outline.exit_code == 0, outline.output
    assert "x:y.md" in outline.stdout and "Plain.md" in outline.stdout
    data = json.loads(goat("map", "--json").stdout)
    assert {"source": "x:y.md", "target": "Plain.md"}.items() <= data["edges"][0].items()
    html = goat("map", "--html", str(tmp_path / "map.html"))
    assert html.exit_code == 0, html.output
    assert "x:y.md" in (tmp_path / "map.html").read_text(encoding="utf-8")
    assert goat("show", "x:y.md").stdout.strip() == "links to [[Plain]]"
    assert goat("pages").exit_code == 0


@pytest.mark.parametrize("title", ["../x", "a/../../b", ".obsidian/x", ".git/config", "~/x"])
def test_whatever_remember_accepts_as_a_title_show_and_forget_find(
    goat_home: Path, title: str
) -> None:
    """``show '../x'`` and ``forget '../x'`` exited 2 (``a/../../b`` too);
    ``forget '.obsidian/x'`` answered not found (``.git/config``, ``~/x`` too)."""
    stored = json.loads(goat("remember", f"body of {title}", "--title", title, "--json").stdout)
    assert stored["status"] == "stored"
    shown = goat("show", title, "--json")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["id"] == stored["id"]
    forgot = goat("forget", title, "--json")
    assert forgot.exit_code == 0, forgot.output
    assert json.loads(forgot.stdout)["id"] == stored["id"]
    assert not (global_root(goat_home) / stored["path"]).exists()
    again = goat("forget", title)
    assert again.exit_code in (2, 3)  # gone: the same answer as any unknown reference


def test_a_path_like_title_never_forgets_a_same_named_note_elsewhere(goat_home: Path) -> None:
    root = global_root(goat_home)
    assert goat("remember", "keep me", "--title", "x").exit_code == 0
    assert (root / "x.md").exists()
    assert goat("forget", "notes/x").exit_code == 3
    assert goat("forget", "../x").exit_code == 2  # no such title: the path rule answers
    assert (root / "x.md").exists()


def test_refresh_of_an_unknown_operation_id_is_not_found(goat_home: Path) -> None:
    """``goat refresh made-up-id`` answered "queued" with exit 0."""
    result = goat("refresh", "made-up-id")
    assert result.exit_code == 3, result.output
    assert "made-up-id" in result.stderr and "queued" not in result.stdout


def test_a_symlink_loop_is_reported_by_the_link_that_closes_it(
    goat_home: Path, tmp_path: Path
) -> None:
    """With ``loopalias -> loopdir`` and ``loopdir/up -> ..``, the warning named the real
    folder ``loopdir`` as the cycle, and ``show`` of a listed path exited 3."""
    vault = tmp_path / "vault"
    (vault / "loopdir").mkdir(parents=True)
    (vault / "loopdir" / "inner.md").write_text("inner note\n", encoding="utf-8")
    (vault / "top.md").write_text("top note\n", encoding="utf-8")
    (vault / "loopdir" / "up").symlink_to("..")
    (vault / "loopalias").symlink_to("loopdir")
    assert goat("bind", "--pen", "lp", "markdown", "--set", f"root={vault}").exit_code == 0
    listed = goat("pages", "--pen", "lp", "--json")
    assert listed.exit_code == 0, listed.output
    paths = [item["path"] for item in json.loads(listed.stdout)["items"]]
    assert paths == ["loopdir/inner.md", "top.md"]
    mapped = goat("map", "--pen", "lp")
    assert mapped.exit_code == 0, mapped.output
    warnings = [line for line in mapped.stderr.splitlines() if "warning" in line]
    cycle = [line for line in warnings if "cycle" in line]
    assert len(cycle) == 1 and "loopdir/up" in cycle[0], warnings
    assert any("loopalias" in line and "already listed" in line for line in warnings), warnings
    assert not any(line.split("warning: ")[1].startswith("loopdir:") for line in warnings)
    for path in paths:
        assert goat("show", path, "--pen", "lp").exit_code == 0, path


def test_pages_is_degraded_when_the_walk_skipped_a_symlink_out_of_the_store(
    goat_home: Path, tmp_path: Path
) -> None:
    """``vault/leak.md -> ../outside/secret.md`` (and a folder link ``vault/leakdir ->
    ../outside``): ``goat pages`` said ``complete`` though the walk skipped both. The listing
    is not complete and names each skipped path; a link inside the store (``alias.md ->
    mine.md``) leaves it complete (docs/design.md, Browsing and links)."""
    vault, outside = tmp_path / "vault", tmp_path / "outside"
    vault.mkdir()
    outside.mkdir()
    (outside / "secret.md").write_text("not the vault's\n", encoding="utf-8")
    (vault / "mine.md").write_text("mine\n", encoding="utf-8")
    (vault / "alias.md").symlink_to("mine.md")
    assert goat("bind", "--pen", "lk", "markdown", "--set", f"root={vault}").exit_code == 0
    clean = json.loads(goat("pages", "--pen", "lk", "--json").stdout)
    assert clean["complete"] is True and clean["degraded"] == []

    (vault / "leak.md").symlink_to(outside / "secret.md")
    (vault / "leakdir").symlink_to(outside, target_is_directory=True)
    listed = goat("pages", "--pen", "lk", "--json")
    assert listed.exit_code == 0, listed.output
    data = json.loads(listed.stdout)
    assert [i["path"] for i in data["items"]] == ["alias.md", "mine.md"]
    assert data["complete"] is False
    assert "leak.md: skipped, symlink points outside the store" in data["degraded"]
    assert "leakdir: skipped, symlink points outside the store" in data["degraded"]
    shown = goat("pages", "--pen", "lk")
    assert "leak.md: skipped, symlink points outside the store" in shown.stderr


def _readme_host_example() -> str:
    from conftest import REPO

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Use it from a host", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_readme_host_example_runs_with_the_pen_unbound_then_bound(
    goat_home: Path, tmp_path: Path
) -> None:
    """The README's host example raised a traceback while its Pen was unbound."""
    import subprocess
    import sys

    script = tmp_path / "example.py"
    script.write_text(_readme_host_example(), encoding="utf-8")

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=120
        )

    unbound = run()
    assert unbound.returncode == 0, unbound.stderr
    assert "goat bind --pen docs" in unbound.stdout and "Traceback" not in unbound.stderr
    assert goat("bind", "--pen", "docs", "markdown").exit_code == 0
    bound = run()
    assert bound.returncode == 0, bound.stderr
    assert bound.stdout.startswith("ok ") and "'recall'" in bound.stdout


def _alias_vault(tmp_path: Path) -> Path:
    vault = tmp_path / "vault"
    vault.mkdir()
    notes = {
        "Zebra.md": "---\ntitle: Zebra notes\naliases: [Stripes, Equus]\n---\nbody Z\n",
        "Horse.md": "---\naliases: Equus\n---\nbody H\n",
        "Tiger.md": "---\naliases: [Zebra notes]\n---\nbody T\n",
    }
    for name, text in notes.items():
        (vault / name).write_text(text, encoding="utf-8")
    return vault


def test_show_finds_a_note_by_a_frontmatter_alias(goat_home: Path, tmp_path: Path) -> None:
    """``goat show`` ignored frontmatter ``aliases``, which Obsidian resolves."""
    vault = _alias_vault(tmp_path)
    assert goat("bind", "--pen", "al", "markdown", "--set", f"root={vault}").exit_code == 0
    assert goat("show", "Stripes", "--pen", "al").stdout == "body Z\n"  # one of a list
    assert goat("show", "stripes", "--pen", "al").stdout == "body Z\n"  # case-insensitive
    shown = json.loads(goat("show", "STRIPES", "--pen", "al", "--json").stdout)
    assert shown["id"] == "Zebra.md"
    # the title wins over another note's alias, as Obsidian resolves [[Zebra notes]]
    assert goat("show", "Zebra notes", "--pen", "al").stdout == "body Z\n"
    both = goat("show", "equus", "--pen", "al")  # a list on one, a single string on the other
    assert both.exit_code == 3
    assert both.stdout == ""
    assert both.stderr == "goat: error: 2 pages match 'equus': Horse.md, Zebra.md; use a path\n"
    missing = goat("show", "Stripe", "--pen", "al")
    assert missing.exit_code == 3 and "no page matches 'Stripe'" in missing.stderr


def test_the_host_api_finds_a_note_by_an_alias(tmp_path: Path) -> None:
    import goat_markdown.plugin
    from goat_core.contract import Scope
    from goat_core.host import Chat, GoatHome, SyncMemoryHost
    from goat_core.plugins import PluginSettings, Registry, make_plugin_manager, register_plugin

    vault = _alias_vault(tmp_path)
    pm = make_plugin_manager(PluginSettings(autoload=False))
    assert register_plugin(pm, goat_markdown.plugin, "markdown")
    host = SyncMemoryHost(home=GoatHome.at(tmp_path / "home"), registry=Registry(pm))
    try:
        host.bind(Scope.pen("al"), "markdown", {"root": str(vault)})
        memory = host.context_for(Chat(project_id="al"))  # as MCP show does
        assert memory.get_page("stripes").id == "Zebra.md"
        from goat_core.errors import Ambiguous

        with pytest.raises(Ambiguous) as info:
            memory.get_page("Equus")
        assert info.value.candidates == ["Horse.md", "Zebra.md"]
    finally:
        host.close()


def _goat_on_a_terminal(args: list[str], env: dict[str, str]) -> str:
    """Run ``goat`` with its stdout on a pseudo-terminal; what it printed there."""
    import os
    import pty
    import subprocess
    import sys

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "goat_core.cli", *args],
        stdout=slave,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the other end closed
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.wait(timeout=120) == 0
    return out.decode("utf-8").replace("\r\n", "\n")


def test_recall_snippets_bold_on_a_terminal_plain_in_a_pipe_spans_in_json(
    goat_home: Path, tmp_path: Path
) -> None:
    """Snippets printed raw ``==…==`` markers in a terminal."""
    import os
    import subprocess
    import sys

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Sync.md").write_text("Always ==sync== twice; sync again.\n", encoding="utf-8")
    assert goat("bind", "--global", "markdown", "--set", f"root={vault}").exit_code == 0
    plain = "Always ==sync== twice; sync again."  # the note's own == stay: they are its text
    data = json.loads(goat("recall", "sync", "--json").stdout)
    assert [(i["snippet"], i["snippet_spans"]) for i in data["items"]] == [
        (plain, [[9, 13], [23, 27]])
    ]
    env = {
        **{k: v for k, v in os.environ.items() if k != "NO_COLOR"},
        "GOAT_HOME": str(goat_home),
        "GOAT_LOAD_PLUGINS": "markdown",
    }
    piped = subprocess.run(
        [sys.executable, "-m", "goat_core.cli", "recall", "sync"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert piped.stdout.splitlines()[1].endswith(f"  Sync.md  {plain}")
    bold = "Always ==\x1b[1msync\x1b[0m== twice; \x1b[1msync\x1b[0m again."
    shown = _goat_on_a_terminal(["recall", "sync"], env)
    assert shown.splitlines()[1].endswith(f"  Sync.md  {bold}")
    no_color = _goat_on_a_terminal(["recall", "sync"], {**env, "NO_COLOR": "1"})
    assert no_color.splitlines()[1].endswith(f"  Sync.md  {plain}")


def test_the_recall_tool_gives_the_model_plain_snippets_and_spans(tmp_path: Path) -> None:
    """The model tool's result (which ``goat serve`` sends as MCP structured content) carries
    the plain snippet and its spans, as ``recall --json`` does."""
    import anyio

    import goat_markdown.plugin
    from goat_core.contract import Scope
    from goat_core.host import Chat, GoatHome, SyncMemoryHost
    from goat_core.plugins import PluginSettings, Registry, make_plugin_manager, register_plugin

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Sync.md").write_text("Always ==sync== twice; sync again.\n", encoding="utf-8")
    pm = make_plugin_manager(PluginSettings(autoload=False))
    assert register_plugin(pm, goat_markdown.plugin, "markdown")
    host = SyncMemoryHost(home=GoatHome.at(tmp_path / "home"), registry=Registry(pm))
    try:
        host.bind(Scope.pen("sn"), "markdown", {"root": str(vault)})
        tools = host.context_for(Chat(project_id="sn")).tools()
        result = anyio.run(tools.call, "recall", {"query": "sync"})
    finally:
        host.close()
    item = result["items"][0]
    assert item["snippet"] == "Always ==sync== twice; sync again."
    assert item["snippet_spans"] == [[9, 13], [23, 27]]


def test_a_note_whose_name_is_not_utf8_makes_recall_incomplete(
    goat_home: Path, tmp_path: Path
) -> None:
    """The exact name ``bad\\xffname.md`` (bytes): the index cannot hold it, so recall of a
    word it holds is not complete and names it, in the CLI run and in a long-lived host
    whose watcher sees the file appear; once it is renamed, recall is complete again."""
    import os
    import time

    from goat_core.host import Chat, GoatHome, SyncMemoryHost

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "good.md").write_text("bytes too\n", encoding="utf-8")
    bad = os.path.join(os.fsencode(vault), b"bad\xffname.md")
    with open(bad, "wb") as f:
        f.write(b"bytes here\n")
    assert goat("bind", "--pen", "u8", "markdown", "--set", f"root={vault}").exit_code == 0
    data = json.loads(goat("recall", "bytes", "--pen", "u8", "--json").stdout)
    assert [i["path"] for i in data["items"]] == ["good.md"] and data["complete"] is False
    assert data["degraded"] == [
        "bad\\xffname.md: not searched, its name is not UTF-8, so it is not indexed"
    ]

    os.rename(bad, vault / "renamed.md")
    host = SyncMemoryHost(home=GoatHome.from_env())
    try:
        memory = host.context_for(Chat(project_id="u8"))
        for _ in range(3):  # a full scan, then the watcher is on
            whole = memory.recall("bytes")
        assert whole.complete and whole.degraded == ()
        assert sorted(i.path for i in whole.items) == ["good.md", "renamed.md"]
        with open(os.path.join(os.fsencode(vault), b"late\xfe.md"), "wb") as f:
            f.write(b"bytes late\n")
        deadline = time.monotonic() + 10
        while (late := memory.recall("bytes")).complete and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not late.complete
        assert "late\\xfe.md: not searched" in late.degraded[0], late.degraded
        os.unlink(os.path.join(os.fsencode(vault), b"late\xfe.md"))  # the watcher sees it go
        deadline = time.monotonic() + 10
        while not (gone := memory.recall("bytes")).complete and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gone.complete and gone.degraded == ()
    finally:
        host.close()


def _bound_with(tmp_path: Path, name: bytes, data: bytes) -> Path:
    """A vault holding ``good.md`` and the file ``name`` (bytes, maybe not UTF-8) holding
    ``data``, bound to the Pen ``u8``."""
    import os

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "good.md").write_text("plain\n", encoding="utf-8")
    with open(os.path.join(os.fsencode(vault), name), "wb") as f:
        f.write(data)
    assert goat("bind", "--pen", "u8", "markdown", "--set", f"root={vault}").exit_code == 0
    return vault


def test_a_note_whose_name_is_not_utf8_is_listed_in_json_that_round_trips(
    goat_home: Path, tmp_path: Path
) -> None:
    """The exact name ``bad\\xffname.md`` (bytes) in ``goat pages --json`` and ``goat map
    --json``: the output is ASCII JSON, the name escaped as ``\\udcff``, and ``json.loads``
    gives back the string that ``os.fsencode`` turns into the file's bytes."""
    import os

    _bound_with(tmp_path, b"bad\xffname.md", b"bytes here\n")
    for command in ("pages", "map"):
        result = goat(command, "--pen", "u8", "--json")
        assert result.exit_code == 0, result.output
        assert result.stdout.isascii() and '"bad\\udcffname.md"' in result.stdout
        data = json.loads(result.stdout)
        rows = data["items"] if command == "pages" else data["nodes"]
        assert sorted(os.fsencode(r["path"]) for r in rows) == [b"bad\xffname.md", b"good.md"]


def test_names_that_are_not_utf8_page_open_and_export_with_a_reason(
    goat_home: Path, tmp_path: Path
) -> None:
    """The exact names ``bad\\xffname.md``, ``dir\\xfe/inner.md`` and a symlink
    ``link\\xfd.md`` pointing out of the store: a listing paged across them continues, the
    skipped link is named with its byte escaped, the note opens by its exact name, and an
    export writes the rest and names each note it could not (its manifest is UTF-8)."""
    import os

    vault = _bound_with(tmp_path, b"bad\xffname.md", b"bytes here\n")
    (tmp_path / "outside.md").write_text("away\n", encoding="utf-8")
    raw = os.fsencode(vault)
    os.mkdir(os.path.join(raw, b"dir\xfe"))
    with open(os.path.join(raw, b"dir\xfe", b"inner.md"), "wb") as f:
        f.write(b"inner bytes\n")
    os.symlink(os.fsencode(tmp_path / "outside.md"), os.path.join(raw, b"link\xfd.md"))

    seen, cursor = [], None
    for _ in range(4):
        args = ["pages", "--pen", "u8", "--limit", "1", "--json"]
        result = goat(*args, *(["--cursor", cursor] if cursor else []))
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        seen += [os.fsencode(i["path"]) for i in data["items"]]
        assert "link\\xfd.md: skipped, symlink points outside the store" in data["degraded"]
        cursor = data["next_cursor"]
        if cursor is None:
            break
    assert seen == [b"bad\xffname.md", b"dir\xfe/inner.md", b"good.md"]

    shown = goat("show", "--pen", "u8", os.fsdecode(b"bad\xffname.md"))
    assert shown.exit_code == 0 and "bytes here" in shown.stdout

    out = tmp_path / "out"
    exported = goat("export", "--pen", "u8", str(out), "--json")
    report = json.loads(exported.stdout)
    assert [i["target"] for i in report["items"]] == ["good.md"]
    assert report["complete"] is False
    why = "its name is not UTF-8, which a bundle's manifest cannot hold"
    assert f"bad\\xffname.md: not exported, {why}" in report["degraded"]
    assert f"dir\\xfe/inner.md: not exported, {why}" in report["degraded"]
    manifest = json.loads((out / "goat-export.json").read_text(encoding="utf-8"))
    assert [p["path"] for p in manifest["pages"]] == ["good.md"]
    assert sorted(os.listdir(out)) == ["goat-export.json", "good.md"]


def test_names_and_text_that_are_not_utf8_are_refused_or_escaped_on_write(
    goat_home: Path, tmp_path: Path
) -> None:
    """``goat copy`` of ``bad\\xffname.md`` is refused whole (its provenance could not be
    written as YAML); ``goat map --html`` writes the name as its escape; ``goat remember``
    of text or a title holding the byte 0xff (a lone surrogate in argv) is bad input."""
    import os

    _bound_with(tmp_path, b"bad\xffname.md", b"bytes here\n")
    pen = tmp_path / "pen"
    pen.mkdir()
    assert goat("bind", "--pen", "p1", "markdown", "--set", f"root={pen}").exit_code == 0

    copied = goat(
        "copy", os.fsdecode(b"bad\xffname.md"), "good.md", "--pen", "u8", "--to-pen", "p1"
    )
    assert copied.exit_code == 2
    assert "bad\\xffname.md: its name is not UTF-8" in copied.output
    assert os.listdir(pen) == []  # nothing was copied, not even good.md

    html = tmp_path / "map.html"
    assert goat("map", "--pen", "u8", "--html", str(html)).exit_code == 0
    assert "bad\\udcffname" in html.read_text(encoding="utf-8")

    for args in (["zebra" + os.fsdecode(b"\xff")], ["ok", "--title", os.fsdecode(b"odd\xfe")]):
        wrote = goat("remember", *args, "--pen", "p1")
        assert wrote.exit_code == 2, wrote.output
        assert "is not valid UTF-8" in wrote.output and "nothing was stored" in wrote.output
    assert os.listdir(pen) == []


def test_a_note_the_index_cannot_hold_still_reports_its_bad_frontmatter(
    goat_home: Path, tmp_path: Path
) -> None:
    """``both\\xfd.md`` (bytes) with frontmatter ``title: [bad``: the index cannot keep its
    problem, yet ``goat pages`` names it, read as body (the listing itself is whole)."""
    import os

    _bound_with(tmp_path, b"both\xfd.md", b"---\ntitle: [bad\n---\nbody\n")
    data = json.loads(goat("pages", "--pen", "u8", "--json").stdout)
    assert [os.fsencode(i["path"]) for i in data["items"]] == [b"both\xfd.md", b"good.md"]
    assert data["complete"] is True
    assert len(data["degraded"]) == 1
    assert data["degraded"][0].startswith("both\\xfd.md: ")
    assert data["degraded"][0].endswith("; read as body")
