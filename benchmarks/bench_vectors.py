"""The vector index's own costs at 10k and 100k notes: storage per note, search p50 (wall and
CPU) over all rows, and peak RSS, with random unit vectors of MiniLM's width (384) standing in
for embeddings (the model's ranking quality is measured by eval_recall.py on the real vault).

    python benchmarks/bench_vectors.py --notes 10000 100000 --chunks-per-note 4.5
    python benchmarks/bench_vectors.py --notes 10000 100000 --model minilm-en

Each size runs in a child process so its peak RSS (``ru_maxrss``) is its own. With
``--model NAME`` the child first loads that embedder plugin (as a recall would, and embeds one
query so its weights are in memory) and keeps it loaded through the sync and the searches, so
the peak RSS is the model's and the index's together; notes are still random vectors. The
notes' size is taken as ``--note-bytes`` per note (default 4,100: the Obsidian Help vault's
mean); the vector index is compared with that. Prints figures and the load average; asserts
nothing.
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


def _load_model(name: str, work: Path) -> Any:
    from goat_core.contract import embedder_cache_dir
    from goat_core.plugins import Registry

    model = Registry.load().get_embedder(name).factory(embedder_cache_dir(work / "home", name))
    model.embed_query("load the weights")
    return model


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(notes: int, per_note: float, work: Path, model_name: str) -> dict[str, float]:
    from goat_core.filestore.search import VectorIndex

    before = _rss_mb()
    model = _load_model(model_name, work) if model_name else None
    model_mb = _rss_mb() - before
    path = work / f"v{notes}-{model_name or 'none'}.sqlite"
    index = VectorIndex(path, RandomEmbedder())
    sections = max(1, round(per_note))
    body = "".join(f"## Part {i}\n\ntext of part {i}\n\n" for i in range(sections))
    t = time.perf_counter()
    index.sync([(f"n{i}.md", 1, 1) for i in range(notes)], lambda p: (p, body, ""))
    sync_s = time.perf_counter() - t
    index.search("warm", 10)
    times = []
    cpu = []
    for i in range(30):
        t, c = time.perf_counter(), time.process_time()
        index.search(f"q{i}", 50)
        times.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
    index._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = index.size_bytes()
    chunks = index._db.execute("SELECT count(*) FROM chunks").fetchone()[0]
    index.close()
    del model
    return {
        "notes": notes,
        "chunks": chunks,
        "sync_s": sync_s,
        "search_p50_ms": statistics.median(times),
        "search_cpu_p50_ms": statistics.median(cpu),
        "index_bytes": size,
        "model_mb": model_mb,
        "peak_rss_mb": _rss_mb(),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--notes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--chunks-per-note", type=float, default=4.5)
    ap.add_argument("--note-bytes", type=int, default=4100)
    ap.add_argument("--model", default="", help="embedder plugin to hold loaded (minilm-en)")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        n, per, work, model = args.child
        print(json.dumps(child(int(n), float(per), Path(work), model)))
        return 0
    print(f"load average before: {' '.join(open('/proc/loadavg').read().split()[:3])}")
    print(
        f"model loaded: {args.model or 'none'}\n\n| notes | rows | write s | search p50 ms |"
        " search CPU p50 ms | index MB | x notes | model MB | peak RSS MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as work:
        for n in args.notes:
            cmd = [sys.executable, __file__, "--child", str(n), str(args.chunks_per_note)]
            out = subprocess.run(
                [*cmd, work, args.model],
                capture_output=True,
                text=True,
                check=True,
                env=os.environ,
            ).stdout
            r = json.loads(out)
            ratio = r["index_bytes"] / (n * args.note_bytes)
            print(
                f"| {n} | {r['chunks']} | {r['sync_s']:.1f} | {r['search_p50_ms']:.1f} | "
                f"{r['search_cpu_p50_ms']:.1f} | {r['index_bytes'] / 1e6:.1f} | {ratio:.2f}x | "
                f"{r['model_mb']:.0f} | {r['peak_rss_mb']:.0f} |"
            )
    print(f"load average after: {' '.join(open('/proc/loadavg').read().split()[:3])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
