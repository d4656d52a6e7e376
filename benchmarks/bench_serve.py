"""Figures for ``goat serve`` and ``goat hook claude-code`` (printed, never asserted).

    python benchmarks/bench_serve.py [--notes 1000 10000] [--runs 15] [--work DIR]

- stdio start to the first ``tools/list`` answer (a fresh ``goat serve --global`` process
  each run; the client handshake included), p50 / p90;
- the hook end to end (process start to JSON out) with an up-to-date index, per vault size,
  in process and through a running ``goat serve`` of the same home (its local socket);
- recall through a running server (``tools/call recall`` round trip over stdio), per size.

Vaults come from ``gen_vault.py`` and are bound to Pen ``bench-N`` with ``--set root=``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
GOAT = str(BIN / "goat")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def show(name: str, values: list[float]) -> None:
    ms = [v * 1000 for v in values]
    print(
        f"{name:<52} p50 {statistics.median(ms):8.1f} ms   p90 {pct(ms, 0.9):8.1f} ms   n={len(ms)}"
    )


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOAT_")}
    env["GOAT_HOME"] = str(home)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


async def first_tools_list(home: Path, runs: int) -> list[float]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    times = []
    for _ in range(runs):
        params = StdioServerParameters(command=GOAT, args=["serve", "--global"], env=env_for(home))
        start = time.perf_counter()
        async with Client(params, mode="legacy") as client:
            await client.list_tools()
            times.append(time.perf_counter() - start)
    return times


def hook_once(home: Path, pen: str, prompt: str) -> tuple[float, str]:
    payload = json.dumps({"prompt": prompt, "cwd": str(home)})
    start = time.perf_counter()
    proc = subprocess.run(
        [GOAT, "hook", "claude-code", "--pin", f"pen:{pen}"],
        input=payload,
        env=env_for(home),
        capture_output=True,
        text=True,
    )
    took = time.perf_counter() - start
    return took, proc.stderr.strip()


async def with_server(
    home: Path, pen: str, queries: list[str], runs: int
) -> tuple[list[float], list[float]]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=GOAT, args=["serve", "--pen", pen], env=env_for(home))
    recalls: list[float] = []
    hooks: list[float] = []
    async with Client(params, mode="legacy") as client:
        await client.call_tool("recall", {"query": queries[0]})  # warm: index open
        for q in queries[: runs * 3]:
            start = time.perf_counter()
            r = await client.call_tool("recall", {"query": q, "limit": 5})
            recalls.append(time.perf_counter() - start)
            assert not r.is_error, r.content
        for q in queries[:runs]:
            took, err = await anyio.to_thread.run_sync(hook_once, home, pen, q)
            assert "(server)" in err, err
            hooks.append(took)
    return recalls, hooks


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="goat-bench-serve-"))
    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    print(f"work folder {work}; python {sys.version.split()[0]}; {os.cpu_count()} cpus")
    show("stdio start -> first tools/list", anyio.run(first_tools_list, home, args.runs))
    for n in args.notes:
        vault = work / f"vault-{n}"
        if not vault.exists():
            subprocess.run(
                [sys.executable, str(HERE / "gen_vault.py"), str(vault), "--notes", str(n)],
                check=True,
                capture_output=True,
            )
        queries = json.loads((vault / ".bench" / "queries.json").read_text())
        queries = [q["query"] if isinstance(q, dict) else q for q in queries]
        pen = f"bench-{n}"
        subprocess.run(
            [GOAT, "bind", "--pen", pen, "markdown", "--set", f"root={vault}"],
            env=env_for(home),
            check=True,
            capture_output=True,
        )
        start = time.perf_counter()
        subprocess.run(
            [GOAT, "reindex", "--pen", pen], env=env_for(home), check=True, capture_output=True
        )
        print(f"{n} notes: reindex {time.perf_counter() - start:.1f} s")
        in_process = []
        for q in queries[: args.runs]:
            took, err = hook_once(home, pen, q)
            assert "(in-process)" in err, err
            in_process.append(took)
        show(f"hook end to end, in process, {n} notes", in_process)
        recalls, hooks = anyio.run(with_server, home, pen, queries, args.runs)
        show(f"hook end to end, via running server, {n} notes", hooks)
        show(f"recall through a running server, {n} notes", recalls)


if __name__ == "__main__":
    main()
