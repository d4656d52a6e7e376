"""Child process of test_concurrency.py: N appends to one note through the provider API.

Usage: python _append_worker.py HOME ROOT TAG N; prints one JSON line
``{"stored": [...], "conflicts": [...]}`` naming each entry by its text.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

from goat_core.contract import Binding, MemoryWrite, ProviderContext, Scope
from goat_core.errors import Conflict
from goat_core.host import GoatHome
from goat_markdown.plugin import MarkdownSettings, spec


async def main() -> None:
    home, root, tag, n = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    settings = MarkdownSettings(root=root)
    context = ProviderContext(
        scope=Scope.global_(),
        binding=Binding(id="default", provider="markdown"),
        settings=settings,
        home=GoatHome.at(home),
    )
    stored, conflicts = [], []
    p = spec().factory(context)
    try:
        for i in range(n):
            text = f"entry-{tag}-{i:03d}"
            try:
                await p.remember(MemoryWrite(text=text, title="Shared log"))
                stored.append(text)
            except Conflict:
                conflicts.append(text)
    finally:
        await p.close()
    print(json.dumps({"stored": stored, "conflicts": conflicts}))


if __name__ == "__main__":
    anyio.run(main)
