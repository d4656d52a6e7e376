"""Every Python block of README.md and docs/*.md parses and imports only names that exist.

A code block that imports a moved or renamed name (an old flat path such as
``goat_core.models``) sends the next author on a hunt; this test runs each block's import
statements, at any depth, against the installed goat_core. Imports of the plugin a block is
writing (``goat_<name>`` other than ``goat_core``) are left out: it exists only in the
reader's project. Blocks with a ``file=`` name are also run whole by test_authors_doc.py.
"""

from __future__ import annotations

import ast
import importlib
import re
import textwrap
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: A fenced Python block, also one indented under a list item.
BLOCK = re.compile(r"^(?P<indent> *)```python[^\n]*\n(?P<body>.*?)^(?P=indent)```$", re.M | re.S)


def _blocks() -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        text = doc.read_text("utf-8")
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            body = textwrap.dedent(match["body"])
            found.append((f"{doc.relative_to(ROOT)}:{line}", body))
    return found


def _theirs(module: str) -> bool:
    """A module of the plugin the block is writing (not installed here)."""
    top = module.split(".")[0]
    return top.startswith("goat_") and top != "goat_core"


def _imports(body: str) -> list[ast.stmt]:
    nodes: list[ast.stmt] = []
    for node in ast.walk(ast.parse(body)):
        if isinstance(node, ast.Import):
            kept = [a for a in node.names if not _theirs(a.name)]
            if kept:
                nodes.append(ast.Import(names=kept))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if not _theirs(node.module) and node.module != "__future__":
                nodes.append(ast.ImportFrom(module=node.module, names=node.names, level=0))
    return nodes


BLOCKS = _blocks()


def test_the_docs_have_python_blocks() -> None:
    where = {name.split(":")[0] for name, _ in BLOCKS}
    assert {"README.md", "docs/authors.md", "docs/hooks.md"} <= where


@pytest.mark.parametrize(("where", "body"), BLOCKS, ids=[name for name, _ in BLOCKS])
def test_block_imports_names_that_exist(where: str, body: str) -> None:
    try:
        nodes = _imports(body)
    except SyntaxError as exc:
        pytest.fail(f"{where}: the block is not valid Python: {exc}")
    for node in nodes:
        statement = ast.unparse(ast.fix_missing_locations(node))
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)  # an old path warns
            try:
                exec(compile(statement, where, "exec"), {})
            except (ImportError, DeprecationWarning) as exc:
                pytest.fail(f"{where}: `{statement}` fails: {exc}")
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
        for name in modules:
            doc = importlib.import_module(str(name)).__doc__ or ""
            assert not doc.startswith("Deprecated"), f"{where}: `{statement}` uses an old path"
