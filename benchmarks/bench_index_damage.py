"""Reads in a long-lived host after search-index damage: how long are answers not whole?

    python benchmarks/bench_index_damage.py [--notes 1200] [--damages 10] [--load 2]

One markdown store (the shipped provider through ``_blocking.Blocking``, file watcher on) answers
recalls of a word only one note holds, back to back, while ``--load`` CPU-bound processes run.
Every 1.5 s the index file's bytes are damaged (one 4 KB page in three zeroed from a random
point). Each read is classed: ``ok`` (the one note, complete, not degraded), ``degraded``
(flagged: ``complete=False`` or a reason), ``silent`` (wrong or empty but claiming to be
whole; the target is 0) or ``error``. Printed: the counts, and the longest window after a
damage during which reads were not ``ok``, in seconds and reads (the read that finds the
damage re-indexes every note before it answers, so its own time is that window).
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_edit_race import _burn, _open_store  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=1200)
    parser.add_argument("--damages", type=int, default=10)
    parser.add_argument("--load", type=int, default=2)
    args = parser.parse_args()
    from goat_core.host import GoatHome

    rng = random.Random(13)
    stop = multiprocessing.Event()
    burners = [
        multiprocessing.Process(target=_burn, args=(stop,), daemon=True) for _ in range(args.load)
    ]
    for b in burners:
        b.start()
    counts = {"ok": 0, "degraded": 0, "silent": 0, "error": 0}
    worst_s, worst_reads, slowest_read = 0.0, 0, 0.0
    with tempfile.TemporaryDirectory(prefix="goat-damage-") as tmp:
        vault = Path(tmp) / "vault"
        vault.mkdir()
        for i in range(args.notes):
            filler = " ".join(f"w{rng.randrange(50_000)}" for _ in range(150))
            (vault / f"n{i}.md").write_text(f"uniq{i} {filler}\n", encoding="utf-8")
        home = GoatHome.at(Path(tmp) / "home")
        db = home.index_path(vault)
        with _open_store(Path(tmp) / "home", vault) as store:
            for i in range(3):
                store.recall(f"uniq{i}", limit=5)
            for _ in range(args.damages):
                size = db.stat().st_size
                first = max(8192, int(size * rng.uniform(0.0, 0.9)) // 4096 * 4096)
                with open(db, "r+b") as f:
                    for off in range(first, size, 4096 * 3):
                        f.seek(off)
                        f.write(b"\0" * 4096)
                damaged_at = time.monotonic()
                bad_until, bad_reads = damaged_at, 0
                while time.monotonic() - damaged_at < 1.5:
                    n = rng.randrange(args.notes)
                    t0 = time.monotonic()
                    try:
                        r = store.recall(f"uniq{n}", limit=5)
                        whole = r.complete and not r.degraded
                        right = [it.id for it in r.items] == [f"n{n}.md"]
                        kind = "ok" if whole and right else ("silent" if whole else "degraded")
                    except Exception:  # counted as an error
                        kind = "error"
                    t1 = time.monotonic()
                    slowest_read = max(slowest_read, t1 - t0)
                    counts[kind] += 1
                    if kind != "ok":
                        bad_until, bad_reads = t1, bad_reads + 1
                worst_s = max(worst_s, bad_until - damaged_at)
                worst_reads = max(worst_reads, bad_reads)
    stop.set()
    for b in burners:
        b.join(timeout=5)
    print(
        f"{args.damages} damages, {args.notes} notes, {args.load} load processes: reads {counts}; "
        f"longest window of reads not ok after a damage: {worst_s * 1000:.0f} ms "
        f"({worst_reads} reads); slowest read (a re-index included): {slowest_read * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()
