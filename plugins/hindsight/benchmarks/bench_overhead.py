"""Added latency of goat-hindsight over the raw mcp SDK, on a live Hindsight server.

    python bench_overhead.py --url http://127.0.0.1:PORT [--rounds 120]

Creates a bank through the REST API, retains a few memories, then runs ``rounds`` rounds of
interleaved calls: per round, recall and then get_bank, each once through the provider
(``recall()`` and ``check()``, connection reused) and once through a raw
``mcp.ClientSession`` on its own reused connection, in a random order, 10 ms apart. Prints the
median and p95 of each, and the added latency both between medians and as the median of the
per-round differences (target: at most 1.5 ms).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from goat_core.contract import MemoryWrite
from goat_core.host import GoatHome

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from live_server import live_provider


async def _timed(fn: Callable[[], Awaitable[Any]], into: list[float]) -> None:
    start = time.perf_counter()
    await fn()
    into.append((time.perf_counter() - start) * 1000)


def _line(name: str, values: list[float]) -> str:
    values = sorted(values)
    p95 = values[int(len(values) * 0.95) - 1]
    median = statistics.median(values)
    return f"{name:<22} n={len(values):<4} median {median:7.2f} ms  p95 {p95:7.2f} ms"


async def main(url: str, rounds: int) -> None:
    bank = f"bench-{uuid.uuid4().hex[:8]}"
    httpx2.put(f"{url}/v1/default/banks/{bank}", json={}, timeout=30).raise_for_status()
    home = GoatHome.at(Path(tempfile.mkdtemp()) / "goat-home")
    provider = live_provider(home, url, bank)
    for i in range(5):
        await provider.remember(MemoryWrite(text=f"benchmark note {i} about green tea"))
    await anyio.sleep(2)
    times: dict[str, list[float]] = {
        k: [] for k in ("goat recall", "goat get_bank", "raw recall", "raw get_bank")
    }
    query = {"query": "green tea", "max_tokens": 4096, "budget": "mid"}
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=60)) as http,
        streamable_http_client(f"{url}/mcp/{bank}/", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        await session.list_tools()
        await provider.check()
        for _ in range(5):  # warm both paths
            await provider.recall("green tea")
            await session.call_tool("recall", query)
        rng = random.Random(0)
        diffs: dict[str, list[float]] = {"recall": [], "get_bank": []}
        for _ in range(rounds):
            for tool, goat, raw in (
                (
                    "recall",
                    lambda: provider.recall("green tea"),
                    lambda: session.call_tool("recall", query),
                ),
                ("get_bank", provider.check, lambda: session.call_tool("get_bank", {})),
            ):
                order = [("goat", goat), ("raw", raw)]
                rng.shuffle(order)  # neither path always runs first
                for side, fn in order:
                    await anyio.sleep(0.01)  # let the server settle between calls
                    await _timed(fn, times[f"{side} {tool}"])
                diffs[tool].append(times[f"goat {tool}"][-1] - times[f"raw {tool}"][-1])
    await provider.close()
    total = sum(len(v) for v in times.values())
    print(f"server {url}, bank {bank}, {rounds} rounds, {total} calls")
    for name, values in times.items():
        print(_line(name, values))
    for tool in ("recall", "get_bank"):
        added = statistics.median(times[f"goat {tool}"]) - statistics.median(times[f"raw {tool}"])
        paired = statistics.median(diffs[tool])
        print(
            f"added latency, {tool}: {added:+.2f} ms between medians, {paired:+.2f} ms median of "
            "paired differences (target <= 1.5 ms)"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--rounds", type=int, default=120)
    args = parser.parse_args()
    anyio.run(main, args.url.rstrip("/"), args.rounds)
