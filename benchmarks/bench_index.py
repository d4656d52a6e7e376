"""Benchmark of the markdown provider's recall and index on synthetic vaults.

    python benchmarks/bench_index.py                 # 1k and 10k notes
    python benchmarks/bench_index.py --full          # 1k, 10k and 100k notes
    python benchmarks/bench_index.py --sizes 5000    # any sizes
    python benchmarks/bench_index.py --work DIR      # where vaults and the GOAT home go

Every measured path is the shipped code: the ``markdown`` provider built through its spec's
factory and driven through :class:`_blocking.Blocking` (``reindex()``,
``recall()``), ``goat_core.filestore.walk_notes`` for the change scan and
``goat_core.filestore.parse_note`` (PyYAML's C loader) for the baseline. Every figure is
measured in the same run, on a warm page cache (each vault is read once before timing).
Targets apply at 100k notes; at smaller sizes
the PASS/MISS column is indicative only. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _blocking import Blocking  # noqa: E402
from gen_vault import generate  # noqa: E402

from goat_core.contract import Binding, ProviderContext, Scope  # noqa: E402
from goat_core.filestore import parse_note, walk_notes  # noqa: E402
from goat_core.host import GoatHome  # noqa: E402
from goat_core.serve._local import socket_path  # noqa: E402

TARGET_SIZE = 100_000
T = TypeVar("T")


# --------------------------------------------------------------------------- the provider


def open_store(home: GoatHome, root: Path) -> Blocking:
    """The markdown provider on ``root`` for the Global scope, built the way a host builds it
    (the spec's factory with a :class:`ProviderContext`), behind a :class:`Blocking`."""
    from goat_markdown.plugin import MarkdownSettings, spec

    settings = MarkdownSettings(root=root)
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


def index_files(home: GoatHome, root: Path) -> list[Path]:
    """The store's index database and its WAL and shared-memory files."""
    db = home.index_path(root)
    return [db, Path(f"{db}-wal"), Path(f"{db}-shm")]


# --------------------------------------------------------------------------- measurements


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def baseline(root: Path) -> int:
    """Walk, read every note and parse its frontmatter (``parse_note``: C YAML loader)."""
    n = 0
    for f in walk_notes(root).files:
        with open(root / f.path, encoding="utf-8") as fh:
            parse_note(fh.read())
        n += 1
    return n


def naive_scan(root: Path, query: str) -> list[str]:
    """What a tool without an index does: read every note, match every term (case-folded)."""
    terms = query.lower().split()
    hits = []
    for f in walk_notes(root).files:
        with open(root / f.path, encoding="utf-8") as fh:
            text = fh.read().lower()
        if all(t in text for t in terms):
            hits.append(f.path)
    return hits


def child_cold_index(home: Path, root: Path) -> None:
    """Runs in a child process: open the store and ``reindex()`` it from an empty index,
    print JSON (seconds of the reindex alone, of opening the store, and its counts)."""
    t0 = time.perf_counter()
    sp = open_store(GoatHome.at(home), root)
    t1 = time.perf_counter()
    try:
        counts = sp.reindex()
    finally:
        t2 = time.perf_counter()
        sp.close()
    print(json.dumps({"open": t1 - t0, "seconds": t2 - t1, "counts": counts}))


def run_child_cold_index(home: GoatHome, root: Path) -> tuple[float, float, float, dict[str, int]]:
    """(wall seconds including interpreter start and imports, seconds of ``reindex()``
    itself, peak RSS MB of that child alone via ``os.wait4``, the reindex counts)."""
    for p in index_files(home, root):
        p.unlink(missing_ok=True)
    with tempfile.TemporaryFile("w+") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--child-cold-index",
                str(home.config_dir),
                str(root),
            ],
            stdout=out,
        )
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise SystemExit(f"cold index child failed with exit {proc.returncode}")
        out.seek(0)
        result = json.loads(out.read())
    # ru_maxrss is in KiB on Linux (bytes on macOS)
    rss_mb = usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)
    return wall, float(result["seconds"]), rss_mb, dict(result["counts"])


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    k = max(0, min(len(s) - 1, round(p / 100 * (len(s) - 1))))
    return s[k]


def whole_command(
    root: Path, queries: list[str], home: GoatHome
) -> Iterator[tuple[str, str, float | None]]:
    """``goat recall`` (a new process each time) run in full (its change scan included) and
    answered through a running ``goat serve --pen`` of the same home (goat_core/cli/_fast.py),
    each against ``rg -l`` timed beside it. The server's answers must print exactly what the
    full runs printed. Yields ``(what, line, goat/rg ratio or None)``."""
    goat = shutil.which("goat")
    rg = shutil.which("rg")
    if rg is None:
        yield "", "whole-command: skipped: rg (ripgrep) is not installed", None
    if goat is None:
        yield "", "whole-command: skipped: the goat command is not on PATH", None
        return
    env = dict(os.environ, GOAT_HOME=str(home.config_dir))
    # an installed goat runs from cached bytecode: a machine that turned caching off
    # (PYTHONDONTWRITEBYTECODE) would time compiling goat's sources on every run
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    pen = f"bench-{root.name}".lower()
    bind = subprocess.run(
        [goat, "bind", "--pen", pen, "markdown", "--set", f"root={root}"],
        env=env,
        capture_output=True,
        text=True,
    )
    if bind.returncode != 0 and "already" not in (bind.stderr + bind.stdout).lower():
        msg = f"whole-command: skipped: goat bind failed ({bind.returncode}): {bind.stderr.strip()}"
        yield "", msg, None
        return
    sample = queries[:: max(1, len(queries) // 20)]
    full = dict(env, GOAT_NO_SERVER="1")
    # the store shares the index built above (same GOAT home, same root); first run not timed
    subprocess.run([goat, "recall", queries[0], "--pen", pen], env=full, capture_output=True)

    def rg_run(q: str) -> float:
        argv = [rg, "-l", "-i", "-F", q.split()[0], str(root)]  # type: ignore[list-item]
        return timed(partial(subprocess.run, argv, capture_output=True))[0]

    def goat_runs(run_env: dict[str, str]) -> tuple[list[float], list[float], list[bytes]]:
        g_times: list[float] = []
        r_times: list[float] = []
        outputs: list[bytes] = []
        for q in sample:
            argv = [goat, "recall", q, "--pen", pen]
            t, res = timed(partial(subprocess.run, argv, env=run_env, capture_output=True))
            if res.returncode != 0:
                raise RuntimeError(f"goat recall failed: {res.stderr!r}")
            g_times.append(t)
            outputs.append(res.stdout)
            if rg is not None:
                r_times.append(rg_run(q))
        return g_times, r_times, outputs

    try:
        g_times, r_times, expected = goat_runs(full)
    except RuntimeError as exc:
        yield "", f"whole-command: skipped: {exc}", None
        return
    g = statistics.median(g_times)
    line = f"whole-command goat recall, run in full, p50: {g * 1000:.1f} ms ({len(sample)} queries)"
    yield "", line, None
    if r_times:
        r = statistics.median(r_times)
        yield "full", f"whole-command rg -l p50: {r * 1000:.1f} ms; goat/rg = {g / r:.2f}", g / r
    server = subprocess.Popen(
        [goat, "serve", "--pen", pen],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        sock = socket_path(home.data_dir, f"pen:{pen}")
        deadline = time.monotonic() + 120
        while sock is not None and not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        if sock is None or not sock.exists():
            yield "", "whole-command via server: skipped: goat serve made no socket", None
            return
        # its first recall syncs the store (a change scan): not timed
        subprocess.run([goat, "recall", queries[0], "--pen", pen], env=env, capture_output=True)
        s_times, r2_times, got = goat_runs(env)
    finally:
        server.stdin.close()  # type: ignore[union-attr]
        server.wait(timeout=60)
    same = sum(a == b for a, b in zip(got, expected, strict=True))
    s = statistics.median(s_times)
    yield (
        "",
        (
            f"whole-command goat recall through a running goat serve p50: {s * 1000:.1f} ms;"
            f" output identical to the full run for {same} of {len(sample)} queries"
        ),
        None,
    )
    if r2_times and same == len(sample):
        r2 = statistics.median(r2_times)
        line = f"whole-command rg -l p50 beside it: {r2 * 1000:.1f} ms; goat/rg = {s / r2:.2f}"
        yield "server", line, s / r2


# --------------------------------------------------------------------------- report


class Report:
    def __init__(self, size: int) -> None:
        self.size = size
        self.targets: list[tuple[str, bool, str]] = []

    def fig(self, name: str, value: str) -> None:
        print(f"  {name:<42} {value}", flush=True)

    def target(self, name: str, ok: bool, detail: str) -> None:
        self.targets.append((name, ok, detail))

    def print_targets(self) -> None:
        note = "" if self.size >= TARGET_SIZE else " (targets are set at 100k; indicative here)"
        print(f"  targets{note}:")
        for name, ok, detail in self.targets:
            print(f"    {'PASS' if ok else 'MISS'}  {name:<48} {detail}", flush=True)


def _recall_times(sp: Any, queries: list[str]) -> tuple[list[float], int]:
    times: list[float] = []
    empty = 0
    for q in queries:
        t, res = timed(partial(sp.recall, q, limit=10))
        times.append(t)
        empty += not res.items
    return times, empty


def bench(size: int, work: Path, naive_n: int, whole_only: bool = False) -> Report:
    root = work / f"vault-{size}"
    home = GoatHome.at(work / "goat-home")
    print(f"\n== {size} notes ({root})", flush=True)
    manifest = generate(root, size, quiet=False)
    notes_bytes = int(str(manifest["bytes"]))
    queries: list[str] = json.loads((root / ".bench" / "queries.json").read_text())
    rep = Report(size)
    rep.fig("notes size", f"{notes_bytes / 1e6:.1f} MB")
    baseline(root)  # warm the page cache
    if whole_only:
        _whole_command_figures(rep, root, queries, home)
        rep.print_targets()
        return rep
    t_base, n = timed(lambda: baseline(root))
    rep.fig("baseline: walk + read + parse_note (C YAML)", f"{t_base:.2f} s ({n} notes)")

    t_wall, t_cold, rss, counts = run_child_cold_index(home, root)
    ratio = t_cold / t_base
    rep.fig(
        "cold index: provider reindex() in a child",
        f"{t_cold:.2f} s ({counts.get('added', 0)} notes), {ratio:.1f}x baseline",
    )
    rep.fig(
        "  same, child wall time incl. start", f"{t_wall:.2f} s, {t_wall / t_base:.1f}x baseline"
    )
    rep.fig("peak RSS of the cold index child", f"{rss:.0f} MB")
    rep.target("cold index within 8x baseline", ratio <= 8, f"{ratio:.1f}x")
    rep.target("peak RSS < 200 MB", rss < 200, f"{rss:.0f} MB")

    sp = open_store(home, root)
    try:
        t_walk, walk = timed(lambda: walk_notes(root))
        files = walk.files
        t_scan, c0 = timed(sp.reindex)
        rep.fig("change scan alone: walk_notes", f"{t_walk * 1000:.0f} ms ({len(files)} notes)")
        rep.fig(
            "reindex(), no changes (walk + sync)",
            f"{t_scan * 1000:.0f} ms (unchanged {c0.get('unchanged', '?')})",
        )

        target_file = root / files[len(files) // 2].path
        original = target_file.read_bytes()
        try:
            with open(target_file, "a", encoding="utf-8") as f:
                f.write("\nAn external edit adds zqxbenchedit here.\n")
            t_inc, c1 = timed(sp.reindex)
            found = [i.path for i in sp.recall("zqxbenchedit").items]
        finally:
            target_file.write_bytes(original)
        rep.fig(
            "incremental update: reindex() after 1 edit",
            f"{t_inc * 1000:.0f} ms (updated {c1.get('updated', '?')}, found {len(found)})",
        )
        rep.target(
            "incremental update < 1 s", t_inc < 1.0 and len(found) == 1, f"{t_inc * 1000:.0f} ms"
        )
        sp.reindex()  # restore
        try:  # the same edit seen by a watched object's next recall (no reindex, no walk)
            with open(target_file, "a", encoding="utf-8") as f:
                f.write("\nAn external edit adds zqxbenchwatch here.\n")
            t_w, res_w = timed(partial(sp.recall, "zqxbenchwatch"))
        finally:
            target_file.write_bytes(original)
        rep.fig(
            "  same edit, next recall() (watched object)",
            f"{t_w * 1000:.0f} ms (found {len(res_w.items)})",
        )

        for q in queries[:5]:
            sp.recall(q)  # warm
        times, empty = _recall_times(sp, queries)
        watched = sp.provider._watch is not None and sp.provider._known is not None
    finally:
        sp.close()
    # the same instance served every query: from its second sync on, a long-lived host's
    # provider syncs only what its file watcher reported; a one-shot command scans each time
    mode = (
        "long-lived host: file watcher, only reported paths synced"
        if watched
        else "change scan (walk_notes + index sync) before every call"
    )
    scan_sp = open_store(home, root)
    try:
        scan_sp.provider.watch_files = False
        scan_sample = queries[:: max(1, len(queries) // 10)][:10]
        scan_times = [timed(partial(scan_sp.recall, q, limit=10))[0] for q in scan_sample]
    finally:
        scan_sp.close()
    p50, p95 = pct(times, 50), pct(times, 95)
    rare = [t for t, q in zip(times, queries, strict=True) if " " not in q]
    common = [t for t, q in zip(times, queries, strict=True) if " " in q]
    rep.fig("recall() mode measured", mode)
    rep.fig(
        "recall() in-process p50 / p95",
        f"{p50 * 1000:.2f} ms / {p95 * 1000:.2f} ms ({len(queries)} queries, {empty} empty)",
    )
    rep.fig(
        "  rare words p50 / common words p50",
        f"{pct(rare, 50) * 1000:.2f} ms / {pct(common, 50) * 1000:.2f} ms",
    )
    from goat_core.filestore.search import SearchIndex

    with SearchIndex(home.index_path(root), busy_timeout_s=30) as ix:
        s_times = [timed(partial(ix.search, q, limit=10))[0] for q in queries]
    rep.fig(
        "  of which SearchIndex.search p50 / p95",
        f"{pct(s_times, 50) * 1000:.2f} ms / {pct(s_times, 95) * 1000:.2f} ms",
    )
    rep.fig(
        "  recall() with a change scan per call p50",
        f"{pct(scan_times, 50) * 1000:.2f} ms ({len(scan_times)} queries, watcher off)",
    )
    sample = queries[:: max(1, len(queries) // naive_n)][:naive_n]
    naive = [timed(partial(naive_scan, root, q))[0] for q in sample]
    nv = statistics.median(naive)
    rep.fig("naive full scan per query (median)", f"{nv * 1000:.0f} ms ({len(sample)} queries)")
    rep.fig("speed-up p50 / p95 vs naive", f"{nv / p50:.1f}x / {nv / p95:.1f}x")
    rep.target("recall p50 >= 30x faster than naive", nv / p50 >= 30, f"{nv / p50:.1f}x")
    rep.target("recall p95 >= 5x faster than naive", nv / p95 >= 5, f"{nv / p95:.1f}x")

    # the provider is closed: the last connection checkpointed the WAL
    with SearchIndex(home.index_path(root), busy_timeout_s=30) as ix:
        problems = ix.verify()
        idx_bytes = ix.stats().bytes
    rep.fig("index size", f"{idx_bytes / 1e6:.1f} MB = {idx_bytes / notes_bytes:.2f}x notes")
    rep.target("index < 2x notes", idx_bytes < 2 * notes_bytes, f"{idx_bytes / notes_bytes:.2f}x")
    rep.fig("verify()", "healthy" if not problems else f"PROBLEMS: {problems}")

    _whole_command_figures(rep, root, queries, home)
    rep.print_targets()
    return rep


def _whole_command_figures(rep: Report, root: Path, queries: list[str], home: GoatHome) -> None:
    for what, line, wc_ratio in whole_command(root, queries, home):
        print(f"  {line}", flush=True)
        if wc_ratio is not None and what == "full":
            rep.target(
                "whole-command goat recall within 1.5x of rg -l",
                wc_ratio <= 1.5,
                f"{wc_ratio:.2f}x",
            )
        if wc_ratio is not None and what == "server":
            rep.target(
                "whole-command goat recall through a server below rg -l",
                wc_ratio < 1,
                f"{wc_ratio:.2f}x",
            )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Benchmark the markdown provider's recall.")
    ap.add_argument("--sizes", type=int, nargs="*", help="note counts (default 1000 10000)")
    ap.add_argument("--full", action="store_true", help="also 100000 notes")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "goat-bench")
    ap.add_argument(
        "--whole-command-only",
        action="store_true",
        help="only the whole-command figures (goat recall run in full and through a server)",
    )
    ap.add_argument("--naive-queries", type=int, default=20, help="queries timed by naive scan")
    ap.add_argument("--child-cold-index", nargs=2, metavar=("HOME", "ROOT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child_cold_index:
        child_cold_index(Path(args.child_cold_index[0]), Path(args.child_cold_index[1]))
        return 0
    sizes = args.sizes or [1000, 10_000]
    if args.full and TARGET_SIZE not in sizes:
        sizes.append(TARGET_SIZE)
    args.work = args.work.absolute()
    args.work.mkdir(parents=True, exist_ok=True)
    import sqlite3

    print(
        f"python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}, {os.cpu_count()} CPUs"
    )
    for size in sizes:
        naive_n = args.naive_queries if size < TARGET_SIZE else min(args.naive_queries, 6)
        bench(size, args.work, naive_n, args.whole_command_only)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
