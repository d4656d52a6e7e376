"""Timed races between GOAT appends and an editor-style writer: no external edit lost.

    python benchmarks/bench_edit_race.py                      # 500 timed + 500 injected races
    python benchmarks/bench_edit_race.py --races 50 --load 0  # what CI runs (tests/test_faults.py)
    python benchmarks/bench_edit_race.py --no-exchange        # the check-then-rename path

One note, two writers. GOAT appends to it through the shipped ``markdown`` provider (built the
way a host builds it, driven through ``_blocking.Blocking``) in this process.
An editor runs in a child process and saves the way editors do: it reads the note, writes its
own temp file with the content plus one marker line (``edit-<race>``), fsyncs it and renames it
over the note, taking no lock. Each race is one GOAT append and one editor save:

- **timed**: the editor is told to save after a random delay drawn from 0 to 2x the median
  append time measured before, and GOAT's append starts at once, so the rename lands before,
  inside or after the append;
- **injected**: the editor's save is made to land exactly in GOAT's window: after GOAT read
  and checked the note, just before it puts its temp file in place (a hook on the module's
  ``renameat2``, or on ``os.replace`` with ``--no-exchange``).

After each race the note is read: a missing ``edit-<race>`` marker is a **lost edit** (the
target is 0). GOAT's outcome is counted too: ``stored``, ``conflict`` (GOAT saw the editor's
save and wrote nothing), and ``overwritten`` (GOAT stored, then the editor's save, based on
what it read before GOAT's write, replaced it: what any later save by an editor does).

``--load N`` runs N CPU-bound processes meanwhile (default 2: the machine's cores). Prints one
JSON object (``--json``) or a short table.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

NOTE_TITLE = "Race note"


def _editor(note: Path) -> None:
    """The editor child: one command per stdin line (``<race> <delay_s>``), answers ``ok``."""
    for line in sys.stdin:
        race, delay = line.split()
        if float(delay) > 0:
            time.sleep(float(delay))
        data = note.read_bytes()
        tmp = note.with_name(f".{note.name}.editor-{race}.swp")
        with open(tmp, "wb") as f:
            f.write(data + f"\nedit-{race}\n".encode())
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, note)
        sys.stdout.write("ok\n")
        sys.stdout.flush()


def _burn(stop: Any) -> None:
    x = 0
    while not stop.is_set():
        for i in range(100_000):
            x ^= i


def _open_store(home_dir: Path, root: Path) -> Any:
    from _blocking import Blocking

    from goat_core.contract import Binding, ProviderContext, Scope
    from goat_core.host import GoatHome
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
        home=GoatHome.at(home_dir),
    )
    return Blocking(lambda: spec().factory(context))


def run(races: int, *, load: int, exchange: bool, seed: int, work: Path) -> dict[str, Any]:
    """Run ``races`` timed and ``races`` injected races; returns the figures."""
    from goat_core import fileio as _files
    from goat_core.contract import MemoryWrite
    from goat_core.errors import Conflict

    if not exchange:
        _files._renameat2_fn = False  # as on a system without renameat2
    rng = random.Random(seed)
    root = work / "vault"
    root.mkdir(parents=True, exist_ok=True)
    note = root / f"{NOTE_TITLE}.md"
    editor = subprocess.Popen(
        [sys.executable, __file__, "--editor", str(note)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    assert editor.stdin is not None and editor.stdout is not None
    stop = multiprocessing.Event()
    burners = [
        multiprocessing.Process(target=_burn, args=(stop,), daemon=True) for _ in range(load)
    ]
    for b in burners:
        b.start()

    def editor_save(race: str, delay: float) -> None:
        assert editor.stdin is not None and editor.stdout is not None
        editor.stdin.write(f"{race} {delay:.6f}\n")
        editor.stdin.flush()

    def editor_done() -> None:
        assert editor.stdout is not None
        if editor.stdout.readline().strip() != "ok":
            raise RuntimeError("the editor process died")

    counts: dict[str, dict[str, int]] = {
        kind: {"races": 0, "lost_edits": 0, "stored": 0, "conflict": 0, "overwritten": 0}
        for kind in ("timed", "injected")
    }
    lost: list[str] = []
    inject: dict[str, Any] = {"race": None}
    real_renameat2 = _files._renameat2
    real_replace = os.replace

    def fire(target: Path) -> None:
        race = inject["race"]
        if race is not None and Path(target) == note:
            inject["race"] = None
            editor_save(race, 0.0)
            editor_done()

    def hooked_renameat2(old: Path, new: Path, flags: int) -> bool:
        if _files._renameat2_call() is not None:  # else the note goes in by os.replace
            fire(new)
        return real_renameat2(old, new, flags)

    def hooked_replace(src: Any, dst: Any) -> None:
        fire(Path(dst))
        real_replace(src, dst)

    _files._renameat2 = hooked_renameat2  # type: ignore[assignment]
    os.replace = hooked_replace  # type: ignore[assignment]
    started = time.monotonic()
    try:
        with _open_store(work / "home", root) as store:
            store.remember(MemoryWrite(text="first entry", title=NOTE_TITLE))
            append_s = []
            for i in range(20):  # the append time under this load, to spread the delays
                t0 = time.perf_counter()
                store.remember(MemoryWrite(text=f"warm-{i}", title=NOTE_TITLE))
                append_s.append(time.perf_counter() - t0)
            median = statistics.median(append_s)
            plan = ["timed"] * races + ["injected"] * races
            rng.shuffle(plan)
            for n, kind in enumerate(plan):
                race = f"{kind[0]}{n:05d}"
                text = f"goat-{race}"
                if kind == "timed":
                    editor_save(race, rng.uniform(0.0, 2.0 * median))
                else:
                    inject["race"] = race
                try:
                    store.remember(MemoryWrite(text=text, title=NOTE_TITLE))
                    outcome = "stored"
                except Conflict:
                    outcome = "conflict"
                if kind == "timed":
                    editor_done()
                elif inject["race"] is not None:  # the hook never ran
                    inject["race"] = None
                    raise RuntimeError("the injection point was not reached")
                content = note.read_text(encoding="utf-8")
                c = counts[kind]
                c["races"] += 1
                c[outcome] += 1
                if f"\nedit-{race}\n" not in content:
                    c["lost_edits"] += 1
                    lost.append(race)
                if outcome == "stored" and f"{text}\n" not in content:
                    c["overwritten"] += 1
    finally:
        _files._renameat2 = real_renameat2  # type: ignore[assignment]
        os.replace = real_replace  # type: ignore[assignment]
        stop.set()
        for b in burners:
            b.join(timeout=5)
        if editor.stdin is not None:
            editor.stdin.close()
        editor.wait(timeout=10)
    temp_left = sorted(p.name for p in root.iterdir() if p.name.endswith(".goat-tmp"))
    return {
        "races": races * 2,
        "lost_edits": sum(c["lost_edits"] for c in counts.values()),
        "lost": lost[:20],
        "timed": counts["timed"],
        "injected": counts["injected"],
        "exchange": exchange and _files._renameat2_call() is not None,
        "load_processes": load,
        "median_append_ms": round(median * 1000, 2),
        "seconds": round(time.monotonic() - started, 1),
        "goat_temp_files_left": temp_left,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--races", type=int, default=500, help="timed races (as many injected)")
    parser.add_argument("--load", type=int, default=2, help="CPU-bound processes meanwhile")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--no-exchange", action="store_true", help="force check-then-rename")
    parser.add_argument("--work", type=Path, default=None, help="folder for the vault and home")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--editor", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.editor is not None:
        _editor(args.editor)
        return
    with tempfile.TemporaryDirectory(prefix="goat-race-", dir=args.work) as tmp:
        result = run(
            args.races,
            load=args.load,
            exchange=not args.no_exchange,
            seed=args.seed,
            work=Path(tmp),
        )
    if args.json:
        print(json.dumps(result))
        return
    print(
        f"{result['races']} races ({args.races} timed, {args.races} injected), "
        f"{args.load} load processes, renameat2 exchange: {result['exchange']}, "
        f"median append {result['median_append_ms']} ms, {result['seconds']} s"
    )
    for kind in ("timed", "injected"):
        c = result[kind]
        print(
            f"  {kind:9} lost edits {c['lost_edits']}/{c['races']}  stored {c['stored']}  "
            f"conflict {c['conflict']}  GOAT append overwritten by a later editor save "
            f"{c['overwritten']}"
        )
    print(f"LOST EDITS: {result['lost_edits']} (target 0)")


if __name__ == "__main__":
    main()
