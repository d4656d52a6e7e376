"""``goat serve --http`` under idle sockets (printed, never asserted).

    python benchmarks/bench_http_idle.py [--clients 20] [--calls 50] [--idle 70] [--notes 200]

Starts ``goat serve --http 127.0.0.1:PORT --global`` on a GOAT home holding ``--notes``
notes, then runs ``--clients`` MCP clients at once, each making ``--calls`` recall calls over
Streamable HTTP: first with no other connection, then with ``--idle`` TCP sockets that send
nothing held open all along (one closed by the server is opened again). Prints, for each:
recalls answered, failed, throughput, and per-call latency p50 / p90 / max.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio

BIN = Path(sys.executable).parent
GOAT = str(BIN / "goat")


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOAT_")}
    env["GOAT_HOME"] = str(home)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(home: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = _free_port()
    proc = subprocess.Popen(
        [GOAT, "serve", "--http", f"127.0.0.1:{port}", "--global"],
        env=_env(home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("goat serve --http did not start")


class IdleSockets:
    """``count`` silent connections, reopened as the server closes them, until stopped."""

    def __init__(self, port: int, count: int) -> None:
        self.port, self.count = port, count
        self.stop = threading.Event()
        self.reopened = 0
        self.thread = threading.Thread(target=self._hold, daemon=True)

    def _hold(self) -> None:
        held: list[socket.socket] = []
        while not self.stop.is_set():
            alive = []
            for s in held:
                try:
                    s.setblocking(False)
                    gone = s.recv(1) == b""
                except BlockingIOError:
                    gone = False
                except OSError:
                    gone = True
                if gone:
                    s.close()
                    self.reopened += 1
                else:
                    alive.append(s)
            held = alive
            while len(held) < self.count:
                held.append(socket.create_connection(("127.0.0.1", self.port), timeout=5))
            self.stop.wait(0.2)
        for s in held:
            s.close()

    def __enter__(self) -> IdleSockets:
        self.thread.start()
        time.sleep(0.5)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


async def _client(url: str, calls: int, times: list[float], failures: list[str]) -> None:
    from mcp import Client

    try:
        async with Client(url, mode="legacy") as client:
            for i in range(calls):
                start = time.perf_counter()
                result = await client.call_tool("recall", {"query": f"note {i % 20} topic"})
                times.append(time.perf_counter() - start)
                if result.is_error:
                    failures.append(str(result.content)[:100])
    except Exception as exc:  # a refused or dropped client counts, never hides
        failures.append(f"{type(exc).__name__}: {exc}"[:200])


async def _round(url: str, clients: int, calls: int) -> tuple[list[float], list[str], float]:
    times: list[float] = []
    failures: list[str] = []
    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(clients):
            tg.start_soon(_client, url, calls, times, failures)
    return times, failures, time.perf_counter() - start


def _report(name: str, times: list[float], failures: list[str], took: float) -> None:
    ms = sorted(t * 1000 for t in times)
    p90 = ms[min(len(ms) - 1, round(0.9 * (len(ms) - 1)))] if ms else float("nan")
    print(
        f"{name:<28} answered {len(times):5d}  failed {len(failures):3d}  "
        f"{len(times) / took:7.1f} calls/s  p50 {statistics.median(ms) if ms else 0:7.1f} ms  "
        f"p90 {p90:7.1f} ms  max {ms[-1] if ms else 0:7.1f} ms"
    )
    for failure in failures[:3]:
        print(f"    failure: {failure}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--idle", type=int, default=70)
    parser.add_argument("--notes", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        home = Path(work) / "home"
        store = home / "data" / "stores" / "global"
        store.mkdir(parents=True)
        for n in range(args.notes):
            (store / f"note {n}.md").write_text(f"# Note {n}\n\nnote {n % 20} topic body {n}\n")
        subprocess.run([GOAT, "reindex"], env=_env(home), check=True, capture_output=True)
        proc, port = _start(home)
        url = f"http://127.0.0.1:{port}/mcp/global"
        try:
            print(f"{args.clients} clients x {args.calls} recalls, {args.notes} notes, 2 cores")
            _report("no idle sockets", *anyio.run(_round, url, args.clients, args.calls))
            with IdleSockets(port, args.idle) as idle:
                result = anyio.run(_round, url, args.clients, args.calls)
            _report(f"{args.idle} idle sockets held", *result)
            print(f"    idle sockets the server closed (and were reopened): {idle.reopened}")
        finally:
            proc.terminate()
            proc.wait(10)


if __name__ == "__main__":
    main()
