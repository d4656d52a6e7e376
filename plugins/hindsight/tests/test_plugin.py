"""The plugin as a host loads it: entry point, spec, cheap import, credentials, and the
allow-list as written in the source."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from fake_hindsight import ALL_TOOLS

import goat_hindsight
from goat_core.contract import Capability, Consistency
from goat_core.plugins import PluginSettings, Registry, make_plugin_manager
from goat_hindsight.client import ALLOWED_TOOLS
from goat_hindsight.plugin import API_KEY_HELP, spec

PACKAGE = Path(goat_hindsight.__file__).parent


def test_entry_point_loads_the_provider() -> None:
    pm = make_plugin_manager(PluginSettings(load=("hindsight",), strict=True))
    registry = Registry(pm)
    loaded = registry.get_provider("hindsight")
    assert loaded.name == "hindsight"
    assert registry.provider_owner("hindsight") == "hindsight"


def test_spec_declarations() -> None:
    s = spec()
    assert s.capabilities == {
        Capability.PAGES,
        Capability.REFLECT,
        Capability.FEEDBACK,
        Capability.SHARED_BANK,
    }
    assert not s.supports(Capability.MAP)
    assert s.consistency is Consistency.EVENTUAL
    assert s.network is True
    assert s.egress_urls is not None
    (cred,) = s.credentials
    assert cred.name == "api_key" and cred.required is False
    assert "OAuth is not supported yet" in cred.description
    assert "pastes an API key" in cred.description
    assert cred.description == API_KEY_HELP
    assert set(s.settings_schema()["properties"]) == {"base_url", "bank_id"}


def test_plugin_import_is_cheap() -> None:
    code = (
        "import sys, goat_hindsight.plugin as p; p.spec(); "
        "print(sorted(m for m in ('mcp', 'httpx2', 'goat_hindsight.client') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- the allow-list in the source ------------------------------------------------------------

FORBIDDEN = [*sorted(set(ALL_TOOLS) - ALLOWED_TOOLS), "list_banks", "create_bank", "get_bank_stats"]


def _sources() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py")}


def _code_strings(text: str) -> list[str]:
    """Every string literal and identifier of a module, docstrings excluded."""
    tree = ast.parse(text)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings:
                found.append(node.value)
        elif isinstance(node, ast.Name):
            found.append(node.id)
        elif isinstance(node, ast.Attribute):
            found.append(node.attr)
        elif isinstance(node, ast.keyword) and node.arg:
            found.append(node.arg)
    return found


def test_no_code_path_can_name_a_forbidden_tool_or_argument() -> None:
    """No literal, name or keyword in the package's code names a tool outside the
    allow-list, or the retain arguments GOAT never sends (docstrings aside)."""
    sources = _sources()
    assert {"client.py", "provider.py", "plugin.py"} <= set(sources)
    for name, text in sources.items():
        strings = _code_strings(text)
        for value in strings:
            for tool in FORBIDDEN:
                assert tool not in value, f"{name}: {value!r} names Hindsight tool {tool!r}"
            for arg in ("document_id", "update_mode", "tags"):
                assert arg not in value.split(), f"{name}: {value!r} names argument {arg!r}"
                assert value != arg, f"{name}: {value!r} names argument {arg!r}"


def test_every_tool_name_literal_is_allow_listed() -> None:
    """Every string literal that names a Hindsight tool is one GOAT may call."""
    tool_like = set(ALL_TOOLS) | {"list_banks", "create_bank", "get_bank_stats"}
    for name, text in _sources().items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if node.value in tool_like:
                    assert node.value in ALLOWED_TOOLS, f"{name}: literal {node.value!r}"
