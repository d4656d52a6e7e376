"""A wiki bound with an embedder fuses keyword and vector rankings (fake embedder: wiring
only), and says so when the embedder cannot load."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from goat_core.contract import Binding, EmbedderSpec, ProviderContext, Scope
from goat_core.errors import NotFound, ProviderUnavailable
from goat_core.host import GoatHome
from goat_wiki.plugin import spec
from goat_wiki.settings import WikiSettings

pytestmark = pytest.mark.anyio


class Fake:
    identity = "fake@1"
    dimensions = 32

    def _vec(self, text: str) -> Any:
        v = np.zeros(self.dimensions, dtype=np.float32)
        for w in text.lower().replace(".", " ").split():
            w = {"automobile": "car", "vehicle": "car"}.get(w, w)
            v[int(hashlib.md5(w.encode()).hexdigest(), 16) % self.dimensions] += 1
        return v / (np.linalg.norm(v) or 1.0)

    def embed_documents(self, texts: Sequence[str]) -> Any:
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, 32))

    def embed_query(self, text: str) -> Any:
        return self._vec(text)


def _wiki(tmp_path: Path, loadable: bool) -> Any:
    root = tmp_path / "wiki"
    (root / "concepts").mkdir(parents=True)
    (root / "concepts" / "Cars.md").write_text("# Cars\n\nA car has four wheels.\n")
    (root / "concepts" / "Boats.md").write_text("# Boats\n\nA boat floats.\n")

    def factory(cache: Path) -> Fake:
        if not loadable:
            raise ProviderUnavailable("weights missing")
        return Fake()

    fake = EmbedderSpec("fake", 32, ("en",), "test", factory, lambda c: loadable)

    def lookup(name: str) -> EmbedderSpec:
        if name != "fake":
            raise NotFound(name)
        return fake

    settings = WikiSettings(root=root, embedder="fake")
    context = ProviderContext(
        scope=Scope.global_(),
        binding=Binding(id="default", provider="wiki", settings={}),
        settings=settings,
        home=GoatHome.from_env(tmp_path / "home"),
        embedders=lookup,
    )
    return spec().factory(context)


async def test_wiki_recall_finds_by_meaning(tmp_path: Path) -> None:
    wiki = _wiki(tmp_path, loadable=True)
    try:
        result = await wiki.recall("automobile", limit=3)
        assert result.items[0].path == "concepts/Cars.md" and result.degraded == ()
    finally:
        await wiki.close()


async def test_wiki_recall_without_the_model_is_degraded(tmp_path: Path) -> None:
    wiki = _wiki(tmp_path, loadable=False)
    try:
        result = await wiki.recall("boat", limit=3)
        assert result.items and not result.complete
        assert any("weights missing" in d for d in result.degraded)
    finally:
        await wiki.close()


def _reranked_wiki(tmp_path: Path, reranker: str) -> Any:
    """A wiki of three pages matching ``wheel``, bound with a test reranker (no embedder)."""
    from goat_core.plugins import Registry, register_plugin
    from goat_core.testing import rerankers

    root = tmp_path / "wiki"
    (root / "concepts").mkdir(parents=True)
    for name, text in (("Cars", "wheel wheel wheel"), ("Carts", "wheel wheel"), ("Vans", "wheel")):
        (root / "concepts" / f"{name}.md").write_text(f"# {name}\n\nA {text}.\n")
    registry = Registry.load()
    register_plugin(registry.pm, rerankers, "testrerank")
    context = ProviderContext(
        scope=Scope.global_(),
        binding=Binding(id="default", provider="wiki", settings={}),
        settings=WikiSettings(root=root, reranker=reranker),
        home=GoatHome.from_env(tmp_path / "home"),
        rerankers=registry.get_reranker,
    )
    return spec().factory(context)


async def test_wiki_recall_is_reranked(tmp_path: Path) -> None:
    wiki = _reranked_wiki(tmp_path, "reverse")
    try:
        result = await wiki.recall("wheel", limit=3)
    finally:
        await wiki.close()
    assert [i.title for i in result.items] == ["Vans", "Carts", "Cars"]
    assert result.complete is True and result.degraded == ()


async def test_wiki_recall_with_a_failing_reranker_keeps_its_order(tmp_path: Path) -> None:
    wiki = _reranked_wiki(tmp_path, "failing")
    try:
        result = await wiki.recall("wheel", limit=3)
    finally:
        await wiki.close()
    assert [i.title for i in result.items] == ["Cars", "Carts", "Vans"]
    assert result.complete is True
    assert result.degraded[-1].startswith("reranking with reranker 'failing' failed")
