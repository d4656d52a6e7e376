"""Keyword recall on the real vault, dumped and compared: every hit (path, title), its score (as
``float.hex``, to the last bit), snippet and snippet spans (and a digest of the recall item's
``text``; for ``SearchIndex.search`` a digest of title, snippet and spans), for the questions of
``questions/en_questions.tsv``, the vault's frontmatter descriptions and a fixed list of CJK
two-character, accented, ligature, stop-word and common-word queries, through the shipped
``markdown`` provider's ``recall()`` (10 hits) and ``SearchIndex.search`` (10 hits).

    python benchmarks/recall_golden.py --check            # compare with the recorded file
    python benchmarks/recall_golden.py --write            # record it (after a deliberate change)

The recorded file is ``questions/recall_golden.json``. ``--check`` prints each query whose
results differ (first difference shown) and exits 1 when any does; a speed change must leave
it passing. The index and provider state live in a temporary GOAT home.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_recall_speed import open_store  # noqa: E402
from eval_recall import descriptions, find_vault, read_tsv  # noqa: E402

from goat_core.host import GoatHome  # noqa: E402

GOLDEN = HERE / "questions" / "recall_golden.json"

EXTRA_QUERIES = [
    # CJK two-character and one-character runs, mixed scripts
    "同期",
    "ノート",
    "笔记",
    "同步 notes",
    "日本語",
    # accented, ligatures, folding to several characters
    "café",
    "naïve résumé",
    "Straße",
    "ﬁle",
    "ﬂow workﬂow",
    "ΣΊΣΥΦΟΣ",
    "über",
    "crème brûlée",
    # stop-words and common words (many occurrences per note)
    "the",
    "how to a",
    "of the and",
    "note",
    "notes links",
    "file files filed",
    "open",
    "library libraries",
    "settings setting",
    "vault vaults",
    "link to a heading",
    "obsidian",
    # punctuation, digits, underscores
    "markdown_file",
    "v1.0",
    "2023",
    "[[link]]",
    "#tag",
    "don't",
    "e-mail",
    "C++",
]


def _digest(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode()).hexdigest()[:16]


def dump(vault: Path) -> dict[str, Any]:
    queries = [row[0] for row in read_tsv("en_questions.tsv")]
    queries += [d for d, _ in descriptions(vault)]
    queries += [row[4] for row in read_tsv("descriptions_translated.tsv")[:10]]  # Japanese
    queries += EXTRA_QUERIES
    out: dict[str, Any] = {"vault": vault.name, "recall": {}, "search": {}}
    with tempfile.TemporaryDirectory(prefix="goat-golden-") as tmp:
        store = open_store(GoatHome.from_env(Path(tmp) / "home"), vault)
        try:
            store.recall("warm up", limit=10)
            index = store.provider._index_open()
            for q in queries:
                res = store.recall(q, limit=10)
                out["recall"][q] = {
                    "complete": res.complete,
                    "degraded": list(res.degraded),
                    "items": [
                        [
                            i.path,
                            i.title,
                            float(i.score).hex(),
                            i.snippet,
                            [list(s) for s in i.snippet_spans],
                            _digest(i.text),
                        ]
                        for i in res.items
                    ],
                }
                got = index.search(q, limit=10)
                out["search"][q] = {
                    "total": got.total,
                    "hits": [
                        [h.path, float(h.score).hex(), _digest(f"{h.title}\0{h.snippet}{h.spans}")]
                        for h in got.hits
                    ],
                }
        finally:
            store.close()
    return out


def compare(want: dict[str, Any], got: dict[str, Any]) -> list[str]:
    problems = []
    for part in ("recall", "search"):
        for q in sorted(set(want[part]) | set(got[part])):
            a, b = want[part].get(q), got[part].get(q)
            if a == b:
                continue
            detail = "missing" if a is None or b is None else ""
            if not detail:
                rows_a = a.get("items", a.get("hits", []))
                rows_b = b.get("items", b.get("hits", []))
                for k, (ra, rb) in enumerate(zip(rows_a, rows_b, strict=False)):
                    if ra != rb:
                        detail = f"hit {k + 1}: want {ra!r}\n      got  {rb!r}"
                        break
                else:
                    detail = f"want {a!r}\n      got  {b!r}"
            problems.append(f"{part} {q!r}: {detail}")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="compare with the recorded file")
    mode.add_argument("--write", action="store_true", help="record the current results")
    ap.add_argument("--file", type=Path, default=GOLDEN)
    ap.add_argument("--vault", type=Path, default=None)
    args = ap.parse_args()
    vault = args.vault or find_vault()
    got = dump(vault)
    n = len(got["recall"])
    if args.write:
        args.file.write_text(json.dumps(got, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
        print(f"recorded {n} queries to {args.file}")
        return 0
    want = json.loads(args.file.read_text(encoding="utf-8"))
    problems = compare(want, got)
    for line in problems:
        print(line)
    print(f"{n} queries: {'IDENTICAL' if not problems else f'{len(problems)} DIFFER'}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
