"""Embedders at the user's boundary (the ``goat`` CLI, with an embedder plugin installed as
a real entry point): a mistyped ``--set embedder=NAME`` is refused at bind; a binding whose
embedder is no longer installed warns at ``check`` and ``status`` and recalls keyword
results marked degraded; the embedded default stays keyword-only (docs/design.md, Reads
and truth)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _fake_embed_site import install_fake_embedder
from _lock_holder import lock_held_elsewhere
from click.testing import CliRunner, Result

from goat_core.cli import cli

NOTES = {
    "Sync across devices.md": "# Sync across devices\n\nKeep a mobile and a computer in step.\n",
    "Phone tips.md": "# Phone tips\n\nThe phone app has a toolbar.\n",
}


@pytest.fixture
def goat_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    monkeypatch.setenv("GOAT_HOME", str(path))
    monkeypatch.setenv("GOAT_FAKE_EMBED_LOG", str(tmp_path / "loads.log"))
    # exactly these plugins, whatever else this environment has installed
    monkeypatch.setenv("GOAT_LOAD_PLUGINS", "markdown,fakeembed")
    return path


@pytest.fixture
def fake_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = install_fake_embedder(tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    return site


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    for name, text in NOTES.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def goat(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def test_bind_refuses_an_embedder_that_is_not_installed(
    goat_home: Path, fake_site: Path, vault: Path
) -> None:
    result = goat("bind", "--pen", "docs", "markdown", "--set", f"root={vault}",
                  "--set", "embedder=fkae")  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "embedder 'fkae' is not installed (installed: fake;" in result.stderr
    assert "`goat embedders` lists them" in result.stderr
    status = json.loads(goat("status", "--json").stdout)
    assert [r["scope"] for r in status["bindings"] if r["provider"]] == ["global"]  # nothing saved
    ok = goat("bind", "--pen", "docs", "markdown", "--set", f"root={vault}",
              "--set", "embedder=fake")  # fmt: skip
    assert ok.exit_code == 0, ok.output
    # the same rule for a draft tested with check
    draft = goat("check", "--pen", "docs", "--set", "embedder=nope")
    assert draft.exit_code == 2 and "embedder 'nope' is not installed" in draft.stderr


def test_a_binding_whose_embedder_is_gone_warns_and_recalls_degraded(
    goat_home: Path, tmp_path: Path, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = install_fake_embedder(tmp_path / "site")
    with monkeypatch.context() as m:
        m.syspath_prepend(str(site))
        bound = goat("bind", "--pen", "docs", "markdown", "--set", f"root={vault}",
                     "--set", "embedder=fake")  # fmt: skip
        assert bound.exit_code == 0, bound.output
        semantic = json.loads(goat("recall", "laptop", "--pen", "docs", "--json").stdout)
        assert [i["path"] for i in semantic["items"]][:1] == ["Sync across devices.md"]
        assert semantic["degraded"] == []
        listed = json.loads(goat("status", "--json").stdout)
        row = next(r for r in listed["bindings"] if r["scope"] == "pen:docs")
        assert row["reason"] == f"markdown notes in {vault}; semantic recall with embedder 'fake'"
    # the plugin is uninstalled: its module and entry point are gone
    monkeypatch.delitem(__import__("sys").modules, "goat_fakeembed", raising=False)
    status = json.loads(goat("status", "--json").stdout)
    row = next(r for r in status["bindings"] if r["scope"] == "pen:docs")
    assert row["tone"] == "warn"
    assert "embedder 'fake' is not installed (installed: none;" in row["reason"]
    check = goat("check", "--pen", "docs")
    assert check.exit_code == 6, check.output
    assert "embedder 'fake' is not installed" in check.stdout + check.stderr
    recalled = goat("recall", "phone", "--pen", "docs", "--json")
    assert recalled.exit_code == 0, recalled.output
    data = json.loads(recalled.stdout)
    assert [i["path"] for i in data["items"]] == ["Phone tips.md"]
    assert data["complete"] is False
    assert data["degraded"] == [
        "semantic recall with embedder 'fake' is unavailable (no embedder named 'fake' is "
        "installed (installed: none)); these are keyword results only"
    ]
    text = goat("recall", "phone", "--pen", "docs")
    assert "goat: warning: semantic recall with embedder 'fake' is unavailable" in text.stderr


def test_the_embedded_default_stays_keyword_only(
    goat_home: Path, fake_site: Path, tmp_path: Path
) -> None:
    assert goat("remember", "The phone app has a toolbar", "--title", "Phone").exit_code == 0
    result = json.loads(goat("recall", "phone toolbar", "--json").stdout)
    assert [i["path"] for i in result["items"]] == ["Phone.md"] and result["degraded"] == []
    assert not (tmp_path / "loads.log").exists()  # no model was loaded


def test_the_first_semantic_recall_says_it_is_embedding_on_stderr_only(
    goat_home: Path, fake_site: Path, tmp_path: Path
) -> None:
    vault = tmp_path / "many"
    vault.mkdir()
    for i in range(25):
        (vault / f"note {i:02}.md").write_text(f"zqembed entry {i}\n", encoding="utf-8")
    assert goat("bind", "--pen", "docs", "markdown", "--set", f"root={vault}",
                "--set", "embedder=fake").exit_code == 0  # fmt: skip
    first = goat("recall", "zqembed", "--pen", "docs", "--json")
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["items"]  # stdout is the JSON and nothing else
    # not a terminal: one line, no bar
    assert first.stderr == "goat: embedding 25 notes for semantic recall…\n"
    again = goat("recall", "zqembed", "--pen", "docs", "--limit", "50")
    assert again.exit_code == 0 and again.stderr == ""  # nothing left to embed
    for i in range(21):
        (vault / f"note {i:02}.md").write_text(f"zqembed changed {i}\n", encoding="utf-8")
    reindexed = goat("reindex", "--pen", "docs", "--json")
    assert reindexed.exit_code == 0, reindexed.output
    counts = json.loads(reindexed.stdout)
    assert counts["embedded"] == 21 and counts["updated"] == 21
    assert reindexed.stderr == "goat: embedding 21 notes for semantic recall…\n"
    (vault / "note 00.md").write_text("zqembed once more\n", encoding="utf-8")
    small = goat("reindex", "--pen", "docs")
    assert small.exit_code == 0 and small.stderr == ""  # one note: below the threshold
    assert "embedded 1" in small.stdout


def test_reindex_says_when_the_embedder_is_gone(
    goat_home: Path, tmp_path: Path, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as m:
        m.syspath_prepend(str(install_fake_embedder(tmp_path / "site")))
        assert goat("bind", "--pen", "docs", "markdown", "--set", f"root={vault}",
                    "--set", "embedder=fake").exit_code == 0  # fmt: skip
    monkeypatch.delitem(__import__("sys").modules, "goat_fakeembed", raising=False)
    result = goat("reindex", "--pen", "docs")
    assert result.exit_code == 6, result.output
    assert (
        "the keyword index of" in result.stderr
        and "is up to date, but semantic recall" in result.stderr
    )
    assert "with embedder 'fake' is unavailable" in result.stderr


def test_recall_and_reindex_while_another_process_embeds_the_store(
    goat_home: Path, fake_site: Path, vault: Path
) -> None:
    """``goat recall`` and ``goat reindex`` while another process (a ``goat serve``, say)
    holds the store's embedding lock: the recall answers at once, degraded with the reason;
    the reindex exits 5 saying the keyword index is up to date; nothing is embedded twice."""
    from goat_core.host import GoatHome

    assert goat("bind", "--pen", "docs", "markdown", "--set", f"root={vault}",
                "--set", "embedder=fake").exit_code == 0  # fmt: skip
    lock = GoatHome.from_env(goat_home).lock_path(vault.resolve(), "search-embed-fake")
    with lock_held_elsewhere(lock):
        busy = goat("recall", "phone toolbar", "--pen", "docs", "--json")
        assert busy.exit_code == 0, busy.output
        answer = json.loads(busy.stdout)
        assert answer["items"][0]["title"] == "Phone tips" and answer["complete"] is False
        assert answer["degraded"][0].startswith("another process is embedding notes of")
        reindexed = goat("reindex", "--pen", "docs")
        assert reindexed.exit_code == 5, reindexed.output
        assert "is up to date, but another process is embedding" in reindexed.stderr
        assert "run reindex again when it is done" in reindexed.stderr
    done = goat("recall", "between laptop and desktop", "--pen", "docs", "--json")
    assert done.exit_code == 0 and json.loads(done.stdout)["degraded"] == [], done.output


def test_more_than_shown_says_how_to_see_the_rest(goat_home: Path, tmp_path: Path) -> None:
    """``goat recall`` that is not complete says to raise ``--limit`` below its largest value,
    and at ``--limit 100`` (the largest) to narrow the query instead."""
    vault = tmp_path / "many"
    vault.mkdir()
    for i in range(120):
        (vault / f"note {i:03}.md").write_text(f"zqmany entry {i}\n", encoding="utf-8")
    assert goat("bind", "--pen", "docs", "markdown", "--set", f"root={vault}").exit_code == 0
    some = goat("recall", "zqmany", "--pen", "docs", "--limit", "10")
    assert some.exit_code == 0 and "goat: more matched than shown (raise --limit)" in some.stderr
    most = goat("recall", "zqmany", "--pen", "docs", "--limit", "100")
    assert most.exit_code == 0 and "(raise --limit)" not in most.stderr
    assert "goat: more matched than shown (a narrower query shows them)" in most.stderr


def test_recall_with_stderr_closed_still_answers(
    goat_home: Path, fake_site: Path, tmp_path: Path
) -> None:
    """``goat recall ... 2>&-`` on a store that needs embedding (its progress line has no
    stderr to go to): the answer on stdout, exit 0 (it was an internal error, exit 1)."""
    import os
    import subprocess
    import sys

    vault = tmp_path / "many"
    vault.mkdir()
    for i in range(25):
        (vault / f"note {i:02}.md").write_text(f"zqclosed entry {i}\n", encoding="utf-8")
    assert goat("bind", "--pen", "docs", "markdown", "--set", f"root={vault}",
                "--set", "embedder=fake").exit_code == 0  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake_site), *sys.path])}
    for args in (["--json"], []):
        done = subprocess.run(
            [sys.executable, "-c", "from goat_core.cli import main; main()",
             "recall", "zqclosed", "--pen", "docs", *args],
            env=env, capture_output=False, stdout=subprocess.PIPE, text=True, timeout=120,
            preexec_fn=lambda: os.close(2),
        )  # fmt: skip
        assert done.returncode == 0, done.stdout
        assert "zqclosed" in done.stdout
        vectors = list((goat_home / "data" / "index").glob("*vectors*"))
        assert vectors
        for f in vectors:  # the next round embeds again
            f.unlink()
