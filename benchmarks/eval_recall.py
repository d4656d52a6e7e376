"""Recall quality on the real vault (obsidian-help-en): keyword only, vectors only and hybrid,
side by side in one run, plus bm25s on the same notes and keyword recall speed against it.

    python benchmarks/eval_recall.py                       # MiniLM and USE multilingual
    python benchmarks/eval_recall.py --embedders minilm-en --tune
    python benchmarks/eval_recall.py --note-weights 0,0.1,0.2,0.3,0.4,0.5
    python benchmarks/eval_recall.py --vault DIR --home DIR

Question sets (``benchmarks/questions/``):

- ``en_questions.tsv``: natural questions, each with its answer page. Odd data lines are the
  tuning half (set 1), even lines the reporting half (set 2); ``--tune`` grid-searches the
  fusion weights on set 1 (among settings keeping the descriptions at 0.97 or better) and
  prints the best. ``goat_core.filestore.search.FUSION`` is now chosen on three corpora by
  ``benchmarks/bench_corpora.py --explore`` instead.
  ``--note-weights`` prints, for each weight of a note's title-and-description row
  (``goat_core.filestore.search.NOTE_WEIGHT``), the hybrid MRR@10 on set 1 and on the
  descriptions per embedder: the shipped weight is the best sum over the embedders on set 1
  among weights keeping the descriptions at 0.97 or better.
- descriptions: every note's own frontmatter ``description`` as the query for that note.
- ``descriptions_translated.tsv``: 31 of those descriptions in French, Russian and Japanese,
  queried against the English vault.

Each store is the shipped ``markdown`` provider (built through its spec's factory) with
``embedder=NAME``; one ``recall`` brings its keyword and vector indexes up to date under
``--home`` (kept between runs: the vault is embedded once per model). Rankings are then read
from those same index files with the shipped ``SearchIndex.search``, ``VectorIndex.search`` and
``fuse``, the functions ``FolderStoreProvider._ranked`` uses. MRR@10: mean of 1/rank of the
answer page within the first 10 (0 when absent). Requires ``pip install bm25s`` for the bm25s
rows (skipped otherwise). ``GOAT_EVAL_FLOOR=X`` (or ``none``) ranks with that semantic floor
instead of each embedder's declared ``semantic_floor``. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import resource
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _blocking import Blocking

from goat_core.contract import Binding, ProviderContext, Scope, embedder_cache_dir
from goat_core.filestore.search import FUSION, Fusion, SearchIndex, VectorIndex, fuse
from goat_core.host import GoatHome
from goat_core.plugins import Registry

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "questions"
DEPTH = 50


def find_vault() -> Path:
    for base in (os.environ.get("GOAT_TEST_VAULT"), os.environ.get("GOAT_SHARED_DIR")):
        if base:
            p = Path(base)
            if (p / "data" / "obsidian-help-en").is_dir():
                return p / "data" / "obsidian-help-en"
            if p.is_dir():
                return p
    for up in (HERE.parent.parent / "shared", Path("/work/shared")):
        if (up / "data" / "obsidian-help-en").is_dir():
            return up / "data" / "obsidian-help-en"
    raise SystemExit("vault not found: set GOAT_SHARED_DIR or pass --vault")


def read_tsv(name: str) -> list[list[str]]:
    rows = []
    for line in (QUESTIONS / name).read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            rows.append(line.split("\t"))
    return rows


def descriptions(vault: Path) -> list[tuple[str, str]]:
    """(description, path) of every note with a one-line frontmatter ``description``."""
    out = []
    for p in sorted(vault.rglob("*.md")):
        text = p.read_text(encoding="utf-8")
        m = re.match(r"---\n(.*?)\n---", text, re.S)
        if not m:
            continue
        d = re.search(r"^description:\s*(.+)$", m.group(1), re.M)
        if d and d.group(1).strip().strip("\"'"):
            out.append((d.group(1).strip().strip("\"'"), str(p.relative_to(vault))))
    return out


Ranked = list[tuple[str, float]]


def mrr(rankings: Sequence[Sequence[Any]], answers: Sequence[str]) -> float:
    total = 0.0
    for scored, answer in zip(rankings, answers, strict=True):
        ranked = [r[0] if isinstance(r, tuple) else r for r in scored]
        if answer in ranked[:10]:
            total += 1.0 / (ranked.index(answer) + 1)
    return total / max(len(answers), 1)


def open_store(home: GoatHome, root: Path, embedder: str | None) -> Blocking:
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
        embedders=Registry.load().get_embedder,
        embed_progress=lambda done, total: print(
            f"\r  embedding {done}/{total}", end="", flush=True
        ),
    )
    return Blocking(lambda: spec().factory(context))


class System:
    """Keyword and vector rankings of one vault for one embedder, read from the store's files."""

    def __init__(self, home: GoatHome, vault: Path, embedder: str | None) -> None:
        t0 = time.perf_counter()
        store = open_store(home, vault, embedder)
        store.recall("warm up", limit=1)  # brings both indexes up to date
        store.close()
        self.sync_seconds = time.perf_counter() - t0
        self.keyword = SearchIndex(home.index_path(vault, "search"))
        self.vectors: VectorIndex | None = None
        if embedder is not None:
            spec = Registry.load().get_embedder(embedder)
            model = spec.factory(embedder_cache_dir(home.data_dir, embedder))
            floor = spec.semantic_floor
            if os.environ.get("GOAT_EVAL_FLOOR"):  # a floor to try instead ("none": no floor)
                given = os.environ["GOAT_EVAL_FLOOR"]
                floor = None if given == "none" else float(given)
            self.vectors = VectorIndex(
                home.index_path(vault, f"search-vectors-{embedder}"), model, floor
            )

    def kw(self, q: str) -> list[tuple[str, float]]:
        return [(h.path, h.score) for h in self.keyword.search(q, limit=DEPTH, snippets=False).hits]

    def vec(self, q: str) -> list[tuple[str, float]]:
        assert self.vectors is not None
        return [(h.path, h.score) for h in self.vectors.search(q, DEPTH)]


def fused(kws: list[Ranked], vecs: list[Ranked], f: Fusion) -> list[list[str]]:
    return [[p for p, _ in fuse(k, v, f)] for k, v in zip(kws, vecs, strict=True)]


def tune(
    kws: list[Ranked],
    vecs: list[Ranked],
    answers: list[str],
    guard: tuple[list[Ranked], list[Ranked], list[str]] | None = None,
    floor: float = 0.97,
) -> Fusion:
    """The best fusion on these questions: RRF over keyword weight, vector weight and k, and
    the convex combination over the keyword share (ties: the first found), among those that
    keep MRR@10 on ``guard`` (the descriptions) at ``floor`` or better when any does."""
    candidates = [
        Fusion(keyword=kw, vector=vw, k=k, depth=DEPTH, mode="rrf")
        for kw, vw, k in itertools.product(
            (0.5, 0.75, 1.0, 1.5), (0.5, 1.0, 1.5, 2.0, 3.0), (1.0, 5.0, 10.0, 20.0, 60.0)
        )
    ] + [Fusion(keyword=a / 20, vector=1 - a / 20, depth=DEPTH, mode="cc") for a in range(0, 21)]
    if guard is not None:
        kept = [f for f in candidates if mrr(fused(guard[0], guard[1], f), guard[2]) >= floor]
        candidates = kept or candidates
    best: tuple[float, Fusion] = (-1.0, FUSION)
    for f in candidates:
        score = mrr(fused(kws, vecs, f), answers)
        if score > best[0] + 1e-9:
            best = (score, f)
    return best[1]


def bm25s_rankings(vault: Path) -> Callable[[str], list[str]] | None:
    try:
        import bm25s
    except ImportError:
        return None
    paths = sorted(str(p.relative_to(vault)) for p in vault.rglob("*.md"))
    corpus = [Path(p).stem + "\n" + (vault / p).read_text(encoding="utf-8") for p in paths]
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False
    )

    def search(q: str) -> list[str]:
        tokens = bm25s.tokenize([q], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        docs, _scores = retriever.retrieve(tokens, k=min(10, len(paths)), show_progress=False)
        return [paths[int(i)] for i in docs[0]]

    return search


def p50_ms(fn: Callable[[str], Any], queries: Sequence[str], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        for q in queries:
            t = time.perf_counter()
            fn(q)
            times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |"  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--vault", type=Path, default=None)
    ap.add_argument("--home", type=Path, default=Path("/tmp/goat-eval-home"))
    ap.add_argument("--embedders", default="minilm-en,use-multilingual")
    ap.add_argument("--tune", action="store_true", help="grid-search fusion weights on set 1")
    ap.add_argument(
        "--note-weights", default="", help="comma-separated NOTE_WEIGHT values to compare on set 1"
    )
    args = ap.parse_args(argv)
    vault = (args.vault or find_vault()).resolve()
    home = GoatHome.from_env(args.home)
    qs = read_tsv("en_questions.tsv")
    set1 = [(q, a) for i, (q, a) in enumerate(qs) if i % 2 == 0]
    set2 = [(q, a) for i, (q, a) in enumerate(qs) if i % 2 == 1]
    desc = descriptions(vault)
    trans = read_tsv("descriptions_translated.tsv")
    langs = {"fr": 2, "ru": 3, "ja": 4}
    print(
        f"vault {vault}: {len(list(vault.rglob('*.md')))} notes; questions: set 1 {len(set1)},"
        f" set 2 {len(set2)}; descriptions {len(desc)}; translated {len(trans)} x {len(langs)}"
    )

    sets: dict[str, tuple[list[str], list[str]]] = {
        "descriptions": ([d for d, _ in desc], [p for _, p in desc]),
        "questions set 1 (tune)": ([q for q, _ in set1], [a for _, a in set1]),
        "questions set 2 (report)": ([q for q, _ in set2], [a for _, a in set2]),
    }
    for lang, col in langs.items():
        sets[f"descriptions {lang}"] = ([r[col] for r in trans], [r[0] for r in trans])
    names = list(sets)
    rows: list[list[str]] = []
    keyword = System(home, vault, None)
    kw_lists: dict[str, list[Ranked]] = {n: [keyword.kw(q) for q in sets[n][0]] for n in names}
    rows.append(["goat keyword (BM25F)", *(f"{mrr(kw_lists[n], sets[n][1]):.2f}" for n in names)])
    bm = bm25s_rankings(vault)
    if bm is not None:
        rows.append(
            ["bm25s", *(f"{mrr([bm(q) for q in sets[n][0]], sets[n][1]):.2f}" for n in names)]
        )
    speeds: list[list[str]] = []
    for name in [e for e in args.embedders.split(",") if e]:
        print(f"{name}:")
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        system = System(home, vault, name)
        print(f"\n  index up to date in {system.sync_seconds:.1f} s")
        vec_lists = {n: [system.vec(q) for q in sets[n][0]] for n in names}
        f = FUSION
        if args.tune:
            f = tune(
                kw_lists[names[1]],
                vec_lists[names[1]],
                sets[names[1]][1],
                guard=(kw_lists[names[0]], vec_lists[names[0]], sets[names[0]][1]),
            )
            print(f"  tuned on set 1: {f}")
        for w in [float(x) for x in args.note_weights.split(",") if x]:
            import goat_core.filestore.search._vectors as vectors_module

            shipped, vectors_module.NOTE_WEIGHT = vectors_module.NOTE_WEIGHT, w
            try:
                got = [
                    mrr(fused(kw_lists[n], [system.vec(q) for q in sets[n][0]], f), sets[n][1])
                    for n in names[:2]
                ]
            finally:
                vectors_module.NOTE_WEIGHT = shipped
            print(f"  note weight {w:g}: hybrid set 1 {got[1]:.3f}, descriptions {got[0]:.3f}")
        rows.append([f"{name} alone", *(f"{mrr(vec_lists[n], sets[n][1]):.2f}" for n in names)])
        rows.append(
            [
                f"hybrid goat + {name} ({f.mode}: kw {f.keyword:g}, vec {f.vector:g}"
                + (
                    f", k {f.k:g})"
                    if f.mode == "rrf"
                    else f", span {f.vector_span:g}, scale {f.keyword_scale:g})"
                ),
                *(f"{mrr(fused(kw_lists[n], vec_lists[n], f), sets[n][1]):.2f}" for n in names),
            ]
        )
        queries = sets[names[2]][0]
        hybrid_ms = p50_ms(
            lambda q, s=system, f=f: fuse(s.kw(q), s.vec(q), f),
            queries,  # type: ignore[misc]
        )
        assert system.vectors is not None
        speeds.append(
            [
                name,
                f"{hybrid_ms:.1f}",
                f"{system.vectors.size_bytes() / 1e6:.2f}",
                f"{system.vectors.note_count()}",
                f"{(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024:.0f}",
            ]
        )
    print()
    print("MRR@10, all systems in this run:")
    print(table(rows, ["system", *names]))
    # keyword recall speed, goat (snippets included) against bm25s, same queries
    queries = [q for q, _ in qs]
    goat_ms = p50_ms(lambda q: keyword.keyword.search(q, limit=10), queries)
    print()
    print("In-process recall p50 over the 70 questions (ms):")
    srows = [["goat keyword SearchIndex.search (10 hits, snippets)", f"{goat_ms:.2f}"]]
    if bm is not None:
        bm_ms = p50_ms(bm, queries)
        srows.append(["bm25s retrieve (10 hits, no snippets)", f"{bm_ms:.2f}"])
        srows.append(["ratio goat / bm25s", f"{goat_ms / bm_ms:.1f}x"])
    print(table(srows, ["what", "p50"]))
    notes_bytes = sum(p.stat().st_size for p in vault.rglob("*.md"))
    if speeds:
        print()
        print(
            "Hybrid (vectors + keyword, no snippets) and vector index; "
            f"notes {notes_bytes / 1e6:.2f} MB:"
        )
        print(
            table(
                speeds, ["embedder", "hybrid p50 ms", "vector index MB", "notes", "RSS growth MB"]
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
