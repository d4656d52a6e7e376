"""Recall quality on the real Obsidian Help vault (173 notes): natural questions and
description queries, scored by mean reciprocal rank over the first 10 hits (MRR@10) and top-1.

The vault is a copy of ../shared/data/obsidian-help-en (or where GOAT_TEST_VAULT /
GOAT_SHARED_DIR point: see ``conftest.locate_test_vault``), indexed through the real markdown
provider (``goat_markdown``), so the figures are what ``goat recall`` ranks.

Each natural question lists every note that honestly answers it (read from the vault); the
reciprocal rank is that of the first of them. Run this file as a script to print the figures
and the rank of each question::

    .venv/bin/python tests/test_recall_quality.py [VAULT]
"""

from __future__ import annotations

import functools
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from conftest import locate_test_vault  # noqa: E402

Recall = Callable[[str], list[str]]

#: (question, notes that answer it). The first six come from user reports.
QUESTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("how do I link to a heading", ("Linking notes and files/Internal links.md",)),
    (
        "What is a vault?",
        (
            "Getting started/Create a vault.md",
            "Files and folders/Manage vaults.md",
            "Getting started/Glossary.md",
        ),
    ),
    ("vault", ("Getting started/Create a vault.md", "Files and folders/Manage vaults.md")),
    (
        "undo a deleted file",
        (
            "Plugins/File recovery.md",
            "Files and folders/Manage notes.md",
            "Obsidian Sync/Version history.md",
        ),
    ),
    (
        "publish my notes to a website",
        (
            "Obsidian Publish/Introduction to Obsidian Publish.md",
            "Obsidian Publish/Publish your content.md",
            "Obsidian Publish/Set up Obsidian Publish.md",
        ),
    ),
    ("keyboard shortcut to open command palette", ("Plugins/Command palette.md",)),
    (
        "change the theme to dark mode",
        ("User interface/Appearance.md", "Extending Obsidian/Themes.md"),
    ),
    ("how to add tags to a note", ("Editing and formatting/Tags.md",)),
    ("embed an image in a note", ("Linking notes and files/Embed files.md",)),
    ("how do I back up my notes", ("Getting started/Back up your Obsidian files.md",)),
    (
        "sync notes between my phone and computer",
        (
            "Getting started/Sync your notes across devices.md",
            "Obsidian Sync/Introduction to Obsidian Sync.md",
            "Obsidian Sync/Set up Obsidian Sync.md",
        ),
    ),
    ("import my notes from Notion", ("Import notes/Import from Notion.md",)),
    ("move from Evernote to Obsidian", ("Import notes/Import from Evernote.md",)),
    ("use my own domain for my published site", ("Obsidian Publish/Custom domains.md",)),
    ("create a daily journal note", ("Plugins/Daily notes.md",)),
    ("how do I install community plugins", ("Extending Obsidian/Community plugins.md",)),
    ("how do I create a callout", ("Editing and formatting/Callouts.md",)),
    ("see how my notes are connected in a graph", ("Plugins/Graph view.md",)),
    ("give a note another name to link to it", ("Linking notes and files/Aliases.md",)),
    ("update to the latest version of Obsidian", ("Getting started/Update Obsidian.md",)),
    ("add metadata to a note", ("Editing and formatting/Properties.md",)),
    ("change the look with custom CSS", ("Extending Obsidian/CSS snippets.md",)),
    ("restore an older version of a note with Sync", ("Obsidian Sync/Version history.md",)),
    ("can I get a refund", ("Licenses and payment/Refund policy.md",)),
    ("insert a template into a note", ("Plugins/Templates.md",)),
    ("open a note in a new tab", ("User interface/Tabs.md",)),
    ("find text in all my notes", ("Plugins/Search.md",)),
    ("set up two-factor authentication", ("Obsidian/2-factor authentication.md",)),
    (
        "where does Obsidian store its settings",
        (
            "Files and folders/Configuration folder.md",
            "Files and folders/How Obsidian stores data.md",
        ),
    ),
    ("split a note into smaller notes", ("Plugins/Note composer.md",)),
)

#: The floors the tests hold. Measured: natural questions MRR@10 0.80 (top-1 23/30; 0.58 and
#: 15/30 with plain FTS5 bm25); description queries 1.00 (69/69). The misses are questions
#: whose words the answering note does not use ("website" for a Publish site, "undo" for
#: File recovery, "give a note another name" for Aliases): beyond a lexical index.
NATURAL_MRR_FLOOR = 0.78
DESCRIPTION_MRR_FLOOR = 0.95


@dataclass(frozen=True)
class Evaluation:
    """MRR@10 and top-1 of one query set; ``ranks``: (query, 1-based rank or ``None``)."""

    mrr: float
    top1: int
    ranks: tuple[tuple[str, int | None], ...]

    @property
    def n(self) -> int:
        return len(self.ranks)

    def line(self, name: str) -> str:
        return (
            f"{name}: MRR@10 {self.mrr:.3f}, top-1 {self.top1}/{self.n}"
            f" ({self.top1 / max(self.n, 1):.0%})"
        )


def first_rank(ranked: Sequence[str], targets: Sequence[str], k: int = 10) -> int | None:
    """1-based rank of the first of ``targets`` among the first ``k`` of ``ranked``."""
    for i, path in enumerate(ranked[:k]):
        if path in targets:
            return i + 1
    return None


def evaluate(recall: Recall, cases: Sequence[tuple[str, Sequence[str]]]) -> Evaluation:
    """Run every query through ``recall`` (query -> ranked paths) and score it."""
    ranks: list[tuple[str, int | None]] = []
    for query, targets in cases:
        ranks.append((query, first_rank(recall(query), targets)))
    mrr = sum(1 / r for _, r in ranks if r) / max(len(ranks), 1)
    top1 = sum(1 for _, r in ranks if r == 1)
    return Evaluation(mrr=mrr, top1=top1, ranks=tuple(ranks))


def description_cases(root: Path) -> list[tuple[str, tuple[str, ...]]]:
    """(frontmatter description, (its note,)) for every note of ``root`` that has one."""
    from goat_core.filestore import parse_note, walk_notes

    cases: list[tuple[str, tuple[str, ...]]] = []
    for f in walk_notes(root).files:
        data = parse_note((root / f.path).read_text(encoding="utf-8")).data
        desc = data.get("description")
        if isinstance(desc, str) and desc.strip():
            cases.append((desc, (f.path,)))
    return cases


@contextmanager
def markdown_store(root: Path, home_dir: Path) -> Iterator[Any]:
    """A markdown store on ``root``, its GOAT home (and so its index) under ``home_dir``,
    built the way a host builds it; each call runs in an event loop of its own
    (:func:`recall`)."""
    from goat_core.contract import Binding, ProviderContext, Scope
    from goat_core.host import GoatHome
    from goat_markdown.plugin import MarkdownSettings, spec

    settings = MarkdownSettings(root=root)
    context = ProviderContext(
        scope=Scope.global_(),
        binding=Binding(
            id="default",
            provider="markdown",
            settings=settings.model_dump(mode="json", exclude_none=True),
        ),
        settings=settings,
        home=GoatHome.at(home_dir),
    )
    provider = spec().factory(context)
    try:
        yield provider
    finally:
        anyio.run(provider.close)


def recall(store: Any, query: str) -> Any:
    """The store's recall of ``query`` (limit 10), awaited in ``anyio.run``."""
    return anyio.run(functools.partial(store.recall, query, limit=10))


def ranked_paths(store: Any) -> Recall:
    """``recall(query) -> ranked paths`` (limit 10) of a store from :func:`markdown_store`."""
    return lambda q: [item.path for item in recall(store, q).items]


def copy_vault(source: Path, dest_parent: Path) -> Path:
    dest = dest_parent / source.name
    shutil.copytree(source, dest, symlinks=True)
    return dest


# ------------------------------------------------------------------------------------- tests


@pytest.fixture(scope="module")
def vault_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Any]]:
    pytest.importorskip("goat_markdown", reason="the markdown provider plugin is not installed")
    source = locate_test_vault(REPO)  # skips, or under CI=true fails, when it is absent
    base = tmp_path_factory.mktemp("quality")
    root = copy_vault(source, base)
    with markdown_store(root, base / "goat-home") as store:
        yield root, store


def test_questions_name_real_notes() -> None:
    source = locate_test_vault(REPO)
    assert len(QUESTIONS) >= 25
    for query, targets in QUESTIONS:
        assert targets, query
        for t in targets:
            assert (source / t).is_file(), f"{query!r}: no note {t}"


def test_first_rank() -> None:
    assert first_rank(["a", "b", "c"], ["c", "b"]) == 2
    assert first_rank(["a"], ["z"]) is None
    assert first_rank([str(i) for i in range(20)], ["12"]) is None  # beyond the first 10


def test_natural_questions(vault_store: tuple[Path, Any]) -> None:
    _root, store = vault_store
    got = evaluate(ranked_paths(store), QUESTIONS)
    print("\n" + got.line("natural questions"))
    assert got.mrr >= NATURAL_MRR_FLOOR, [(q, r) for q, r in got.ranks if r != 1]
    ranks = dict(got.ranks)
    # from the user reports, the questions that share words with their notes: answer first
    for query in (
        "how do I link to a heading",
        "What is a vault?",
        "vault",
        "keyboard shortcut to open command palette",
    ):
        assert ranks[query] == 1, (query, ranks[query])


@pytest.mark.parametrize(
    "query", ["vault", "undo a deleted file", "publish my notes to a website", "What is a vault?"]
)
def test_scores_are_positive_and_distinct(vault_store: tuple[Path, Any], query: str) -> None:
    _root, store = vault_store
    result = recall(store, query)
    scores = [item.score for item in result.items]
    assert len(scores) == 10 and min(scores) >= 0.01  # the CLI prints two decimals
    assert scores == sorted(scores, reverse=True)
    assert len(set(scores[:5])) == 5, scores  # no ties at the top (were five at 3.38)
    stop_marks = [f"**{w}**" for w in ("how", "do", "i", "to", "a", "my", "what", "is")]
    for item in result.items:
        snippet = (item.snippet or "").lower()
        assert not any(m in snippet for m in stop_marks), item.snippet
        assert "[[[" not in snippet


def test_description_queries(vault_store: tuple[Path, Any]) -> None:
    root, store = vault_store
    cases = description_cases(root)
    assert len(cases) >= 60  # 69 of the 173 notes carry a description
    got = evaluate(ranked_paths(store), cases)
    print("\n" + got.line("description queries"))
    assert got.mrr >= DESCRIPTION_MRR_FLOOR, [(q, r) for q, r in got.ranks if r != 1]


def main(argv: list[str]) -> int:
    source = Path(argv[0]) if argv else locate_test_vault(REPO)
    with tempfile.TemporaryDirectory() as tmp:
        root = copy_vault(source, Path(tmp))
        with markdown_store(root, Path(tmp) / "goat-home") as store:
            natural = evaluate(ranked_paths(store), QUESTIONS)
            described = evaluate(ranked_paths(store), description_cases(root))
    for query, rank in natural.ranks:
        print(f"  {rank if rank else '-':>2}  {query}")
    print(natural.line("natural questions"))
    print(described.line("description queries"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
