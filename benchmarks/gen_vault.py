"""Deterministic synthetic Markdown vault for the search index benchmark.

    python benchmarks/gen_vault.py OUT_DIR --notes 10000 [--seed 42]

Writes ``--notes`` notes of 1-4 KB each under ``OUT_DIR`` (spread over a few nested folders),
each with YAML frontmatter (title, description, tags, aliases) and a body of made-up words drawn
from a ~20k-word vocabulary with a Zipf distribution, with wikilinks to other notes. Also writes
``OUT_DIR/.bench/queries.json``: 200 queries (100 single rare words that occur in the vault,
100 of 2-3 common words). The same seed and size always give the same files.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
from pathlib import Path

VOCAB_SIZE = 20_000
ZIPF_S = 1.07
QUERY_RARE = 100
QUERY_COMMON = 100

_ONSETS = [
    "",
    "b",
    "d",
    "f",
    "g",
    "k",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "t",
    "v",
    "z",
    "br",
    "st",
    "tr",
    "pl",
    "gr",
    "sh",
    "ch",
    "th",
    "kl",
    "fr",
]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ou", "ea", "io"]
_CODAS = ["", "", "n", "r", "s", "l", "m", "k", "x", "nd", "st"]


def make_vocabulary(rng: random.Random, size: int = VOCAB_SIZE) -> list[str]:
    """``size`` distinct made-up words; index 0 is the most frequent under the Zipf weights."""
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        n = rng.choice((1, 2, 2, 3, 3, 4))
        w = "".join(
            rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(n)
        )
        if len(w) >= 2 and w not in seen:
            seen.add(w)
            words.append(w)
    words.sort(key=len)  # frequent words tend to be short, as in natural language
    return words


def zipf_cum_weights(size: int, s: float = ZIPF_S) -> list[float]:
    return list(itertools.accumulate(1.0 / (r**s) for r in range(1, size + 1)))


class Vault:
    def __init__(self, notes: int, seed: int) -> None:
        self.notes = notes
        self.rng = random.Random(seed)
        self.vocab = make_vocabulary(self.rng)
        self.cum = zipf_cum_weights(len(self.vocab))
        self.folders = self._folders(notes)
        self.titles = self._titles(notes)

    def words(self, k: int) -> list[str]:
        return self.rng.choices(self.vocab, cum_weights=self.cum, k=k)

    def _folders(self, notes: int) -> list[str]:
        top = max(3, min(40, notes // 250))
        out = [""]
        for i in range(top):
            name = f"{self.vocab[100 + i].capitalize()} {i}"
            out.append(name)
            if i % 3 == 0:
                out.extend(f"{name}/{self.vocab[200 + i * 3 + j].capitalize()}" for j in range(3))
        return out

    def _titles(self, notes: int) -> list[str]:
        titles: list[str] = []
        seen: set[str] = set()
        for i in range(notes):
            t = " ".join(self.words(self.rng.randint(2, 4))).capitalize()
            if t.lower() in seen:
                t = f"{t} {i}"
            seen.add(t.lower())
            titles.append(t)
        return titles

    def note(self, i: int) -> tuple[str, str]:
        rng = self.rng
        title = self.titles[i]
        folder = self.folders[i % len(self.folders)]
        rel = f"{folder}/{title}.md" if folder else f"{title}.md"
        tags = sorted({self.vocab[rng.randint(0, 300)] for _ in range(rng.randint(1, 4))})
        aliases = [" ".join(self.words(2)).capitalize() for _ in range(rng.randint(0, 2))]
        description = " ".join(self.words(rng.randint(6, 14))).capitalize() + "."
        fm = [
            "---",
            f"title: {json.dumps(title)}",
            f"description: {json.dumps(description)}",
            "tags: [" + ", ".join(tags) + "]",
        ]
        if aliases:
            fm.append("aliases:")
            fm.extend(f"  - {json.dumps(a)}" for a in aliases)
        fm.append(f"created: 2024-{1 + i % 12:02d}-{1 + i % 28:02d}")
        fm.append("---")
        target = rng.randint(1024, 4096)
        parts: list[str] = ["\n".join(fm), "", f"# {title}", ""]
        size = sum(len(p) + 1 for p in parts)
        while size < target:
            if rng.random() < 0.12:
                para = "## " + " ".join(self.words(rng.randint(2, 5))).capitalize()
            else:
                sentence_words = self.words(rng.randint(30, 90))
                for _ in range(rng.randint(0, 2)):
                    other = self.titles[rng.randrange(self.notes)]
                    pos = rng.randrange(len(sentence_words))
                    sentence_words.insert(pos, f"[[{other}]]")
                para = " ".join(sentence_words).capitalize() + "."
            parts.append(para)
            parts.append("")
            size += len(para) + 2
        return rel, "\n".join(parts)

    def queries(self, bodies_sample: list[str]) -> list[str]:
        """100 rare words taken from notes (so each has at least one hit) + 100 common ones."""
        rng = random.Random(self.rng.random())
        rank = {w: r for r, w in enumerate(self.vocab)}
        rare: list[str] = []
        seen: set[str] = set()
        for body in bodies_sample:
            words = [w for w in body.split() if w.isalpha() and w.lower() in rank]
            if not words:
                continue
            w = max(words, key=lambda x: rank[x.lower()]).lower()
            if rank[w] > 2000 and w not in seen:
                seen.add(w)
                rare.append(w)
            if len(rare) >= QUERY_RARE:
                break
        common = [
            " ".join(rng.sample(self.vocab[10:400], rng.randint(2, 3))) for _ in range(QUERY_COMMON)
        ]
        return rare + common


def generate(out: Path, notes: int, seed: int = 42, *, quiet: bool = False) -> dict[str, object]:
    """Write the vault; returns its manifest (also saved in ``.bench/manifest.json``)."""
    manifest_path = out / ".bench" / "manifest.json"
    want = {"notes": notes, "seed": seed, "version": 1}
    if manifest_path.exists():
        have = json.loads(manifest_path.read_text())
        if {k: have.get(k) for k in want} == want:
            return dict(have)
    vault = Vault(notes, seed)
    out.mkdir(parents=True, exist_ok=True)
    sample: list[str] = []
    total = 0
    every = max(1, notes // (QUERY_RARE * 3))
    for i in range(notes):
        rel, text = vault.note(i)
        p = out / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        total += len(text.encode("utf-8"))
        if i % every == 0:
            sample.append(text.split("\n---\n", 1)[1])
        if not quiet and i and i % 10_000 == 0:
            print(f"  generated {i} notes", file=sys.stderr)
    queries = vault.queries(sample)
    (out / ".bench").mkdir(exist_ok=True)
    (out / ".bench" / "queries.json").write_text(json.dumps(queries, indent=0))
    manifest: dict[str, object] = {**want, "bytes": total, "queries": len(queries)}
    manifest_path.write_text(json.dumps(manifest))
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--notes", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args(argv)
    m = generate(args.out, args.notes, args.seed)
    print(f"{m['notes']} notes, {m['bytes']} bytes, {m['queries']} queries in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
