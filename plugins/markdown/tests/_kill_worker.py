"""Child process of test_faults.py: a GOAT writer that stops inside its atomic write.

Usage: python _kill_worker.py HOME ROOT TEXT. Appends TEXT to the note ``Killed log`` through
the provider; once its temp file is written and fsynced (before the rename), it prints
``in-write <temp file>`` and sleeps, so the test can SIGKILL it exactly there.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import anyio

from goat_core.contract import Binding, MemoryWrite, ProviderContext, Scope
from goat_core.host import GoatHome
from goat_markdown.plugin import MarkdownSettings, spec


def main() -> None:
    home, root, text = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    real_fsync = os.fsync

    def fsync_then_stop(fd: int) -> None:
        real_fsync(fd)
        try:
            name = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return
        if name.endswith(".goat-tmp") and "Killed log" in name:
            sys.stdout.write(f"in-write {name}\n")
            sys.stdout.flush()
            time.sleep(60)

    os.fsync = fsync_then_stop
    settings = MarkdownSettings(root=root)
    context = ProviderContext(
        scope=Scope.global_(),
        binding=Binding(id="default", provider="markdown"),
        settings=settings,
        home=GoatHome.at(home),
    )
    p = spec().factory(context)

    async def write() -> None:
        try:
            await p.remember(MemoryWrite(text=text, title="Killed log"))
        finally:
            await p.close()

    anyio.run(write)
    print("finished")


if __name__ == "__main__":
    main()
