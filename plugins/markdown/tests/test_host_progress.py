"""A host's progress sink reaches the store's first indexing inside a read (docs/design.md,
Reads and truth: a progress bar while a large store is first indexed), with one change scan
per read."""

from __future__ import annotations

from pathlib import Path

import pytest

import goat_markdown.plugin
import goat_markdown.provider
from goat_core.contract import Scope
from goat_core.host import Chat, GoatHome, SyncMemoryHost
from goat_core.plugins import PluginSettings, Registry, make_plugin_manager, register_plugin


def registry() -> Registry:
    pm = make_plugin_manager(PluginSettings(autoload=False))
    assert register_plugin(pm, goat_markdown.plugin, "markdown")
    return Registry(pm)


def test_a_read_reports_its_first_indexing_to_the_host_sink_in_one_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    for i in range(40):
        (vault / f"note {i:02}.md").write_text(f"zqprogress entry {i}\n", encoding="utf-8")
    walks: list[Path] = []
    real_walk = goat_markdown.provider.walk_notes

    def counting_walk(root: Path, **kwargs: object) -> object:
        walks.append(Path(root))
        return real_walk(root, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(goat_markdown.provider, "walk_notes", counting_walk)
    calls: list[tuple[int, int]] = []
    host = SyncMemoryHost(
        home=GoatHome.at(tmp_path / "home"),
        registry=registry(),
        progress=lambda done, total: calls.append((done, total)),
    )
    try:
        host.bind(Scope.pen("docs"), "markdown", {"root": str(vault)})
        context = host.context_for(Chat(project_id="docs"))
        result = context.recall("zqprogress", limit=5)
        assert len(result.items) == 5 and not result.complete
        assert calls[0] == (0, 40) and calls[-1] == (40, 40)
        assert calls == sorted(calls) and len(walks) == 1  # one scan, reported as it goes
        calls.clear()
        (vault / "note 00.md").write_text("zqprogress edited\n", encoding="utf-8")
        context.recall("edited")
        assert calls[-1] == (1, 1)  # the next read reports only what changed
        assert len(walks) == 2
    finally:
        host.close()


def test_a_first_semantic_recall_reports_its_embedding_to_the_host_sink(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first semantic recall embeds every note: the host's embedding sink hears it in
    notes, (0, total) first, then after each batch; later reads and a reindex report only
    what changed."""
    from _fake_embed_site import install_fake_embedder

    monkeypatch.syspath_prepend(str(install_fake_embedder(tmp_path / "site")))
    import goat_fakeembed  # type: ignore[import-not-found]

    reg = registry()
    assert register_plugin(reg.pm, goat_fakeembed, "fakeembed")
    vault = tmp_path / "vault"
    vault.mkdir()
    for i in range(40):  # one heading-less section each: one chunk per note
        (vault / f"note {i:02}.md").write_text(f"zqembed entry {i}\n", encoding="utf-8")
    indexing: list[tuple[int, int]] = []
    embedding: list[tuple[int, int]] = []
    host = SyncMemoryHost(
        home=GoatHome.at(tmp_path / "home"),
        registry=reg,
        progress=lambda done, total: indexing.append((done, total)),
        embed_progress=lambda done, total: embedding.append((done, total)),
    )
    try:
        host.bind(Scope.pen("docs"), "markdown", {"root": str(vault), "embedder": "fake"})
        context = host.context_for(Chat(project_id="docs"))
        result = context.recall("zqembed", limit=5)
        assert result.items and result.degraded == ()
        assert embedding[0] == (0, 40) and embedding[-1] == (40, 40)
        dones = [done for done, total in embedding if total == 40]
        assert len(dones) == len(embedding) >= 3  # at least one batch short of all 40
        assert dones == sorted(set(dones))  # after each batch, never twice
        assert indexing[0] == (0, 40) and indexing[-1] == (40, 40)  # the keyword index's own
        embedding.clear()
        context.recall("zqembed entry")
        assert embedding == []  # nothing changed, nothing embedded, nothing reported
        (vault / "note 00.md").write_text("zqembed edited\n", encoding="utf-8")
        context.recall("edited")
        assert embedding == [(0, 1), (1, 1)]
        embedding.clear()
        (vault / "note 01.md").write_text("zqembed edited again\n", encoding="utf-8")
        counts = context.reindex()
        assert counts["embedded"] == 1 and embedding == [(0, 1), (1, 1)]
    finally:
        host.close()
