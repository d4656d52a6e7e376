"""Two processes x 100 appends to one note, plus one external edit taken under the same lock."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import filelock

from goat_core.filestore import atomic_write, etag
from goat_core.host import GoatHome

WORKER = Path(__file__).with_name("_append_worker.py")


def test_two_processes_and_an_external_edit_lose_nothing(home: GoatHome, vault: Path) -> None:
    note = vault / "Shared log.md"
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(home.config_dir), str(vault), tag, "100"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag in ("a", "b")
    ]
    # the external edit: once some entries landed, an editor-like change under the store lock
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if note.exists() and note.read_text().count("entry-") >= 40:
            break
        time.sleep(0.01)
    # StoreLock's lock file, polled every millisecond: with filelock's default 50 ms poll the two
    # workers, taking the lock back to back, can keep it until all 200 entries have landed
    # (then the edit is not "in the middle" any more); the lock itself is the same
    lock = filelock.FileLock(str(home.lock_path(vault)), timeout=60, preserve_lock_file=True)
    with lock.acquire(poll_interval=0.001):
        raw = note.read_bytes()
        atomic_write(note, raw + b"\nexternal-edit-marker\n", expected_etag=etag(raw))
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    stored = [t for r in results for t in r["stored"]]
    conflicts = [t for r in results for t in r["conflicts"]]
    text = note.read_text()
    present = [f"entry-{tag}-{i:03d}" for tag in "ab" for i in range(100)]
    landed = [t for t in present if f"\n{t}\n" in text]
    print(f"stored {len(stored)}, explicit conflicts {len(conflicts)}, external edit 1")
    assert "external-edit-marker" in text
    assert text.index("external-edit-marker") < text.rindex("entry-")  # taken in the middle
    assert sorted(landed) == sorted(stored)  # every stored receipt is in the note
    assert len(landed) + len(conflicts) == 200  # nothing lost silently
    assert text.count("\nexternal-edit-marker\n") == 1  # the external edit, kept exactly once
    assert not any(p.name.endswith(".goat-tmp") for p in vault.iterdir())
