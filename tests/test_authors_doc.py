"""docs/authors.md works as written: its one-file provider passes the suite.

The ``file=...`` code blocks are extracted into a scratch project; the provider is
registered through a ``.dist-info`` (what ``pip install`` of its pyproject would write) and
the documented test file runs in an inner pytest session.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

DOC = Path(__file__).parent.parent / "docs" / "authors.md"
BLOCK = re.compile(r"^```\w+ file=(?P<name>\S+)\n(?P<body>.*?)^```$", re.M | re.S)


def blocks() -> dict[str, str]:
    return {m["name"]: m["body"] for m in BLOCK.finditer(DOC.read_text("utf-8"))}


def test_doc_has_every_file() -> None:
    assert set(blocks()) == {
        "goat_jsonfile.py",
        "pyproject.toml",
        "tests/test_conformance.py",
        "tox.ini",
    }


def test_one_file_provider_passes_the_suite(pytester: pytest.Pytester) -> None:
    files = blocks()
    project = tomllib.loads(files["pyproject.toml"])
    eps = project["project"]["entry-points"]["goat_core.plugins"]
    assert eps == {"jsonfile": "goat_jsonfile"}
    for name, body in files.items():
        target = pytester.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, "utf-8")
    dist = pytester.path / "site" / "goat_jsonfile-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: goat-jsonfile\nVersion: 0.1.0\n"
        "Requires-Dist: goat-core~=0.1\n",
        "utf-8",
    )
    (dist / "entry_points.txt").write_text(
        "[goat_core.plugins]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()), "utf-8"
    )
    pytester.syspathinsert(pytester.path / "site")
    pytester.syspathinsert(pytester.path)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rs", "tests")
    result.assert_outcomes(passed=27, skipped=19)
    result.stdout.fnmatch_lines(["*provider 'jsonfile' does not declare capability 'shared_bank'*"])
