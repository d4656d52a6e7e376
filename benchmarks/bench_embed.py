"""Cold embedding of a synthetic vault (``gen_vault.py``) by the shipped markdown provider with
an embedder: wall and CPU time of the first recall (which embeds every note), chunks and word
pieces embedded, the rate, the time extrapolated to 10k notes, and peak RSS. The embedder's
one-time preparation (``minilm-en`` builds and caches its ONNX graph) is run and timed first,
apart from the embedding.

    python benchmarks/bench_embed.py --notes 1000 --embedder minilm-en
    python benchmarks/bench_embed.py --notes 10000 --work /tmp/goat-bench-embed
    python benchmarks/bench_embed.py --notes 300 --workers 1 2   # minilm-en's bulk threads

``--workers`` runs the cold embedding once per value, with ``goat_embed._minilm.MAX_WORKERS``
set to it (the shipped default: at most 4, and no more than the usable cores).

The vault is generated once under ``--work`` (``gen_vault.py``, seed 42) and the GOAT home
under it is emptied first, so every run embeds from scratch. The provider is built through its
spec's factory and driven through ``_blocking.Blocking``, with the host's progress sink replaced by
a counter printed on one line. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

PREPARE = """
import sys
from goat_core.contract import embedder_cache_dir
from goat_core.plugins import Registry
spec = Registry.load().get_embedder(sys.argv[2])
spec.factory(embedder_cache_dir(sys.argv[1], sys.argv[2])).embed_query("warm up")  # builds
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--notes", type=int, default=1000)
    ap.add_argument("--embedder", default="minilm-en")
    ap.add_argument("--work", type=Path, default=Path("/tmp/goat-bench-embed"))
    ap.add_argument("--workers", type=int, nargs="*", default=[])
    args = ap.parse_args(argv)
    if args.workers:
        for n in args.workers:
            print(f"--- MAX_WORKERS={n}", flush=True)
            rest = [
                "--notes",
                str(args.notes),
                "--embedder",
                args.embedder,
                "--work",
                str(args.work),
            ]
            env = {**os.environ, "GOAT_BENCH_MAX_WORKERS": str(n)}
            subprocess.run([sys.executable, __file__, *rest], check=True, env=env)
        return 0
    if "GOAT_BENCH_MAX_WORKERS" in os.environ:
        from goat_embed import _minilm

        _minilm.MAX_WORKERS = int(os.environ["GOAT_BENCH_MAX_WORKERS"])
    vault = args.work / f"vault-{args.notes}"
    if not (vault / ".bench" / "manifest.json").is_file():
        subprocess.run(
            [sys.executable, str(HERE / "gen_vault.py"), str(vault), "--notes", str(args.notes)],
            check=True,
        )
    home_dir = args.work / "goat-home"
    shutil.rmtree(home_dir, ignore_errors=True)

    from eval_recall import open_store

    from goat_core.filestore.search import chunk_note
    from goat_core.host import GoatHome

    home = GoatHome.from_env(home_dir)
    keyword = open_store(home, vault, None)
    keyword.recall("warm up", limit=1)  # the keyword index, not timed
    keyword.close()

    # the embedder's one-time preparation (minilm-en builds its ONNX graph, cached under the
    # GOAT home): timed apart from the embedding, in a child so that the peak RSS below is
    # the embedding's own
    prep0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", PREPARE, str(home.data_dir), args.embedder], check=True)
    prep = time.perf_counter() - prep0

    store = open_store(home, vault, args.embedder)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cpu0, wall0 = time.process_time(), time.perf_counter()
    store.recall("warm up", limit=1)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    store.close()

    from goat_core.filestore import parse_note

    chunks = 0
    for p in vault.rglob("*.md"):
        note = parse_note(p.read_text(encoding="utf-8"))
        chunks += len(chunk_note(p.stem, note.body))
    print()
    print(f"notes {args.notes}, chunks {chunks}, embedder {args.embedder}")
    print(f"embedder's one-time preparation (graph build, first use on a machine): {prep:.1f} s")
    print(f"cold embedding: wall {wall:.1f} s, CPU {cpu:.1f} s, {chunks / wall:.1f} chunks/s")
    print(
        f"extrapolated to 10k notes: {wall * 10000 / args.notes / 60:.1f} min wall "
        f"(+ {prep:.0f} s of preparation once)"
    )
    print(f"peak RSS {rss / 1024:.0f} MB (before the embedder loaded: {rss0 / 1024:.0f} MB)")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main())
