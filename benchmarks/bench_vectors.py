"""The vector index's own costs at 10k and 100k notes, without a model: storage per note,
search p50 over all chunks, and peak RSS, with random unit vectors of MiniLM's width (384)
standing in for embeddings (the model's cost is measured by eval_recall.py on the real vault).

    python benchmarks/bench_vectors.py --notes 10000 100000 --chunks-per-note 4.5

Each size runs in a child process so its peak RSS (``ru_maxrss``) is its own. The notes'
size is taken as ``--note-bytes`` per note (default 4,100: the Obsidian Help vault's mean);
the vector index is compared with that. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


class RandomEmbedder:
    identity = "random@384"
    dimensions = 384

    def __init__(self) -> None:
        import numpy as np

        self.rng = np.random.default_rng(7)

    def _rows(self, n: int) -> Any:
        import numpy as np

        v = self.rng.standard_normal((n, self.dimensions)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def embed_documents(self, texts: Any) -> Any:
        return self._rows(len(texts))

    def embed_query(self, text: str) -> Any:
        return self._rows(1)[0]


def child(notes: int, per_note: float, work: Path) -> dict[str, float]:
    from goat_core.filestore.search import VectorIndex

    path = work / f"v{notes}.sqlite"
    index = VectorIndex(path, RandomEmbedder())
    sections = max(1, round(per_note))
    body = "".join(f"## Part {i}\n\ntext of part {i}\n\n" for i in range(sections))
    t = time.perf_counter()
    index.sync([(f"n{i}.md", 1, 1) for i in range(notes)], lambda p: (p, body, ""))
    sync_s = time.perf_counter() - t
    index.search("warm", 10)
    times = []
    for i in range(30):
        t = time.perf_counter()
        index.search(f"q{i}", 50)
        times.append((time.perf_counter() - t) * 1000)
    index._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = index.size_bytes()
    chunks = index._db.execute("SELECT count(*) FROM chunks").fetchone()[0]
    index.close()
    return {
        "notes": notes,
        "chunks": chunks,
        "sync_s_without_model": sync_s,
        "search_p50_ms": statistics.median(times),
        "index_bytes": size,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--notes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--chunks-per-note", type=float, default=4.5)
    ap.add_argument("--note-bytes", type=int, default=4100)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        n, per, work = args.child
        print(json.dumps(child(int(n), float(per), Path(work))))
        return 0
    print(
        "| notes | chunks | write s (no model) | search p50 ms | index MB | x notes | peak RSS MB |"
    )
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as work:
        for n in args.notes:
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(n), str(args.chunks_per_note), work],
                capture_output=True,
                text=True,
                check=True,
                env=os.environ,
            ).stdout
            r = json.loads(out)
            ratio = r["index_bytes"] / (n * args.note_bytes)
            print(
                f"| {n} | {r['chunks']} | {r['sync_s_without_model']:.1f} | "
                f"{r['search_p50_ms']:.1f} | {r['index_bytes'] / 1e6:.1f} | {ratio:.2f}x | "
                f"{r['peak_rss_mb']:.0f} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
