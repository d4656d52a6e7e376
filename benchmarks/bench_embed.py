"""Cold embedding of a synthetic vault (``gen_vault.py``) by the shipped markdown provider with
an embedder: wall and CPU time of the first recall (which embeds every note), chunks and word
pieces embedded, the rate, the time extrapolated to 10k notes, and peak RSS.

    python benchmarks/bench_embed.py --notes 1000 --embedder minilm-en
    python benchmarks/bench_embed.py --notes 10000 --work /tmp/goat-bench-embed

The vault is generated once under ``--work`` (``gen_vault.py``, seed 42) and the GOAT home
under it is emptied first, so every run embeds from scratch. The provider is built through its
spec's factory and driven through ``SyncProvider``, with the host's progress sink replaced by
a counter printed on one line. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--notes", type=int, default=1000)
    ap.add_argument("--embedder", default="minilm-en")
    ap.add_argument("--work", type=Path, default=Path("/tmp/goat-bench-embed"))
    args = ap.parse_args(argv)
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
    print(f"cold embedding: wall {wall:.1f} s, CPU {cpu:.1f} s, {chunks / wall:.1f} chunks/s")
    print(f"extrapolated to 10k notes: {wall * 10000 / args.notes / 60:.1f} min wall")
    print(f"peak RSS {rss / 1024:.0f} MB (before the embedder loaded: {rss0 / 1024:.0f} MB)")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main())
