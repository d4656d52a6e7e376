"""``--json`` stdout carries JSON only: a plugin that prints, at import and inside a hook,
reaches stderr instead. The plugin is a real distribution on ``PYTHONPATH`` (a
``.dist-info`` with an entry point), loaded by the real ``goat`` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

GOAT = str(Path(sys.executable).parent / "goat")

_PLUGIN = """
print("noisy plugin: imported")

from goat_core import hookimpl


@hookimpl
def goat_resolve_scope(request):
    print("noisy plugin: resolving a scope")
    return None
"""


@pytest.fixture
def noisy(tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "site"
    info = site / "noisy_goat_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (site / "noisy_goat_plugin.py").write_text(_PLUGIN)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: noisy-goat-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[goat_core.plugins]\nnoisy = noisy_goat_plugin\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOAT_")}
    env.update(PYTHONPATH=str(site), GOAT_HOME=str(tmp_path / "home"))
    return env


@pytest.mark.parametrize("args", [["scope", "--json"], ["plugins", "--json"]])
def test_a_printing_plugin_never_reaches_json_stdout(
    noisy: dict[str, str], tmp_path: Path, args: list[str]
) -> None:
    proc = subprocess.run(
        [GOAT, *args], env=noisy, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    json.loads(proc.stdout)  # nothing but the JSON
    assert "noisy plugin: imported" in proc.stderr  # the plugin did load and print
    if args[0] == "scope":
        assert "noisy plugin: resolving a scope" in proc.stderr


def test_without_json_a_plugins_print_is_left_alone(noisy: dict[str, str], tmp_path: Path) -> None:
    proc = subprocess.run(
        [GOAT, "scope"], env=noisy, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert "noisy plugin: imported" in proc.stdout


def test_every_json_printer_goes_through_emit_json() -> None:
    """With --json, stdout is reserved for ``emit_json``: a command that printed its JSON
    some other way would put it on stderr. The exact lines that did: status and the wiki."""
    import re

    root = Path(__file__).resolve().parents[1]
    sources = [*root.glob("goat_core/cli/*.py"), *root.glob("plugins/*/src/*/cli.py")]
    found = [
        f"{p.relative_to(root)}:{n}"
        for p in sources
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if re.search(r"(click\.echo|print)\(json\.dumps", line)
    ]
    assert found == []
