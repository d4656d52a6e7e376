"""Hybrid recall plumbing (fake embedder: it checks wiring, never quality): the embedders
hook, the vector index (incremental, crash-safe, rebuilt on damage or model change), the
fused ranking and its degraded answers. Real-model quality is in plugins/embed's tests and
benchmarks/eval_recall.py."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from _lock_holder import lock_held_elsewhere

from goat_core import hookimpl
from goat_core.contract import Binding, EmbedderSpec, Provider, ProviderContext, Scope
from goat_core.errors import NotFound, ProviderUnavailable
from goat_core.filestore.search import (
    FUSION,
    NOTE_WEIGHT,
    Fusion,
    VectorIndex,
    chunk_note,
    fuse,
    note_text,
)
from goat_core.host import GoatHome
from goat_core.plugins import PluginSettings, Registry

pytestmark = pytest.mark.anyio

SYNONYMS = {"phone": "mobile", "desktop": "computer", "laptop": "computer", "refund": "money"}


class FakeEmbedder:
    """Bag of words hashed into 64 dimensions, with a synonym table: enough to tell the vector
    side from the keyword side. Counts the texts it embeds."""

    dimensions = 64

    def __init__(self, identity: str = "fake@1") -> None:
        self.identity = identity
        self.embedded: list[str] = []

    def _vec(self, text: str) -> Any:
        v = np.zeros(self.dimensions, dtype=np.float32)
        for word in text.lower().replace(".", " ").split():
            word = SYNONYMS.get(word, word)
            v[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimensions] += 1.0
        n = np.linalg.norm(v)
        return v / n if n else v

    def embed_documents(self, texts: Sequence[str]) -> Any:
        self.embedded.extend(texts)
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, 64))

    def embed_query(self, text: str) -> Any:
        return self._vec(text)


def _spec(
    embedder: FakeEmbedder | None, name: str = "fake", floor: float | None = None
) -> EmbedderSpec:
    def factory(cache: Path) -> FakeEmbedder:
        if embedder is None:
            raise ProviderUnavailable("fake weights are not on disk")
        return embedder

    return EmbedderSpec(
        name=name,
        dimensions=64,
        languages=("en",),
        source="test",
        factory=factory,
        available=lambda cache: embedder is not None,
        semantic_floor=floor,
    )


NOTES = {
    "Sync across devices.md": "# Sync across devices\n\nKeep a mobile and a computer in step.\n",
    "Refunds.md": "# Refunds\n\nAsk for your money back within 14 days.\n",
    "Phone tips.md": "# Phone tips\n\nThe phone app has a toolbar. phone phone.\n",
    "Long.md": "# Long\n\n" + "\n\n".join(f"## Part {i}\n\nfiller text {i}" for i in range(30)),
}


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    for name, text in NOTES.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def home(tmp_path: Path) -> GoatHome:
    return GoatHome.from_env(tmp_path / "home")


def _store(
    home: GoatHome, root: Path, embedder: str | None, lookup: Any, background: bool = False
) -> Any:
    from goat_core.filestore import FolderStoreSettings

    pytest.importorskip("goat_markdown")
    from goat_markdown.plugin import MarkdownSettings, spec

    settings = MarkdownSettings(root=root, embedder=embedder)
    assert isinstance(settings, FolderStoreSettings)
    context = ProviderContext(
        scope=Scope.global_(),
        binding=Binding(id="default", provider="markdown", settings={}),
        settings=settings,
        home=home,
        embedders=lookup,
        embed_in_background=background,
    )
    return spec().factory(context)


@pytest.fixture
def stores(home: GoatHome) -> Iterator[Any]:
    opened: list[Provider] = []

    def make(
        root: Path,
        embedder: str | None = None,
        spec: EmbedderSpec | None = None,
        background: bool = False,
    ) -> Any:
        def lookup(name: str) -> EmbedderSpec:
            if spec is None or name != spec.name:
                raise NotFound(f"no embedder named {name!r} is installed")
            return spec

        sp = _store(home, root, embedder, lookup, background)
        opened.append(sp)
        return sp

    yield make
    for sp in opened:
        anyio.run(sp.close)


# -- fusion and chunks --------------------------------------------------------------------
def test_fuse_rewards_agreement_and_keeps_one_sided_hits() -> None:
    ranked = [p for p, _ in fuse([("a", 3.0), ("b", 2.0), ("c", 1.0)], [("b", 0.9), ("d", 0.5)])]
    assert ranked[0] == "b" and set(ranked) == {"a", "b", "c", "d"}


def test_chunks_follow_headings_and_carry_context() -> None:
    body = (
        "intro\n\n# Top\n\ntext\n\n## Sub\n\nmore\n\n### Deep\n\ndeeper\n\n"
        "```\n# not a heading\n```\n"
    )
    chunks = chunk_note("Note", body, "what it is")
    assert [c.heading for c in chunks] == ["", "Top", "Top > Sub"]
    assert chunks[0].embed_text.startswith("Note. what it is\n")
    assert "Deep" in body[chunks[2].start : chunks[2].end]
    assert "not a heading" in body[chunks[2].start : chunks[2].end]


# -- the embedders hook -------------------------------------------------------------------
class _Plugin:
    def __init__(self, specs: list[EmbedderSpec]) -> None:
        self.specs = specs

    @hookimpl
    def goat_register_embedders(self) -> list[EmbedderSpec]:
        return self.specs


def test_note_row_counts_beside_the_best_chunk(tmp_path: Path) -> None:
    """Two notes whose one chunk each is equally close to the query: the one whose title and
    description say what the query asks ranks first, by exactly ``NOTE_WEIGHT`` times the
    cosine of its own row (up to the int8 rounding of the stored vectors); every note has
    one such row."""
    fake = FakeEmbedder()
    index = VectorIndex(tmp_path / "v.sqlite", fake)
    notes = {
        "a.md": ("Groceries", "apples pears", ""),
        "b.md": ("Fruit", "apples pears", "apples pears"),
    }
    index.sync([(p, 1, 1) for p in notes], notes.get)
    assert fake.embedded[-1] == note_text("Fruit", "apples pears") == "Fruit. apples pears"
    hits = index.search("apples pears", 2)
    assert [h.path for h in hits] == ["b.md", "a.md"]
    chunk_a = chunk_note(*notes["a.md"])[0].embed_text
    chunk_b = chunk_note(*notes["b.md"])[0].embed_text
    q = fake.embed_query("apples pears")
    cos = lambda text: float(fake.embed_query(text) @ q)  # noqa: E731
    assert hits[1].score == pytest.approx(cos(chunk_a) + NOTE_WEIGHT * cos("Groceries"), abs=0.02)
    assert hits[0].score == pytest.approx(
        cos(chunk_b) + NOTE_WEIGHT * cos("Fruit. apples pears"), abs=0.02
    )
    assert (hits[0].start, hits[0].end) == (0, len("apples pears"))  # the chunk, not the row
    db = sqlite3.connect(tmp_path / "v.sqlite")
    kinds = db.execute("SELECT path, kind, count(*) FROM chunks GROUP BY path, kind").fetchall()
    db.close()
    assert sorted(kinds) == [("a.md", 0, 1), ("a.md", 1, 1), ("b.md", 0, 1), ("b.md", 1, 1)]
    index.close()


def test_registry_collects_embedders_and_reports_duplicates() -> None:
    # not strict: a duplicate is reported as a failure and the rest still loads (strict
    # plugins, as tox sets them, would stop on it: tests/test_cli.py covers that)
    registry = Registry.load(PluginSettings(strict=False))
    registry.pm.register(_Plugin([_spec(FakeEmbedder())]), name="one")
    registry.pm.register(_Plugin([_spec(FakeEmbedder()), _spec(None, "other")]), name="two")
    names = set(registry.embedders())
    assert {"fake", "other"} <= names
    assert any("already declared" in f.error for f in registry.failures)
    with pytest.raises(NotFound, match="no embedder named 'nope'"):
        registry.get_embedder("nope")


# -- recall -------------------------------------------------------------------------------
async def test_keyword_only_without_embedder_is_the_index_answer(stores: Any, vault: Path) -> None:
    store = stores(vault)
    result = await store.recall("phone toolbar", limit=5)
    assert [i.path for i in result.items] == ["Phone tips.md"]
    assert result.complete and result.degraded == ()


async def test_hybrid_finds_by_meaning_and_snippets_the_best_chunk(
    stores: Any, vault: Path
) -> None:
    fake = FakeEmbedder()
    store = stores(vault, "fake", _spec(fake))
    result = await store.recall("between laptop and desktop", limit=3)
    assert result.items[0].path == "Sync across devices.md"
    assert "mobile" in (result.items[0].snippet or "")
    assert result.degraded == ()
    # the long note gets no more than its single best section
    assert all(i.path != "Long.md" for i in result.items[:2])


async def test_vectors_are_incremental(stores: Any, vault: Path) -> None:
    fake = FakeEmbedder()
    store = stores(vault, "fake", _spec(fake))
    await store.recall("anything", limit=1)
    first = len(fake.embedded)
    assert first >= len(NOTES)
    await store.recall("anything", limit=1)
    assert len(fake.embedded) == first  # nothing changed, nothing embedded
    os.utime(vault / "Refunds.md", ns=(1, 1))
    (vault / "Refunds.md").write_text("# Refunds\n\nMoney back in 30 days.\n", encoding="utf-8")
    await store.reindex()
    await store.recall("anything", limit=1)
    assert len(fake.embedded) == first + 2  # one note: its one chunk and its own row


async def test_vectors_sync_only_after_the_keyword_index_changed(
    stores: Any, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recall with nothing changed neither lists the keyword index nor compares the
    vectors with it; an edit the keyword index takes in (this store's reindex, or another
    process's commit to the index) makes the next recall sync and embed it."""
    synced: list[int] = []
    original = VectorIndex.sync

    def counting(self: VectorIndex, listing: Any, *args: Any, **kwargs: Any) -> Any:
        synced.append(1)
        return original(self, listing, *args, **kwargs)

    monkeypatch.setattr(VectorIndex, "sync", counting)
    fake = FakeEmbedder()
    store = stores(vault, "fake", _spec(fake))
    await store.recall("anything", limit=1)
    embedded = len(fake.embedded)
    await store.recall("anything", limit=1)
    await store.recall("phone", limit=3)
    assert len(synced) == 1
    os.utime(vault / "Refunds.md", ns=(1, 1))
    (vault / "Refunds.md").write_text("# Refunds\n\nMoney back in 30 days.\n", encoding="utf-8")
    await store.reindex()
    await store.recall("anything", limit=1)
    assert len(synced) == 2 and len(fake.embedded) == embedded + 2  # its section and its note row
    # another process's write to the keyword index: SQLite's data_version changes
    from goat_core.filestore.search import FileStat, IndexedDoc, SearchIndex

    with SearchIndex(store._index_path) as other:
        doc = IndexedDoc("Refunds.md", "Refunds", "Money back in 60 days.")
        other.update_one(doc, FileStat("Refunds.md", 2, 2))
    await store.recall("anything", limit=1)
    assert len(synced) == 3


async def test_missing_embedder_answers_degraded_never_silently(stores: Any, vault: Path) -> None:
    store = stores(vault, "fake", _spec(None))
    result = await store.recall("phone", limit=5)
    assert result.items and not result.complete
    assert any("semantic recall" in d and "keyword results only" in d for d in result.degraded)
    unknown = stores(vault, "nope", _spec(FakeEmbedder()))
    result = await unknown.recall("phone", limit=5)
    assert not result.complete and any("no embedder named 'nope'" in d for d in result.degraded)


async def test_an_embedder_that_fails_to_load_with_its_own_exception_answers_degraded(
    stores: Any, vault: Path
) -> None:
    """An embedder factory raising something else than a GoatError (a runtime's own error,
    such as ONNX Runtime's ``InvalidProtobuf`` for a damaged graph): the keyword hits,
    ``complete=False``, the reason naming the embedder and the exception."""

    def factory(cache: Path) -> FakeEmbedder:
        raise RuntimeError("[ONNXRuntimeError] : 7 : INVALID_PROTOBUF : Protobuf parsing failed")

    spec = EmbedderSpec(
        name="fake",
        dimensions=64,
        languages=("en",),
        source="test",
        factory=factory,
        available=lambda cache: True,
    )
    result = await stores(vault, "fake", spec).recall("phone", limit=5)
    assert result.items and not result.complete
    assert any(
        "embedder 'fake' failed to load (RuntimeError: [ONNXRuntimeError]" in d
        and "keyword results only" in d
        for d in result.degraded
    ), result.degraded


@pytest.mark.parametrize(
    "message", ["database or disk is full", "attempt to write a readonly database"]
)
async def test_a_vector_index_that_cannot_take_a_change_ranks_with_what_it_holds(
    stores: Any, vault: Path, monkeypatch: pytest.MonkeyPatch, message: str
) -> None:
    """The GOAT home full or read-only after the vectors were built: a note added since is
    found by keyword, the ranking uses the vectors held, and the answer says so (never a raw
    sqlite error, never a complete answer)."""
    import sqlite3

    fake = FakeEmbedder()
    store = stores(vault, "fake", _spec(fake))
    assert (await store.recall("between laptop and desktop", limit=3)).degraded == ()
    (vault / "Refunds.md").write_text("# Refunds\n\nMoney back in 30 days.\n", encoding="utf-8")

    def unwritable(self: VectorIndex, *args: Any, **kwargs: Any) -> Any:
        raise sqlite3.OperationalError(message)

    monkeypatch.setattr(VectorIndex, "sync", unwritable)
    result = await store.recall("between laptop and desktop", limit=3)
    assert result.items[0].path == "Sync across devices.md"
    assert not result.complete
    assert result.degraded == (
        f"the vector index could not take the notes' latest changes ({message}); "
        "semantic ranking used the vectors it held before",
    )
    refunds = await store.recall("refunds money back", limit=3)
    assert refunds.items[0].path == "Refunds.md" and not refunds.complete


def _vector_file(home: GoatHome, vault: Path) -> Path:
    return home.index_path(vault, "search-vectors-fake")


async def test_damaged_vector_index_is_rebuilt(stores: Any, home: GoatHome, vault: Path) -> None:
    fake = FakeEmbedder()
    store = stores(vault, "fake", _spec(fake))
    await store.recall("phone", limit=1)
    await store.close()
    path = _vector_file(home, vault)
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    path.write_bytes(b"this is not a database" * 100)
    store = stores(vault, "fake", _spec(fake))
    result = await store.recall("between laptop and desktop", limit=3)
    assert result.items[0].path == "Sync across devices.md" and result.degraded == ()
    index = VectorIndex(path, fake)
    assert index.rebuilt is None and index.note_count() == len(NOTES)
    index.close()


def test_model_change_rebuilds(home: GoatHome, tmp_path: Path) -> None:
    path = tmp_path / "v.sqlite"
    index = VectorIndex(path, FakeEmbedder("fake@1"))
    index.sync([("a.md", 1, 1)], lambda p: ("A", "alpha", ""))
    index.close()
    index = VectorIndex(path, FakeEmbedder("fake@2"))
    assert index.rebuilt is not None and "embedder changed" in index.rebuilt
    assert index.note_count() == 0
    index.close()


def test_failed_batch_leaves_the_index_consistent(tmp_path: Path) -> None:
    class Failing(FakeEmbedder):
        def embed_documents(self, texts: Sequence[str]) -> Any:
            if len(self.embedded) >= 32:
                raise RuntimeError("boom")
            return super().embed_documents(texts)

    listing = [(f"n{i}.md", 1, 1) for i in range(100)]
    index = VectorIndex(tmp_path / "v.sqlite", Failing())
    with pytest.raises(ProviderUnavailable, match="RuntimeError: boom"):
        index.sync(listing, lambda p: (p, "body " + p, ""))
    done = index.note_count()
    assert 0 < done < 100
    index.close()
    index = VectorIndex(tmp_path / "v.sqlite", FakeEmbedder())
    assert index.sync(listing, lambda p: (p, "body " + p, ""))["embedded"] == 100 - done
    assert index.note_count() == 100
    index.close()


KILL_CHILD = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, sys.argv[2])
    from test_hybrid import FakeEmbedder
    from goat_core.filestore.search import VectorIndex

    class Slow(FakeEmbedder):
        def embed_documents(self, texts):
            if self.embedded:
                print("committed", flush=True)
                time.sleep(0.05)
            return super().embed_documents(texts)

    index = VectorIndex(__import__("pathlib").Path(sys.argv[1]), Slow())
    index.sync([(f"n{i}.md", 1, 1) for i in range(2000)], lambda p: (p, "body " + p, ""))
    """
)


def test_kill_9_during_embedding_leaves_a_usable_index(tmp_path: Path) -> None:
    path = tmp_path / "v.sqlite"
    child = subprocess.Popen(
        [sys.executable, "-c", KILL_CHILD, str(path), str(Path(__file__).parent)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    for _ in range(3):
        assert child.stdout.readline().strip() == "committed"
    child.kill()  # SIGKILL mid-sync
    child.wait()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # every note row has its chunks: no half-written note
    orphans = db.execute(
        "SELECT count(*) FROM notes WHERE path NOT IN (SELECT path FROM chunks)"
    ).fetchone()[0]
    db.close()
    assert orphans == 0
    index = VectorIndex(path, FakeEmbedder())
    before = index.note_count()
    assert 0 < before < 2000 and index.rebuilt is None
    stats = index.sync([(f"n{i}.md", 1, 1) for i in range(2000)], lambda p: (p, "body " + p, ""))
    assert stats["embedded"] == 2000 - before and index.note_count() == 2000
    index.close()


async def test_every_keyword_match_reaches_the_fusion_at_a_large_enough_limit(
    stores: Any, tmp_path: Path
) -> None:
    """60 notes hold the query's word among many others; 60 more hold only its synonym, so
    they are nearer by meaning. The vector side reads 50; the keyword side reads as deep as
    the limit asks (at least 50): at limit 100 all 60 keyword matches are shown (50 were,
    and recall said to raise a limit already at its largest), beside 40 by meaning, and the
    answer is not complete (110 candidates). The first ranks are the same at any limit."""
    from goat_core.filestore.search import FUSION

    root = tmp_path / "many"
    root.mkdir()
    filler = " ".join(f"w{j}" for j in range(30))
    for i in range(FUSION.depth + 10):
        (root / f"kw{i:03}.md").write_text(f"phone {filler} {i}\n")
    for i in range(FUSION.depth + 10):
        (root / f"syn{i:03}.md").write_text("mobile\n")
    sp = stores(root, "fake", _spec(FakeEmbedder()))
    result = await sp.recall("phone", limit=100)
    shown = [item.path for item in result.items]
    assert len(shown) == 100
    assert len([p for p in shown if p.startswith("kw")]) == FUSION.depth + 10
    assert not result.complete
    first = await sp.recall("phone", limit=10)
    assert [item.path for item in first.items] == shown[:10] and not first.complete
    forty = await sp.recall("phone", limit=40)
    assert [item.path for item in forty.items] == shown[:40] and not forty.complete


# -- one process embeds a store at a time ----------------------------------------------------
@pytest.fixture
def embed_lock_held(home: GoatHome, vault: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the store's embedding lock (as ``goat serve`` does while it
    embeds the store), until the test closes its stdin."""
    with lock_held_elsewhere(home.lock_path(vault.resolve(), "search-embed-fake")) as proc:
        yield proc


async def test_a_store_another_process_is_embedding_is_not_embedded_twice(
    stores: Any, vault: Path, embed_lock_held: subprocess.Popen[str]
) -> None:
    """While another process embeds the store (it holds the embedding lock), a recall here
    embeds nothing and does not wait: keyword hits, ``complete=False`` and the reason; a
    reindex is a typed Conflict saying the keyword index is up to date. Once the other
    process is done, the next recall embeds and answers complete."""
    from goat_core.errors import Conflict
    from goat_core.filestore import EmbeddingElsewhere

    fake = FakeEmbedder()
    store = stores(vault, "fake", _spec(fake))
    result = await store.recall("phone toolbar", limit=3)
    assert result.items[0].path == "Phone tips.md"
    assert not result.complete
    (reason,) = result.degraded
    assert reason.startswith("another process is embedding notes of ")
    assert "with embedder 'fake'" in reason and "uses the vectors it has stored so far" in reason
    assert fake.embedded == []
    with pytest.raises(EmbeddingElsewhere) as caught:
        await store.reindex()
    assert isinstance(caught.value, Conflict) and caught.value.exit_code == 5
    assert "keyword index of" in str(caught.value) and "is up to date" in str(caught.value)
    assert fake.embedded == []

    assert embed_lock_held.stdin is not None
    embed_lock_held.stdin.close()
    embed_lock_held.wait(10)
    result = await store.recall("between laptop and desktop", limit=3)
    assert result.items[0].path == "Sync across devices.md" and result.degraded == ()
    assert len(fake.embedded) > len(NOTES)


async def test_the_embedding_lock_is_released_when_the_embedder_fails(
    stores: Any, vault: Path, home: GoatHome
) -> None:
    """A sync that fails part way (the embedder raises) leaves the lock free for the next."""

    class Failing(FakeEmbedder):
        fail = True

        def embed_documents(self, texts: Sequence[str]) -> Any:
            if self.fail:
                raise ProviderUnavailable("the model fell over")
            return super().embed_documents(texts)

    fake = Failing()
    store = stores(vault, "fake", _spec(fake))
    assert "the model fell over" in (await store.recall("phone", limit=3)).degraded[0]
    fake.fail = False
    result = await store.recall("between laptop and desktop", limit=3)
    assert result.degraded == () and result.items[0].path == "Sync across devices.md"


async def test_the_semantic_floor_keeps_unrelated_notes_out(stores: Any, vault: Path) -> None:
    """With the embedder's ``semantic_floor``, only notes scoring at least that are semantic
    candidates: words the vault has nothing about answer nothing, complete (without it, every
    note is listed by meaning and the answer says more matched than shown); a question by
    meaning still finds its note."""
    fake = FakeEmbedder()
    floored = stores(vault, "fake", _spec(fake, floor=0.3))
    nothing = await floored.recall("qwxz vbnm", limit=3)  # fake scores: 0.07 at best
    assert (nothing.items, nothing.complete, nothing.degraded) == ((), True, ())
    found = await floored.recall("between laptop and desktop", limit=3)  # fake scores: 0.47, 0.27
    assert [i.path for i in found.items] == ["Sync across devices.md"]
    assert found.complete and found.degraded == ()
    await floored.close()

    unfloored = stores(vault, "fake", _spec(FakeEmbedder()))
    listed = await unfloored.recall("qwxz vbnm", limit=3)
    assert len(listed.items) == 3 and not listed.complete


def test_vector_search_drops_notes_under_the_floor(tmp_path: Path) -> None:
    fake = FakeEmbedder()
    notes = {"a.md": ("Apples", "apples pears", ""), "b.md": ("Boats", "sails and oars", "")}
    index = VectorIndex(tmp_path / "v.sqlite", fake, floor=None)
    index.sync([(p, 1, 1) for p in notes], notes.get)
    every = index.search("apples", 5)
    assert [h.path for h in every] == ["a.md", "b.md"]
    index.floor = (every[0].score + every[1].score) / 2
    assert [h.path for h in index.search("apples", 5)] == ["a.md"]
    index.floor = every[0].score + 0.01
    assert index.search("apples", 5) == []
    index.close()


async def test_a_store_with_nothing_to_embed_is_complete_while_another_process_holds_the_lock(
    stores: Any, vault: Path, home: GoatHome
) -> None:
    """The lock is taken only when there is something to embed: a fresh process whose store
    is fully embedded answers complete even while another one holds the lock."""
    first = stores(vault, "fake", _spec(FakeEmbedder()))
    assert (await first.recall("phone", limit=3)).degraded == ()
    await first.close()
    with lock_held_elsewhere(home.lock_path(vault.resolve(), "search-embed-fake")):
        fake = FakeEmbedder()
        fresh = stores(vault, "fake", _spec(fake))
        result = await fresh.recall("between laptop and desktop", limit=3)
        assert result.degraded == () and result.items[0].path == "Sync across devices.md"
        assert (await fresh.reindex())["embedded"] == 0
        assert fake.embedded == []


@pytest.mark.parametrize("kind", ["directory", "dangling-symlink"])
async def test_an_unusable_embedding_lock_is_said_in_the_log(
    stores: Any, vault: Path, home: GoatHome, kind: str
) -> None:
    """Something else in the lock's place (a folder, a symlink the lock will not follow):
    the store embeds without the lock, answers, and logs a warning that another process may
    embed the same notes meanwhile (never silently)."""
    from structlog.testing import capture_logs

    path = home.lock_path(vault.resolve(), "search-embed-fake")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if kind == "directory":
        path.mkdir()
    else:
        path.symlink_to(path.parent / "nowhere")
    fake = FakeEmbedder()
    store = stores(vault, "fake", _spec(fake))
    with capture_logs() as logs:
        result = await store.recall("between laptop and desktop", limit=3)
    assert result.degraded == () and result.items[0].path == "Sync across devices.md"
    assert fake.embedded
    (warning,) = [e for e in logs if e["event"] == "vectors.lock_unavailable"]
    assert warning["log_level"] == "warning" and warning["lock"] == str(path)
    assert "may embed the same notes" in warning["effect"]


# -- a long-lived host embeds in the background -------------------------------------------
class GatedEmbedder(FakeEmbedder):
    """Embeds documents only while ``gate`` is open (a slow first embedding, held)."""

    def __init__(self) -> None:
        super().__init__()
        import threading

        self.gate = threading.Event()
        self.fail: str | None = None

    def embed_documents(self, texts: Sequence[str]) -> Any:
        assert self.gate.wait(30)
        if self.fail:
            raise ProviderUnavailable(self.fail)
        return super().embed_documents(texts)


async def _until(check: Callable[[], Awaitable[Any]], seconds: float = 30.0) -> Any:
    import time

    deadline = time.monotonic() + seconds
    while True:
        got = await check()
        if got or time.monotonic() > deadline:
            return got
        await anyio.sleep(0.05)


async def _settled(store: Any, query: str) -> bool:
    """The store's recall of ``query`` says nothing degraded (embedding done)."""
    return (await store.recall(query, limit=3)).degraded == ()


async def _said(store: Any, query: str, word: str) -> list[str]:
    """What the store's recall of ``query`` says degraded, naming ``word``."""
    return [d for d in (await store.recall(query, limit=3)).degraded if word in d]


async def test_a_background_host_answers_at_once_while_the_store_embeds(
    stores: Any, vault: Path
) -> None:
    """``embed_in_background`` (goat serve): the first recall starts embedding on the store's
    thread and answers at once, keyword hits and the vectors stored so far, not complete and
    saying so; once the thread is done, recall ranks by meaning and is complete."""
    fake = GatedEmbedder()
    store = stores(vault, "fake", _spec(fake), background=True)
    first = await store.recall("phone toolbar", limit=3)  # the gate is shut: nothing embedded yet
    assert first.items[0].path == "Phone tips.md" and not first.complete
    (reason,) = first.degraded
    assert "is being embedded for semantic recall with embedder 'fake'" in reason
    assert "(0 of 4 notes done" in reason and "uses the vectors stored so far" in reason
    again = await store.recall("between laptop and desktop", limit=3)
    assert "is being embedded" in again.degraded[0]  # still under way: one thread, not two
    fake.gate.set()
    done = await _until(lambda: _settled(store, "between laptop and desktop"))
    assert done
    embedded = len(fake.embedded)
    result = await store.recall("between laptop and desktop", limit=3)
    assert result.items[0].path == "Sync across devices.md" and result.degraded == ()
    assert embedded > len(NOTES) and len(fake.embedded) == embedded  # each note once


async def test_a_note_written_while_the_store_embeds_ranks_by_its_keywords(
    stores: Any, vault: Path
) -> None:
    """A note written while the background embedding is held has no vectors yet: it ranks as
    keyword alone ranks it (goat_core/filestore/search/_hybrid.py), not below notes that only
    the vector side found. Here it holds every query word; Refunds.md holds two of them and
    has vectors close to the query."""
    fake = GatedEmbedder()
    fake.gate.set()
    store = stores(vault, "fake", _spec(fake), background=True)
    assert await _until(lambda: _settled(store, "between laptop and desktop"))
    fake.gate.clear()  # the next embedding waits: the new note stays without vectors
    (vault / "Guarantee.md").write_text(
        "# Guarantee\n\nOur guarantee: refunds of money, any time.\n", "utf-8"
    )
    try:
        result = await store.recall("refunds money guarantee", limit=1)
        assert "is being embedded" in result.degraded[0] and not result.complete
        assert [i.path for i in result.items] == ["Guarantee.md"]
        # Refunds.md is the vector side's best note: the fusion still counts it second
        both = await store.recall("refunds money guarantee", limit=2)
        assert [i.path for i in both.items] == ["Guarantee.md", "Refunds.md"]
    finally:
        fake.gate.set()
    assert await _until(lambda: _settled(store, "refunds money guarantee"))
    done = await store.recall("refunds money guarantee", limit=1)
    assert [i.path for i in done.items] == ["Guarantee.md"] and done.degraded == ()


async def test_a_keyword_side_failure_is_its_own_not_the_embedders(
    stores: Any, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The keyword index failing under a hybrid recall raises its own error, once; a failure
    of the vector side's ``embedded`` read degrades to keyword results, saying so."""
    from goat_core.filestore.search import SearchIndex

    fake = FakeEmbedder()
    store = stores(vault, "fake", _spec(fake))
    assert (await store.recall("phone toolbar", limit=3)).items[0].path == "Phone tips.md"
    calls: list[bool] = []
    real = SearchIndex.search

    def busy(self: Any, query: str, *, limit: int = 10, snippets: bool = True) -> Any:
        calls.append(snippets)
        raise ProviderUnavailable("the search index is busy (locked by another process)")

    monkeypatch.setattr(SearchIndex, "search", busy)
    with pytest.raises(ProviderUnavailable, match="search index is busy") as caught:
        await store.recall("phone toolbar", limit=3)
    assert "embedder" not in str(caught.value) and len(calls) == 1
    monkeypatch.setattr(SearchIndex, "search", real)

    def unreadable(self: Any, paths: Any) -> set[str]:
        raise ProviderUnavailable("the vector index could not be read")

    monkeypatch.setattr(VectorIndex, "embedded", unreadable)
    degraded = await store.recall("phone toolbar", limit=3)
    assert degraded.items[0].path == "Phone tips.md" and not degraded.complete
    (reason,) = degraded.degraded
    assert "semantic recall with embedder 'fake' is unavailable" in reason
    assert "could not be read" in reason


def test_fuse_counts_an_unembedded_keyword_hit_on_both_sides_weights() -> None:
    """``unembedded``: the keyword side's normalised score times keyword + vector weight
    (cc), or their sum over ``k + rank`` (rrf); other notes as before."""
    kw, vec = [("new", 9.0), ("old", 3.0)], [("old", 0.9), ("far", 0.5)]
    plain = dict(fuse(kw, vec))
    got = dict(fuse(kw, vec, FUSION, {"new"}))
    assert got["new"] == pytest.approx(FUSION.keyword + FUSION.vector)  # best keyword: 1.0
    assert got["old"] == plain["old"] and got["far"] == plain["far"]
    assert plain["new"] == pytest.approx(FUSION.keyword)
    rrf = Fusion(keyword=1.0, vector=2.0, k=10.0, mode="rrf")
    assert dict(fuse(kw, vec, rrf, {"new"}))["new"] == pytest.approx(3.0 / 11.0)


async def test_a_failed_background_embedding_is_reported_then_tried_again(
    stores: Any, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure on the store's thread is what every recall reports for ``retry_after``
    seconds (never "being embedded" while nothing is), then the next recall tries again."""
    from goat_core.filestore import BackgroundEmbedding

    monkeypatch.setattr(BackgroundEmbedding, "retry_after", 1.0)
    fake = GatedEmbedder()
    fake.fail = "the model fell over"
    fake.gate.set()
    store = stores(vault, "fake", _spec(fake), background=True)
    assert "is being embedded" in (await store.recall("phone", limit=3)).degraded[0]
    failed = await _until(lambda: _said(store, "phone", "fell over"))
    assert failed and "semantic recall with embedder 'fake' is unavailable" in failed[0]
    assert (
        "fell over" in (await store.recall("phone", limit=3)).degraded[0]
    )  # again, not retried yet
    fake.fail = None
    assert await _until(lambda: _settled(store, "between laptop and desktop"))


@pytest.mark.parametrize("background", [False, True])
async def test_a_vector_index_deleted_under_a_running_store_is_opened_again(
    stores: Any, vault: Path, home: GoatHome, background: bool
) -> None:
    """The vector index's files deleted (by hand, or rebuilt for the same model) while a
    store has it open: the store opens the new file and embeds again, reaching complete
    (a server used to rank from the deleted file, saying "being embedded" for good)."""
    fake = GatedEmbedder()
    fake.gate.set()
    store = stores(vault, "fake", _spec(fake), background=background)
    assert await _until(lambda: _settled(store, "between laptop and desktop"))
    for f in home.index_path(vault.resolve(), "x").parent.glob("*vectors*"):
        f.unlink()
    (vault / "Refunds.md").write_text("# Refunds\n\nMoney back in 30 days.\n", "utf-8")
    assert await _until(lambda: _settled(store, "between laptop and desktop"))
    result = await store.recall("between laptop and desktop", limit=3)
    assert result.items[0].path == "Sync across devices.md"
    assert _vector_file(home, vault).exists()


async def test_damage_found_by_a_background_hosts_search_is_repaired_in_the_background(
    stores: Any, vault: Path, home: GoatHome
) -> None:
    """Rows found damaged by a recall's search in a background host: their notes are
    dropped and re-embedded on the store's thread; the recall answers at once (it used to
    re-embed them in the foreground, the call waiting)."""
    fake = GatedEmbedder()
    fake.gate.set()
    store = stores(vault, "fake", _spec(fake), background=True)
    assert await _until(lambda: _settled(store, "between laptop and desktop"))
    fake.gate.clear()  # from now, an embedding waits: a foreground one would hold the recall
    rows = Path(f"{_vector_file(home, vault)}-rows0")
    data = bytearray(rows.read_bytes())
    for i in range(0, len(data), 64):
        data[i] ^= 0xFF
    rows.write_bytes(bytes(data))
    import time

    t0 = time.monotonic()
    damaged = await store.recall("phone toolbar", limit=3)
    assert time.monotonic() - t0 < 10
    assert not damaged.complete and damaged.items[0].path == "Phone tips.md"
    assert any("is being embedded" in d for d in damaged.degraded), damaged.degraded
    fake.gate.set()
    assert await _until(lambda: _settled(store, "between laptop and desktop"))


async def test_closing_a_background_host_stops_its_embedding_and_loses_nothing(
    stores: Any, vault: Path, home: GoatHome
) -> None:
    """Closing the store while its thread embeds stops the thread after its batch; the
    vector index stays consistent, and a store opened later embeds the rest."""
    import threading

    fake = GatedEmbedder()
    store = stores(vault, "fake", _spec(fake), background=True)
    assert "is being embedded" in (await store.recall("phone", limit=3)).degraded[0]
    threading.Timer(0.3, fake.gate.set).start()  # the batch in hand finishes after close asks
    await store.close()
    assert not [t for t in threading.enumerate() if t.name == "goat-embed-background"]
    later = stores(vault, "fake", _spec(FakeEmbedder()))
    result = await later.recall("between laptop and desktop", limit=3)
    assert result.items[0].path == "Sync across devices.md" and result.degraded == ()


@pytest.mark.parametrize("background", [False, True])
async def test_a_secret_in_an_embedders_error_never_reaches_the_answer(
    stores: Any, vault: Path, background: bool
) -> None:
    """An embedder failing with a credential in its message (``SECRET_TOKEN=...``): the
    recall's ``degraded`` names the failure with the value blanked, in the foreground and
    from the store's embedding thread."""
    secret = "sk-live-" + "7f3a9c21d4e8"
    fake = GatedEmbedder()
    fake.fail = f"boom SECRET_TOKEN={secret} mid-way"
    fake.gate.set()
    store = stores(vault, "fake", _spec(fake), background=background)
    said = await _until(lambda: _said(store, "phone", "boom"))
    assert said and secret not in said[0] and "SECRET_TOKEN=[REDACTED]" in said[0]
    if not background:  # the same failure named by an explicit reindex
        with pytest.raises(ProviderUnavailable) as caught:
            await store.reindex()
        assert secret not in str(caught.value) and "SECRET_TOKEN=[REDACTED]" in str(caught.value)
