"""Another process holding a file lock, as ``goat serve`` holds a store's embedding lock
while it embeds (goat_core/filestore/_embedding.py)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HOLD = """
import sys, filelock
lock = filelock.FileLock(sys.argv[1])
lock.acquire()
print("held", flush=True)
sys.stdin.read()
"""


@contextmanager
def lock_held_elsewhere(path: Path) -> Iterator[subprocess.Popen[str]]:
    """A child process holding the filelock at ``path`` until the block ends, or until the
    caller closes its stdin (then ``wait`` for it)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        assert proc.stdout.readline() == "held\n"
        yield proc
    finally:
        if proc.poll() is None:
            proc.stdin.close()
            proc.wait(10)
