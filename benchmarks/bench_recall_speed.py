"""Keyword recall speed on the real vault against bm25s, in one run, and hybrid recall at 10k
notes broken down into its parts.

    python benchmarks/bench_recall_speed.py                    # keyword, obsidian-help-en
    python benchmarks/bench_recall_speed.py --profile 15       # plus a cProfile of recall()
    python benchmarks/bench_recall_speed.py --hybrid 10000     # plus hybrid at 10k notes

Keyword: the shipped ``markdown`` provider (built through its spec's factory, driven through
``_blocking.Blocking`` as a host drives it) on the vault, kept open as a long-lived host keeps it
(its file watcher on after the first calls; the mode is printed). ``recall(q, limit=10)``
(snippets and result models included) over the 70 questions of
``benchmarks/questions/en_questions.tsv``, 5 rounds, against bm25s's ``retrieve`` (10 hits, no
snippets; ``pip install bm25s``, a benchmark-only dependency) on the same notes and queries;
``SearchIndex.search`` alone is printed too. p50, p95 and the ratios to bm25s.

Hybrid (``--hybrid N``): a generated vault of N notes (``gen_vault.py``), its keyword index
built by the provider, and a vector index filled with **random unit vectors** for every
chunk (embedding N notes with the real model is out of reach on 2 cores); the query is
embedded by the real ``minilm-en`` model (``plugins/embed``). Printed separately and summed:
the query embedding alone, the vector search, and the keyword ranking plus fusion plus
snippets (``FolderStoreProvider._ranked`` with the query embedding replaced by a precomputed
vector), then the end-to-end ``recall()`` through the provider with the real model, all
without the embedder's semantic floor (random vectors would not pass it). Prints figures;
asserts nothing.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _blocking import Blocking  # noqa: E402
from eval_recall import bm25s_rankings, find_vault, read_tsv  # noqa: E402

from goat_core.contract import Binding, ProviderContext, Scope  # noqa: E402
from goat_core.host import GoatHome  # noqa: E402


def open_store(home: GoatHome, root: Path, embedder: str | None = None) -> Blocking:
    from goat_markdown.plugin import MarkdownSettings, spec

    settings = MarkdownSettings(root=root, embedder=embedder)
    context = ProviderContext(
        scope=Scope.global_(),
        binding=Binding(
            id="default",
            provider="markdown",
            settings=settings.model_dump(mode="json", exclude_none=True),
        ),
        settings=settings,
        home=home,
    )
    return Blocking(lambda: spec().factory(context))


def timings(fn: Callable[[str], Any], queries: Sequence[str], rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        for q in queries:
            t = time.perf_counter()
            fn(q)
            out.append((time.perf_counter() - t) * 1000)
    return out


def p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


def provider_of(store: Blocking) -> Any:
    """The provider object behind the blocking wrapper (for its watch mode and internals)."""
    store.recall("warm up", limit=1)
    return store.provider


def interleaved(
    fns: Sequence[Callable[[str], Any]], queries: Sequence[str], rounds: int
) -> list[tuple[list[float], list[float]]]:
    """Per function, wall and CPU (whole process) milliseconds of each call. Each round runs
    every function over all queries in turn (each warm in its own loop, as alone), so load
    from other work on the machine hits all of them alike over the rounds."""
    out: list[tuple[list[float], list[float]]] = [([], []) for _ in fns]
    for _ in range(rounds):
        for fn, (wall, cpu) in zip(fns, out, strict=True):
            for q in queries:
                c, t = time.process_time(), time.perf_counter()
                fn(q)
                wall.append((time.perf_counter() - t) * 1000)
                cpu.append((time.process_time() - c) * 1000)
    return out


def keyword(vault: Path, home: GoatHome, rounds: int, profile: int) -> None:
    queries = [q for q, _ in read_tsv("en_questions.tsv")]
    store = open_store(home, vault)
    for _ in range(3):  # first call: full scan; second: starts the watcher
        store.recall("warm up", limit=10)
    prov = provider_of(store)
    watch = getattr(prov, "_watch", None)
    mode = "watched" if watch is not None else "full change scan per call"
    index = prov._index_open()
    bm = bm25s_rankings(vault)
    names = [
        f"goat recall() via provider (10 hits, snippets, result models; {mode})",
        "goat SearchIndex.search (10 hits, snippets)",
    ]
    fns: list[Callable[[str], Any]] = [
        lambda q: store.recall(q, limit=10),
        lambda q: index.search(q, limit=10),
    ]
    if watch is not None:
        names.append("of which: the watcher's settle before each recall")
        fns.append(lambda q: watch.settle())
    # the pipeline alone: a query of one new word no note holds (the watcher's settle, the
    # worker thread's hops, the freshness check, one index lookup, an empty result model)
    misses = iter(range(10**9))
    names.append("of which: recall() of a new word no note holds (the pipeline's floor)")
    fns.append(lambda q: store.recall(f"zq{next(misses)}xv", limit=10))
    if bm is not None:
        names.append("bm25s retrieve (10 hits, no snippets)")
        fns.append(bm)
    first = interleaved(fns[:1], queries, 1)[0]
    got = interleaved(fns, queries, rounds)
    rows = [(names[0] + ", first round (each query new)", *first)]
    rows += [(n, *t) for n, t in zip(names, got, strict=True)]
    bm_wall, bm_cpu = got[-1] if bm is not None else ([], [])
    print(f"In-process keyword recall, {len(queries)} questions x {rounds} rounds (ms):")
    print("| what | p50 | p95 | CPU p50 | p50 / bm25s | p95 / bm25s | CPU p50 / bm25s |")
    print("|---|---|---|---|---|---|---|")
    for name, wall, cpu in rows:
        r = ["", "", ""]
        if bm_wall:
            r = [
                f"{p(wall, 50) / p(bm_wall, 50):.1f}x",
                f"{p(wall, 95) / p(bm_wall, 95):.1f}x",
                f"{p(cpu, 50) / p(bm_cpu, 50):.1f}x",
            ]
        print(
            f"| {name} | {p(wall, 50):.3f} | {p(wall, 95):.3f} | {p(cpu, 50):.3f} | "
            + " | ".join(r)
            + " |"
        )
    if bm_wall:
        for what, mine, theirs in (("CPU", got[0][1], bm_cpu), ("wall", got[0][0], bm_wall)):
            ratio = p(mine, 50) / p(theirs, 50)
            verdict = "PASS" if ratio <= 10 else "MISS"
            print(f"recall() {what} p50 within 10x of bm25s: {verdict} ({ratio:.1f}x)")
        # issue 26's target: queries new to the process (the first round) within 5x
        for what, mine, theirs in (("CPU", first[1], bm_cpu), ("wall", first[0], bm_wall)):
            ratio = p(mine, 50) / p(theirs, 50)
            verdict = "PASS" if ratio <= 5 else "MISS"
            print(
                f"recall() of new queries, {what} p50 within 5x of bm25s: {verdict} ({ratio:.1f}x)"
            )
    if bm_wall:
        floor = got[-2][0]
        ratio = p(floor, 50) / p(bm_wall, 50)
        print(
            f"the pipeline's floor (no note matches), wall p50: {p(floor, 50):.3f} ms,"
            f" {ratio:.1f}x bm25s; recall() cannot be within 5x while this is above 5x"
        )
    if profile:
        # the work runs on the store's worker thread: profile the same call made here
        # (the worker is idle meanwhile), without the two thread hops
        prof = cProfile.Profile()
        prof.enable()
        for q in queries:
            prov._recall(q, 10)
        prof.disable()
        print()
        pstats.Stats(prof).sort_stats("tottime").print_stats(profile)
    store.close()


def hybrid(notes: int, work: Path, rounds: int, sample: int) -> None:
    import numpy as np
    from gen_vault import generate

    from goat_core.contract import embedder_cache_dir
    from goat_core.filestore.search import FUSION, SearchIndex, VectorIndex, fuse
    from goat_core.plugins import Registry

    vault = work / f"vault-{notes}"
    if not (vault / ".bench" / "manifest.json").exists():
        generate(vault, notes, quiet=True)
    import json

    queries = json.loads((vault / ".bench" / "queries.json").read_text())
    queries = [str(q) for q in queries]
    step = max(1, len(queries) // sample)
    queries = queries[::step][:sample]  # rare words and common-word queries alike
    home = GoatHome.from_env(work / "home")
    name = "minilm-en"
    spec = Registry.load().get_embedder(name)
    model = spec.factory(embedder_cache_dir(home.data_dir, name))

    class Filled:
        """The real model's identity and query embedding; random unit vectors for notes."""

        identity = model.identity
        dimensions = model.dimensions

        def __init__(self) -> None:
            self.rng = np.random.default_rng(7)

        def embed_documents(self, texts: Any) -> Any:
            v = self.rng.standard_normal((len(texts), self.dimensions)).astype(np.float32)
            return v / np.linalg.norm(v, axis=1, keepdims=True)

        def embed_query(self, text: str) -> Any:
            return model.embed_query(text)

    store = open_store(home, vault, name)
    prov = provider_of_keyword_only(store)
    index = prov._index_open()
    vpath = home.index_path(prov.root, f"{prov.index_name}-vectors-{name}")
    t = time.perf_counter()
    filler = VectorIndex(vpath, Filled())  # type: ignore[arg-type]
    listing = [(d.path, d.mtime_ns, d.size) for d in index.documents()]

    def load(rel: str) -> tuple[str, str, str] | None:
        note = prov._load(rel)
        if note is None:
            return None
        doc = prov._indexed_doc(note)
        return doc.title, doc.body, doc.description

    filler.sync(listing, load)
    chunks = filler._db.execute("SELECT count(*) FROM chunks").fetchone()[0]
    filler.close()
    print(
        f"\nHybrid at {notes} notes: vector index filled with RANDOM unit vectors for all"
        f" {chunks} chunks ({time.perf_counter() - t:.1f} s); queries embedded by the real"
        f" {name} model (OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')});"
        f" {len(queries)} queries x {rounds} rounds (ms):"
    )
    for _ in range(3):
        store.recall("warm up", limit=10)
    qvecs = {q: model.embed_query(q) for q in queries}
    embed_t = timings(model.embed_query, queries, rounds)
    # the parts, on this thread: the same index files, the query vectors looked up
    vec = VectorIndex(vpath, _Precomputed(model, qvecs))  # type: ignore[arg-type]
    kw = SearchIndex(home.index_path(prov.root, prov.index_name))
    vec_t = timings(lambda q: vec.search(q, FUSION.depth), queries, rounds)
    rest_t = timings(
        lambda q: fuse(
            [(h.path, h.score) for h in kw.search(q, limit=FUSION.depth, snippets=False).hits],
            [(h.path, h.score) for h in vec.search(q, FUSION.depth)],
        ),
        queries,
        rounds,
    )
    vec.close()
    kw.close()
    vectors = prov._vectors  # the provider's own, used on its worker thread
    # no semantic floor here: no random vector would reach minilm-en's, and the figure is of
    # the full fusion (50 vector candidates), as for a query near many notes
    vectors.floor = None
    real_embed = vectors.embedder
    vectors.embedder = _Precomputed(real_embed, qvecs)
    ranked_t = timings(lambda q: store.recall(q, limit=10), queries, rounds)
    vectors.embedder = real_embed
    e2e_t = timings(lambda q: store.recall(q, limit=10), queries, rounds)
    print("| part | p50 | p95 |")
    print("|---|---|---|")
    for label, t in (
        ("query embedding (minilm-en) alone", embed_t),
        ("vector search (int8 scan, best chunk per note)", vec_t),
        ("keyword ranking + vector search + fusion (no snippets)", rest_t),
        ("recall() via provider, query vector precomputed", ranked_t),
        ("recall() via provider end to end (real query embedding)", e2e_t),
    ):
        print(f"| {label} | {p(t, 50):.2f} | {p(t, 95):.2f} |")
    total = p(embed_t, 50) + p(ranked_t, 50)
    print(f"sum of p50s: query embedding + recall without it = {total:.2f} ms")
    e2e = p(e2e_t, 50)
    print(f"hybrid recall() p50 under 30 ms: {'PASS' if e2e < 30 else 'MISS'} ({e2e:.2f} ms)")
    store.close()


class _Precomputed:
    """The model's identity with query vectors looked up (the embedding cost measured apart)."""

    def __init__(self, model: Any, vectors: dict[str, Any]) -> None:
        self.identity = model.identity
        self.dimensions = model.dimensions
        self._model = model
        self._vectors = vectors

    def embed_query(self, text: str) -> Any:
        got = self._vectors.get(text)
        return got if got is not None else self._model.embed_query(text)

    def embed_documents(self, texts: Any) -> Any:
        return self._model.embed_documents(texts)


def provider_of_keyword_only(store: Blocking) -> Any:
    """The provider behind ``store`` after a keyword sync (no vector sync yet)."""
    store.list_pages(limit=1)
    return store.provider


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--vault", type=Path, default=None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--profile", type=int, default=0, help="print the top N of a cProfile")
    ap.add_argument("--hybrid", type=int, default=0, help="also hybrid at this many notes")
    ap.add_argument("--hybrid-queries", type=int, default=50, help="queries of the 10k set used")
    ap.add_argument("--no-keyword", action="store_true", help="skip the keyword comparison")
    ap.add_argument("--work", type=Path, default=None, help="kept between runs (vaults, home)")
    args = ap.parse_args(argv)
    vault = (args.vault or find_vault()).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        print(
            f"vault {vault}: {len(list(vault.rglob('*.md')))} notes;"
            f" python {sys.version.split()[0]}; load average {os.getloadavg()[0]:.1f}"
        )
        if not args.no_keyword:
            keyword(vault, GoatHome.from_env(work / "kw-home"), args.rounds, args.profile)
        if args.hybrid:
            hybrid(args.hybrid, work, args.rounds, args.hybrid_queries)
    return 0


if __name__ == "__main__":
    sys.exit(main())
