"""The lazy package namespaces of goat_core/_lazy.py: each package's table gives exactly the
names its type-checking imports give, every name resolves to its module's object, and
importing the packages imports no pydantic, structlog or click."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LAZY_PACKAGES = [
    "goat_core",
    "goat_core.contract",
    "goat_core.serve",
    "goat_core.cli",
    "goat_core.host",
]


def _type_checking_imports(package: str) -> dict[str, set[str]]:
    """``module -> names`` of the ``from M import ...`` lines under ``if TYPE_CHECKING:``."""
    path = REPO / Path(*package.split(".")) / "__init__.py"
    out: dict[str, set[str]] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "typing.TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.module, ast.unparse(stmt)
                out.setdefault(stmt.module, set()).update(a.name for a in stmt.names)
    return out


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_the_table_names_what_the_type_checking_imports_name(package: str) -> None:
    module = importlib.import_module(package)
    table = {m: set(names) for m, names in module._LAZY.items()}
    assert table == _type_checking_imports(package)


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_name_is_its_modules_object(package: str) -> None:
    module = importlib.import_module(package)
    for source, names in module._LAZY.items():
        defining = importlib.import_module(source)
        for name in names:
            assert getattr(module, name) is getattr(defining, name), f"{package}.{name}"
            assert name in dir(module)


def test_an_unknown_name_is_an_attribute_error() -> None:
    import goat_core

    with pytest.raises(AttributeError, match="has no attribute 'NoSuchName'"):
        goat_core.NoSuchName  # noqa: B018
    assert not hasattr(goat_core, "NoSuchName")


def test_importing_the_packages_imports_no_heavy_library() -> None:
    code = (
        "import sys\n"
        + "".join(f"import {p}\n" for p in LAZY_PACKAGES)
        + "import goat_core.contract._home, goat_core.contract._penid, goat_core.serve._local\n"
        + "print(sorted(m for m in ('pydantic', 'structlog', 'click', 'mcp', 'anyio')"
        + " if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip() == "[]", out.stdout


def test_the_built_in_command_table_is_each_modules_commands() -> None:
    """goat_core/cli/_app.py's ``BUILTIN`` names every command of each module's
    ``COMMANDS``, and only those, and each resolves to that module's command."""
    from goat_core.cli import _app

    modules = sorted(set(_app.BUILTIN.values()))
    listed = {c.name: m for m in modules for c in importlib.import_module(m).COMMANDS if c.name}
    assert listed == _app.BUILTIN
    group = _app.cli
    for name, module in _app.BUILTIN.items():
        command = group.get_command(group.make_context("goat", [], resilient_parsing=True), name)
        assert command is not None and command in importlib.import_module(module).COMMANDS


def test_a_hook_imports_only_its_own_commands_module(tmp_path: Path) -> None:
    """``goat hook codex`` (a process per prompt) imports goat_core/cli/_serve.py alone of
    the command modules; ``goat --help`` still lists every built-in command."""
    code = (
        "import os, sys\n"
        "from goat_core.cli import main\n"
        "end = os._exit\n"
        "def _exit(code):\n"  # the hook ends with os._exit: list the modules first
        "    mods = sorted(m for m in sys.modules if m.startswith('goat_core.cli._'))\n"
        "    sys.stderr.write('MODULES ' + ' '.join(mods) + '\\n')\n"
        "    sys.stderr.flush()\n"
        "    end(code)\n"
        "os._exit = _exit\n"
        "main(['hook', 'codex', '--home', sys.argv[1]])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "home")],
        input='{"hook_event_name": "UserPromptSubmit", "prompt": "deploy keys", "cwd": "/"}',
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    (line,) = [x for x in out.stderr.splitlines() if x.startswith("MODULES ")]
    commands = set(line.split()[1:])
    assert "goat_core.cli._serve" in commands
    assert not commands & {
        "goat_core.cli._admin",
        "goat_core.cli._embedders",
        "goat_core.cli._map",
        "goat_core.cli._memory",
        "goat_core.cli._transfer",
    }, sorted(commands)
    (answer,) = [json.loads(x) for x in out.stdout.splitlines() if x.strip()]
    assert answer["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    listing = subprocess.run(
        [sys.executable, "-m", "goat_core.cli", "--help"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    from goat_core.cli._app import BUILTIN

    shown = {line.split()[0] for line in listing.stdout.splitlines() if line.startswith("  ")}
    assert set(BUILTIN) <= shown, listing.stdout
