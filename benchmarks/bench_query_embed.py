"""Embedding speed and memory of ``minilm-en`` (ONNX Runtime, int8), ``minilm-en-fp32`` and,
as a baseline, the NumPy forward pass the plugin had before (read from git at ``--numpy-from``),
each in its own child process so that peak RSS is its own:

- query: p50 / p95 of ``embed_query`` over the 70 questions of ``questions/en_questions.tsv``
  (short natural questions, 6-20 word pieces), after 3 warm-up calls;
- bulk: ``embed_documents`` of the first ``--bulk`` notes of the vault, each cut at 800
  characters (so nearly every text fills the 128-token window): wall, CPU and texts/s;
- RSS once the model is loaded, and peak RSS.

The ONNX variants run with ONNX Runtime intra-op threads 1 (shipped:
``goat_embed._minilm.THREADS``) and 2. The load average is printed before and after.

    python benchmarks/bench_query_embed.py --vault /path/to/obsidian-help-en
    python benchmarks/bench_query_embed.py --numpy-from ''     # no NumPy baseline

The graphs are built (or taken from the cache) under ``--cache`` before timing. Prints
figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import json, os, resource, statistics, sys, time
from pathlib import Path
args = json.loads(sys.argv[1])
from goat_embed._weights import find_model_dir
model_dir = find_model_dir()
texts = [p.read_text(encoding="utf-8")[:800]
         for p in sorted(Path(args["vault"]).rglob("*.md"))[: args["bulk"]]]
questions = [line.split("\t")[0] for line in open(args["questions"], encoding="utf-8")
             if line.strip() and not line.startswith("#")]
if args["kind"] == "numpy":
    sys.path.insert(0, args["numpy_dir"])
    from old_minilm import MiniLM
    model = MiniLM(model_dir)
else:
    from goat_embed import _minilm
    model = _minilm.MiniLM(model_dir, Path(args["cache"]), args["kind"], threads=args["threads"])
loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
for q in questions[:3]:
    model.embed_query(q)
times = []
for q in questions:
    t = time.perf_counter()
    model.embed_query(q)
    times.append((time.perf_counter() - t) * 1000)
times.sort()
cpu, wall = time.process_time(), time.perf_counter()
model.embed_documents(texts)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
print(json.dumps({
    "p50": statistics.median(times), "p95": times[int(len(times) * 0.95)],
    "bulk_wall": wall, "bulk_cpu": cpu, "rate": len(texts) / wall, "texts": len(texts),
    "rss_loaded": loaded, "rss_peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--vault", type=Path, default=os.environ.get("GOAT_TEST_VAULT"))
    ap.add_argument("--bulk", type=int, default=96)
    ap.add_argument("--cache", type=Path, default=Path("/tmp/goat-bench-query-embed"))
    ap.add_argument(
        "--numpy-from",
        default="fe847b3",
        help="git revision whose plugins/embed/src/goat_embed/_minilm.py is the NumPy baseline",
    )
    args = ap.parse_args(argv)
    if args.vault is None or not any(Path(args.vault).rglob("*.md")):
        ap.error(f"no notes in --vault {args.vault} (or GOAT_TEST_VAULT)")
    args.vault = Path(args.vault)
    runs: list[tuple[str, str, int]] = []
    tmp = tempfile.TemporaryDirectory(prefix="goat-bench-numpy-")
    if args.numpy_from:
        source = subprocess.run(
            ["git", "show", f"{args.numpy_from}:plugins/embed/src/goat_embed/_minilm.py"],
            cwd=HERE.parent,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        Path(tmp.name, "old_minilm.py").write_text(source, encoding="utf-8")
        runs.append((f"NumPy ({args.numpy_from})", "numpy", 0))
    for kind in ("fp32", "int8"):
        runs += [(f"ORT {kind}, intra-op 1", kind, 1), (f"ORT {kind}, intra-op 2", kind, 2)]
    print(f"load average before: {os.getloadavg()}")
    print(
        "| runtime | query p50 ms | query p95 ms | bulk texts | bulk wall s | bulk CPU s "
        "| texts/s | RSS loaded MB | peak RSS MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for label, kind, threads in runs:
        spec = {
            "vault": str(args.vault),
            "bulk": args.bulk,
            "questions": str(HERE / "questions" / "en_questions.tsv"),
            "kind": kind,
            "threads": threads,
            "cache": str(args.cache),
            "numpy_dir": tmp.name,
        }
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "2"}
        done = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps(spec)],
            capture_output=True,
            text=True,
            env=env,
        )
        if done.returncode != 0:
            print(f"| {label} | failed: {done.stderr.strip().splitlines()[-1:]} |")
            continue
        r = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"| {label} | {r['p50']:.1f} | {r['p95']:.1f} | {r['texts']} | {r['bulk_wall']:.1f} "
            f"| {r['bulk_cpu']:.1f} | {r['rate']:.1f} | {r['rss_loaded']:.0f} "
            f"| {r['rss_peak']:.0f} |",
            flush=True,
        )
    print(f"load average after: {os.getloadavg()}")
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
