"""The GOAT prompt hook's share of a prompt inside the real Claude Code (printed, never asserted).

    python benchmarks/bench_claude_hook.py [N] [--claude PATH] [--marketplace DIR] [--work DIR]

Runs ``claude -p`` N times (default 10) against the loopback fake Messages API
(``tests/hosts/fake_anthropic.py``) with the GOAT plugin installed from a temp copy of the
marketplace (default: this checkout), then N times with the same plugin minus its hooks.
Prints p50/p90 in ms of:

- the UserPromptSubmit hook, from Claude Code's debug log: a command hook's own "finished
  with status 0 (N ms)", or for an ``mcp_tool`` hook the time from "mcp_tool calling ..." to
  its result (and a SessionStart command hook's time, when there is one);
- process start to the first ``/v1/messages`` arrival at the fake, with and without the hook
  (the difference is what the hook adds to a prompt).

``--claude`` defaults to ``$GOAT_CLAUDE_CODE``. Needs ``goat`` (with goat-markdown) in this
interpreter's environment.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests" / "hosts"))

from fake_anthropic import FakeAnthropic, reply_text  # noqa: E402

BIN = Path(sys.executable).parent
GOAT = str(BIN / "goat")
TIMEOUT = 120.0

STAMP = r"(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z)"
COMMAND_DONE = re.compile(
    r"Hooks: UserPromptSubmit \[.*\] \(plugin [^)]*\) finished with status (?P<status>-?\d+) "
    r"\((?P<ms>\d+)ms\)"
)
MCP_CALL = re.compile(STAMP + r" \[DEBUG\] Hooks: mcp_tool calling (?P<target>\S+)")
HOOK_END = re.compile(
    STAMP + r' \S+ "?Hook UserPromptSubmit \(.*?\) (?:success|error|provided additionalContext)'
)
START_DONE = re.compile(
    r"Hooks: SessionStart:\w+ \[.*\] \(plugin [^)]*\) finished with status -?\d+ \((?P<ms>\d+)ms\)"
)
HOOK_ERROR = re.compile(r"Hook failed to run|\[ERROR\] \"Hook |mcp_tool hook (?:skipped|refused)")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def show(name: str, values: list[float]) -> None:
    if not values:
        print(f"  {name:<44} (no samples)")
        return
    print(
        f"  {name:<44} p50 {pct(values, 0.5):7.0f} ms   p90 {pct(values, 0.9):7.0f} ms"
        f"   (n={len(values)})"
    )


def stamp(ts: str) -> float:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def hook_ms(log: str) -> tuple[str, float] | None:
    """(hook kind, its duration in ms) from a debug log, or None if no hook ran."""
    done = COMMAND_DONE.search(log)
    if done:
        return "command", float(done["ms"])
    call = MCP_CALL.search(log)
    if call:
        end = HOOK_END.search(log, call.end())
        if end:
            return f"mcp_tool {call['target']}", (stamp(end["ts"]) - stamp(call["ts"])) * 1000
    return None


def run(cmd: list[str], env: dict[str, str], cwd: Path, stdin: str | None = None) -> str:
    proc = subprocess.run(
        cmd,
        cwd=cwd,
        env=env,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr or proc.stdout}")
    return proc.stdout


def install(claude: str, source: Path, base: Path, *, hooks: bool) -> tuple[dict[str, str], Path]:
    """A HOME with the plugin installed (without its hooks if ``hooks`` is false), a GOAT
    home with a fact in the project's Pen, and the project (a git repo)."""
    home, goat_home, project, market = (base / n for n in ("home", "goat", "project", "market"))
    for path in (home, goat_home, project):
        path.mkdir(parents=True)
    shutil.copytree(source / ".claude-plugin", market / ".claude-plugin")
    shutil.copytree(source / "integrations", market / "integrations")
    if not hooks:
        shutil.rmtree(market / "integrations" / "claude-code" / "hooks", ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TMPDIR")}
    env.update(
        HOME=str(home),
        PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        GOAT_HOME=str(goat_home),
        ANTHROPIC_API_KEY="sk-ant-fake-key",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_TELEMETRY="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_ERROR_REPORTING="1",
    )
    run(["git", "init", "-q", str(project)], env, base)
    manifest = json.loads((market / ".claude-plugin" / "marketplace.json").read_text("utf-8"))
    plugin = f"{manifest['plugins'][0]['name']}@{manifest['name']}"
    run([claude, "plugin", "marketplace", "add", str(market)], env, project)
    run([claude, "plugin", "install", plugin], env, project)
    pen = json.loads(run([GOAT, "scope", "--json"], env, project))["pen_id"]
    run([GOAT, "bind", "--pen", pen, "markdown"], env, project)
    run([GOAT, "remember", "--pen", pen, "The bench sentinel is HERON-77."], env, project)
    return env, project


def measure(
    claude: str, env: dict[str, str], project: Path, logs: Path, n: int, label: str
) -> tuple[list[float], list[float], set[str], int, list[float]]:
    """N runs: (prompt hook ms, ms to the first request, hook kinds seen, runs with hook
    errors, SessionStart command hook ms)."""
    hooks: list[float] = []
    starts: list[float] = []
    first: list[float] = []
    kinds: set[str] = set()
    errors = 0
    logs.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        log = logs / f"{label}-{i}.log"
        with FakeAnthropic(reply_text("ok")) as fake:
            start = time.monotonic()
            run(
                [claude, "-p", "What is the bench sentinel?", "--debug-file", str(log)],
                {**env, "ANTHROPIC_BASE_URL": fake.url},
                project,
            )
            turns = fake.main_requests()
            if turns:
                first.append((turns[0].at - start) * 1000)
        text = log.read_text("utf-8", errors="replace")
        errors += any(HOOK_ERROR.search(line) for line in text.splitlines())
        if started := START_DONE.search(text):
            starts.append(float(started["ms"]))
        found = hook_ms(text)
        if found:
            kinds.add(found[0])
            hooks.append(found[1])
    return hooks, first, kinds, errors, starts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", nargs="?", type=int, default=10, help="runs per variant (default 10)")
    ap.add_argument("--claude", default=os.environ.get("GOAT_CLAUDE_CODE"))
    ap.add_argument("--marketplace", type=Path, default=ROOT, help="default: this checkout")
    ap.add_argument("--work", type=Path, default=None, help="keep the work files here")
    args = ap.parse_args()
    if not args.claude:
        raise SystemExit("set --claude or $GOAT_CLAUDE_CODE to a Claude Code `claude` binary")
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-claude-hook-"))
    version = run([args.claude, "--version"], dict(os.environ), Path.cwd()).strip()
    print(f"Claude Code {version}; {args.n} runs per variant; work files in {work}")

    env, project = install(args.claude, args.marketplace, work / "with", hooks=True)
    hooks, with_first, kinds, errors, starts = measure(
        args.claude, env, project, work / "logs", args.n, "with"
    )
    env, project = install(args.claude, args.marketplace, work / "without", hooks=False)
    _, without_first, _, _, _ = measure(args.claude, env, project, work / "logs", args.n, "without")

    print(
        f"hook type(s) seen: {', '.join(sorted(kinds)) or 'none ran'}; runs with hook errors: "
        f"{errors}/{args.n}"
    )
    show("UserPromptSubmit hook (debug log)", hooks)
    if starts:
        show("SessionStart command hook (debug log)", starts)
    show("start -> first /v1/messages, with hook", with_first)
    show("start -> first /v1/messages, without hooks", without_first)
    if with_first and without_first:
        added = pct(with_first, 0.5) - pct(without_first, 0.5)
        share = added / pct(with_first, 0.5) * 100 if pct(with_first, 0.5) else 0.0
        print(
            f"  hook adds (p50 difference)                   {added:7.0f} ms   "
            f"({share:.0f}% of the time to the first request)"
        )
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
