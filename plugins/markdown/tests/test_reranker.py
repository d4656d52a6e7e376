"""The reranker point at the user's boundary (docs/hooks.md, goat_register_rerankers): a
folder store bound with ``--set reranker=NAME`` reorders the first ``RERANK_DEPTH`` notes of
each recall, through the ``goat`` CLI (the test rerankers of
``goat_core.testing.rerankers`` installed as a real entry point) and through the Python API.
A reranker that is not installed or has no weights is refused at bind; one failing at recall
time leaves the unreranked order, with the reason in ``degraded``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from _fake_embed_site import install_fake_embedder
from click.testing import CliRunner, Result

from goat_core.cli import cli
from goat_core.contract import Scope
from goat_core.filestore.search import RERANK_DEPTH
from goat_core.host import Chat, GoatHome, SyncMemoryHost
from goat_core.plugins import PluginSettings, Registry, register_plugin
from goat_core.testing import rerankers

#: More notes than the reranker reorders, each matching ``zqrank`` with its own weight.
COUNT = RERANK_DEPTH + 5
FAILED = (
    "reranking with reranker 'failing' failed (RuntimeError: "
    f"{rerankers.FAILURE}); these are in their unreranked order"
)


def install_test_rerankers(site: Path) -> Path:
    """Publish ``goat_core.testing.rerankers`` as the installed plugin ``testrerank``."""
    site.mkdir(parents=True, exist_ok=True)
    (site / "goat_testrerank.py").write_text(
        "from goat_core.testing.rerankers import goat_register_rerankers  # noqa: F401\n",
        encoding="utf-8",
    )
    info = site / "goat_testrerank-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: goat-testrerank\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[goat_core.plugins]\ntestrerank = goat_testrerank\n")
    return site


def write_vault(root: Path) -> Path:
    root.mkdir()
    for i in range(COUNT):
        words = " ".join(["zqrank"] * (1 + i % 7))
        (root / f"note {i:02}.md").write_text(f"{words} entry {i} filler text\n", encoding="utf-8")
    return root


@pytest.fixture
def goat_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    monkeypatch.setenv("GOAT_HOME", str(path))
    monkeypatch.setenv("GOAT_LOAD_PLUGINS", "markdown,testrerank")
    monkeypatch.syspath_prepend(str(install_test_rerankers(tmp_path / "site")))
    return path


def goat(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def recall(*args: str) -> dict[str, Any]:
    result = goat("recall", *args, "--pen", "docs", "--json")
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def bind(vault: Path, *settings: str) -> Result:
    sets = [a for s in settings for a in ("--set", s)]
    return goat("bind", "--pen", "docs", "markdown", "--set", f"root={vault}", *sets)


def paths(data: dict[str, Any]) -> list[str]:
    return [i["path"] for i in data["items"]]


def test_cli_recall_reranks_the_first_notes_only(goat_home: Path, tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault")
    assert bind(vault).exit_code == 0
    base = recall("zqrank", "--limit", str(COUNT))
    assert len(base["items"]) == COUNT and base["complete"] is True
    assert bind(vault, "reranker=reverse").exit_code == 0
    moved = recall("zqrank", "--limit", str(COUNT))
    top, rest = paths(base)[:RERANK_DEPTH], paths(base)[RERANK_DEPTH:]
    assert paths(moved) == top[::-1] + rest
    assert moved["complete"] is True and moved["degraded"] == []
    scores = [i["score"] for i in moved["items"]]
    assert scores == [i["score"] for i in base["items"]]  # each position keeps its score
    # a smaller limit cuts the reranked order; more matched than shown: not complete
    few = recall("zqrank", "--limit", "5")
    assert paths(few) == top[::-1][:5] and few["complete"] is False
    status = json.loads(goat("status", "--json").stdout)
    row = next(r for r in status["bindings"] if r["scope"] == "pen:docs")
    assert row["reason"].endswith("; reranked by reranker 'reverse'"), row


def test_cli_lists_the_installed_rerankers(goat_home: Path) -> None:
    listed = goat("rerankers", "--json")
    assert listed.exit_code == 0, listed.output
    rows = {r["name"]: r for r in json.loads(listed.stdout)["rerankers"]}
    assert {"absent", "reverse"} <= set(rows)
    assert rows["absent"]["weights"] == "not on disk" and rows["absent"]["offline"] is False
    assert rows["absent"]["detail"] == "not on disk: goat_core.testing.rerankers provides them"
    assert rows["reverse"]["weights"] == "on disk" and rows["reverse"]["offline"] is True
    assert list(rows["reverse"]) == [
        "name",
        "languages",
        "weights",
        "detail",
        "offline",
        "source",
        "description",
    ]
    table = goat("rerankers")
    assert table.exit_code == 0 and table.stdout.startswith("NAME")
    assert "not on disk: goat_core.testing.rerankers provides them" in table.stdout


def test_cli_rerankers_without_any_installed(
    goat_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOAT_LOAD_PLUGINS", "markdown")
    empty = goat("rerankers")
    assert empty.exit_code == 0 and empty.stdout.startswith("no rerankers installed")
    assert json.loads(goat("rerankers", "--json").stdout) == {"rerankers": []}


def test_cli_bind_refuses_a_reranker_it_cannot_use(goat_home: Path, tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault")
    typo = bind(vault, "reranker=revrese")
    assert typo.exit_code == 2, typo.output
    assert (
        "reranker 'revrese' is not installed (installed: absent, failing, overlap, reverse, slow)"
        in typo.stderr
    )
    absent = bind(vault, "reranker=absent")
    assert absent.exit_code == 2, absent.output
    assert "the weights of reranker 'absent' are not on disk" in absent.stderr
    status = json.loads(goat("status", "--json").stdout)
    assert [r["scope"] for r in status["bindings"] if r["provider"]] == ["global"]  # none saved
    assert bind(vault, "reranker=overlap").exit_code == 0
    draft = goat("check", "--pen", "docs", "--set", "reranker=nope")
    assert draft.exit_code == 2 and "reranker 'nope' is not installed" in draft.stderr


def test_cli_a_failing_reranker_keeps_the_order_degraded(goat_home: Path, tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault")
    assert bind(vault).exit_code == 0
    base = recall("zqrank", "--limit", str(COUNT))
    assert bind(vault, "reranker=failing").exit_code == 0
    failed = recall("zqrank", "--limit", str(COUNT))
    assert paths(failed) == paths(base)
    assert failed["complete"] is True  # every match is shown, in the ranking's order
    assert failed["degraded"] == [FAILED]
    text = goat("recall", "zqrank", "--pen", "docs")
    assert text.exit_code == 0 and "goat: warning: reranking with reranker 'failing'" in text.stderr


def test_cli_a_binding_whose_reranker_is_gone_warns_and_recalls_degraded(
    goat_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = write_vault(tmp_path / "vault")
    assert bind(vault, "reranker=reverse").exit_code == 0
    monkeypatch.setenv("GOAT_LOAD_PLUGINS", "markdown")  # the plugin is gone
    status = json.loads(goat("status", "--json").stdout)
    row = next(r for r in status["bindings"] if r["scope"] == "pen:docs")
    assert row["tone"] == "warn"
    assert row["reason"] == (
        "reranker 'reverse' is not installed (installed: none): recall answers in its "
        "unreranked order, degraded"
    )
    check = goat("check", "--pen", "docs")
    assert check.exit_code == 6
    assert "reranker 'reverse' is not installed" in check.stdout + check.stderr
    data = recall("zqrank")
    assert len(data["items"]) == 10 and data["complete"] is False
    assert data["degraded"] == [
        "reranking with reranker 'reverse' failed (NotFound: no reranker named 'reverse' is "
        "installed (installed: none)); these are in their unreranked order"
    ]


# -- the Python API -------------------------------------------------------------------------
def _host(home: GoatHome, *installed: str) -> SyncMemoryHost:
    """A host with markdown, the ``installed`` entry points and the test rerankers."""
    registry = Registry.load(PluginSettings(load=("markdown", *installed), strict=True))
    assert register_plugin(registry.pm, rerankers, "testrerank")
    return SyncMemoryHost(home=home, registry=registry)


NOTES = {
    "Apples.md": "# Apples\n\nApple apple apple. Apples grow on trees.\n",
    "Pie.md": "# Pie\n\nAn apple pie recipe with cinnamon and butter.\n",
    "Cider.md": "# Cider\n\nPress apple juice for cider.\n",
}


def test_api_recall_reranks_by_the_rerankers_scores(tmp_path: Path) -> None:
    """``overlap`` puts the note holding the most query words first; it reads each note's
    title and body."""
    home = GoatHome.at(tmp_path / "home")
    root = tmp_path / "notes"
    root.mkdir()
    for name, text in NOTES.items():
        (root / name).write_text(text, encoding="utf-8")
    query = "apple pie cinnamon butter"
    with _host(home) as host:
        host.bind(Scope.pen("m"), "markdown", {"root": str(root)})
        plain = host.context_for(Chat("m")).recall("apple")
        assert plain.items[0].path == "Apples.md"
        host.bind(Scope.pen("m"), "markdown", {"root": str(root), "reranker": "overlap"})
        del rerankers.CALLS[:]
        result = host.context_for(Chat("m")).recall("apple")
        assert result.items[0].path == "Apples.md"  # one word: ties keep order
        result = host.context_for(Chat("m")).recall(query)
    assert result.items[0].path == "Pie.md"
    assert result.degraded == ()
    name, asked, texts = rerankers.CALLS[-1]
    assert (name, asked) == ("overlap", query)
    assert "Pie\n\n# Pie\n\nAn apple pie recipe with cinnamon and butter." in texts


def test_api_reranks_the_hybrid_ranking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With an embedder and a reranker, the fused ranking is what the reranker reorders."""
    monkeypatch.syspath_prepend(str(install_fake_embedder(tmp_path / "site")))
    home = GoatHome.at(tmp_path / "home")
    root = write_vault(tmp_path / "vault")
    with _host(home, "fakeembed") as host:
        settings: dict[str, Any] = {"root": str(root), "embedder": "fake"}
        host.bind(Scope.pen("m"), "markdown", settings)
        base = host.context_for(Chat("m")).recall("zqrank entry", limit=COUNT)
        host.bind(Scope.pen("m"), "markdown", {**settings, "reranker": "reverse"})
        moved = host.context_for(Chat("m")).recall("zqrank entry", limit=COUNT)
    assert base.degraded == () and moved.degraded == ()
    order = [i.path for i in base.items]
    assert [i.path for i in moved.items] == order[:RERANK_DEPTH][::-1] + order[RERANK_DEPTH:]
    assert moved.complete is base.complete
    sys.modules.pop("goat_fakeembed", None)


def test_api_a_failing_reranker_never_loses_the_recall(tmp_path: Path) -> None:
    home = GoatHome.at(tmp_path / "home")
    root = write_vault(tmp_path / "vault")
    with _host(home) as host:
        host.bind(Scope.pen("m"), "markdown", {"root": str(root)})
        base = host.context_for(Chat("m")).recall("zqrank", limit=COUNT)
        host.bind(Scope.pen("m"), "markdown", {"root": str(root), "reranker": "failing"})
        ctx = host.context_for(Chat("m"))
        failed = ctx.recall("zqrank", limit=COUNT)
        assert [i.path for i in failed.items] == [i.path for i in base.items]
        assert failed.complete is True and failed.degraded == (FAILED,)
        health = ctx.check()
    assert health.ok and "reranked by reranker 'failing'" in (health.reason or "")


def test_api_a_reranker_past_its_deadline_keeps_the_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reranker that does not answer within RERANK_SECONDS leaves the order, degraded; a
    recall while it still runs does not wait for it again."""
    import time

    import goat_core.filestore.search as search

    monkeypatch.setattr(search, "RERANK_SECONDS", 0.2)
    home = GoatHome.at(tmp_path / "home")
    root = write_vault(tmp_path / "vault")
    with _host(home) as host:
        host.bind(Scope.pen("m"), "markdown", {"root": str(root)})
        base = host.context_for(Chat("m")).recall("zqrank", limit=COUNT)
        host.bind(Scope.pen("m"), "markdown", {"root": str(root), "reranker": "slow"})
        ctx = host.context_for(Chat("m"))
        started = time.monotonic()
        late = ctx.recall("zqrank", limit=COUNT)
        again = ctx.recall("zqrank", limit=COUNT)
        took = time.monotonic() - started
    assert [i.path for i in late.items] == [i.path for i in base.items]
    assert late.complete is base.complete
    assert late.degraded == (
        "reranking with reranker 'slow' failed (TimeoutError: no answer within 0.2 s); "
        "these are in their unreranked order",
    )
    assert "an earlier call has not returned" in again.degraded[0]
    assert took < rerankers.SLOW_SECONDS  # neither recall waited for the slow one
