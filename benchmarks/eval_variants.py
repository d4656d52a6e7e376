"""Ranking variants of hybrid recall measured side by side on the real vault (obsidian-help-en),
tuning half (set 1) and reporting half (set 2) of ``questions/en_questions.tsv`` and the notes'
own descriptions, with one embedder (``minilm-en`` by default).

    python benchmarks/eval_variants.py --home /tmp/goat-variants
    python benchmarks/eval_variants.py --embedder use-multilingual --only baseline

Each variant changes one thing against the shipped ranking and prints MRR@10 of the vector side
alone and of the hybrid (``goat_core.filestore.search.fuse``):

- ``baseline``: the shipped texts (``chunk_note``, ``note_text``), ``NOTE_WEIGHT`` and ``FUSION``;
- note row with the note's aliases, or with its section headings;
- link anchor text: the words other notes use when they link to a note (``[[Target|these
  words]]``, or the line around a plain ``[[Target]]``), as an extra note row or inside it;
- a length penalty on the best-section score (``beta * log(sections)``), and vectors centred
  on the mean section vector (sections and query, renormalised);
- fusion: convex combination over keyword share and candidate depth, reciprocal rank fusion
  over keyword weight and ``k``;
- the hybrid's keyword side without the query words found in more than a share of the notes;
- ``--only grid``: note weight, keyword share and depth of the convex combination together.

The vectors are computed here from the same texts the vector index embeds (float32, where the
index keeps int8: figures can differ from ``eval_recall.py`` in the third decimal) and scored as
``VectorIndex.search`` scores them: the best section of a note plus ``NOTE_WEIGHT`` times its
best note row. Embeddings are cached in ``--home`` (``eval-variants-NAME.npz``, keyed by the
sha256 of each text), so only the texts a variant adds are embedded on a later run; the keyword
rankings are read from the store's index under ``--home`` with ``SearchIndex.search``. Prints
figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import itertools
import re
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from eval_recall import System, descriptions, find_vault, mrr, read_tsv

from goat_core.contract import embedder_cache_dir
from goat_core.filestore import parse_links, parse_note
from goat_core.filestore.search import FUSION, NOTE_WEIGHT, Fusion, chunk_note, fuse, note_text
from goat_core.host import GoatHome
from goat_core.plugins import Registry

Note = dict[str, Any]
Ranked = list[tuple[str, float]]
Rows = Callable[[str, Note], list[str]]


class Vectors:
    """The embedder, with every text's vector cached on disk by its sha256."""

    def __init__(self, home: GoatHome, name: str, cache: Path) -> None:
        spec = Registry.load().get_embedder(name)
        self.model = spec.factory(embedder_cache_dir(home.data_dir, name))
        self.cache = cache
        self.known: dict[str, Any] = {}
        if cache.exists():
            with np.load(cache) as data:
                self.known = dict(zip(data["keys"].tolist(), data["vecs"], strict=True))

    def _save(self) -> None:
        keys = list(self.known)
        with self.cache.open("wb") as f:
            np.savez(f, keys=np.array(keys), vecs=np.stack([self.known[k] for k in keys]))

    @staticmethod
    def _key(kind: str, text: str) -> str:
        return hashlib.sha256(f"{kind}\0{text}".encode()).hexdigest()

    def documents(self, texts: Sequence[str]) -> Any:
        missing = list(dict.fromkeys(t for t in texts if self._key("D", t) not in self.known))
        for i in range(0, len(missing), 32):
            part = missing[i : i + 32]
            vecs = np.asarray(self.model.embed_documents(part), dtype=np.float32)
            for t, v in zip(part, vecs, strict=True):
                self.known[self._key("D", t)] = v
            print(f"\r  embedding {min(i + 32, len(missing))}/{len(missing)}", end="", flush=True)
        if missing:
            print()
            self._save()
        return np.stack([self.known[self._key("D", t)] for t in texts])

    def queries(self, texts: Sequence[str]) -> Any:
        missing = [t for t in texts if self._key("Q", t) not in self.known]
        for t in missing:
            v = np.asarray(self.model.embed_query(t), dtype=np.float32).reshape(-1)
            self.known[self._key("Q", t)] = v
        if missing:
            self._save()
        return np.stack([self.known[self._key("Q", t)] for t in texts])


def load_notes(vault: Path) -> dict[str, Note]:
    notes: dict[str, Note] = {}
    for p in sorted(vault.rglob("*.md")):
        parsed = parse_note(p.read_text(encoding="utf-8"))
        data = parsed.data
        title = str(data.get("title") or p.stem)
        desc = data.get("description")
        aliases = data.get("aliases") or data.get("alias") or []
        aliases = [aliases] if isinstance(aliases, str) else [str(a) for a in aliases]
        notes[str(p.relative_to(vault))] = {
            "title": title,
            "body": parsed.body,
            "desc": desc if isinstance(desc, str) else "",
            "aliases": aliases,
        }
    return notes


def anchor_texts(notes: dict[str, Note]) -> dict[str, list[str]]:
    """Per note, the distinct texts other notes link to it with: a wikilink's display text, else
    the line around the link (its wikilinks replaced by their text), at most 200 characters."""
    by_name: dict[str, str] = {}
    for path in notes:
        by_name.setdefault(path[:-3].casefold(), path)
        by_name.setdefault(Path(path).stem.casefold(), path)
    out: dict[str, list[str]] = {p: [] for p in notes}
    for source, note in notes.items():
        lines = note["body"].splitlines()
        for link in parse_links(note["body"]):
            if link.embed or not link.target_text:
                continue
            name = link.target_text.removesuffix(".md").casefold()
            target = by_name.get(name) or by_name.get(Path(name).name)
            if target is None or target == source:
                continue
            text = link.alias
            if not text and 0 < link.line <= len(lines):
                line = lines[link.line - 1]
                text = re.sub(r"!?\[\[(?:[^\]|]*\|)?([^\]]*)\]\]", r"\1", line).strip(" -*#>")
            text = (text or "")[:200]
            if text and text not in out[target]:
                out[target].append(text)
    return out


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.vault = (args.vault or find_vault()).resolve()
        home = GoatHome.from_env(args.home)
        self.keyword = System(home, self.vault, None).keyword
        self.vectors = Vectors(
            home, args.embedder, args.home / f"eval-variants-{args.embedder}.npz"
        )
        self.notes = load_notes(self.vault)
        self.paths = list(self.notes)
        qs = read_tsv("en_questions.tsv")
        desc = descriptions(self.vault)
        half = [[(q, a) for i, (q, a) in enumerate(qs) if i % 2 == r] for r in (0, 1)]
        self.sets = {
            "descriptions": ([d for d, _ in desc], [p for _, p in desc]),
            "set 1": ([q for q, _ in half[0]], [a for _, a in half[0]]),
            "set 2": ([q for q, _ in half[1]], [a for _, a in half[1]]),
        }
        self._kw: dict[tuple[str, int], Ranked] = {}
        words = Counter[str]()
        for n in self.notes.values():
            words.update(set(re.findall(r"\w+", f"{n['title']} {n['body']}".casefold())))
        self.df = {w: c / len(self.notes) for w, c in words.items()}

    def kw(self, q: str, depth: int) -> Ranked:
        if (q, depth) not in self._kw:
            hits = self.keyword.search(q, limit=depth, snippets=False).hits
            self._kw[(q, depth)] = [(h.path, h.score) for h in hits]
        return self._kw[(q, depth)]

    def index(self, chunks: Rows, rows: Rows) -> tuple[Any, Any, Any]:
        note_of, is_note, texts = [], [], []
        for i, path in enumerate(self.paths):
            for t in chunks(path, self.notes[path]):
                note_of.append(i), is_note.append(False), texts.append(t)
            for t in rows(path, self.notes[path]):
                note_of.append(i), is_note.append(True), texts.append(t)
        return np.array(note_of), np.array(is_note), self.vectors.documents(texts)

    def vec(
        self,
        index: tuple[Any, Any, Any],
        queries: Sequence[str],
        weight: float,
        beta: float,
        centre: float = 0.0,
    ) -> list[Ranked]:
        note_of, is_note, mat = index
        qmat = self.vectors.queries(queries)
        if centre:  # take the mean section vector off both sides, then renormalise
            mean = centre * mat[~is_note].mean(axis=0)
            mat, qmat = mat - mean, qmat - mean
            mat = mat / np.linalg.norm(mat, axis=1, keepdims=True)
            qmat = qmat / np.linalg.norm(qmat, axis=1, keepdims=True)
        sections = np.bincount(note_of[~is_note], minlength=len(self.paths))
        penalty = beta * np.log(np.maximum(sections, 1))
        out = []
        for sims in qmat @ mat.T:
            score = np.full(len(self.paths), -np.inf, dtype=np.float32)
            np.maximum.at(score, note_of[~is_note], sims[~is_note])
            row = np.full(len(self.paths), -np.inf, dtype=np.float32)
            np.maximum.at(row, note_of[is_note], sims[is_note])
            score = score + np.where(np.isfinite(row), weight * row, 0.0) - penalty
            top = np.argsort(-score, kind="stable")[:100]
            out.append([(self.paths[t], float(score[t])) for t in top])
        return out

    def run(
        self,
        label: str,
        index: tuple[Any, Any, Any],
        *,
        weight: float = NOTE_WEIGHT,
        beta: float = 0.0,
        centre: float = 0.0,
        fusion: Fusion = FUSION,
        keyword_query: Callable[[str], str] = lambda q: q,
    ) -> None:
        cells = []
        for queries, answers in self.sets.values():
            vec = self.vec(index, queries, weight, beta, centre)
            kws = [self.kw(keyword_query(q), fusion.depth) for q in queries]
            hybrid = [
                [p for p, _ in fuse(k, v[: fusion.depth], fusion)]
                for k, v in zip(kws, vec, strict=True)
            ]
            cells.append(f"{mrr(vec, answers):.3f} / {mrr(hybrid, answers):.3f}")
        print(f"| {label} | " + " | ".join(cells) + " |", flush=True)

    def without_common(self, share: float) -> Callable[[str], str]:
        def query(q: str) -> str:
            kept = [w for w in q.split() if self.df.get(w.casefold().strip("?.,!"), 0) <= share]
            return " ".join(kept) or q

        return query


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--vault", type=Path, default=None)
    ap.add_argument("--home", type=Path, default=Path("/tmp/goat-eval-home"))
    ap.add_argument("--embedder", default="minilm-en")
    ap.add_argument(
        "--only",
        default="",
        help="comma-separated groups: baseline,text,length,fusion (the default), grid",
    )
    args = ap.parse_args(argv)
    groups = set(filter(None, args.only.split(","))) or {"baseline", "text", "length", "fusion"}
    b = Bench(args)

    def chunks(_p: str, n: Note) -> list[str]:
        return [c.embed_text for c in chunk_note(n["title"], n["body"], n["desc"])]

    def shipped_row(_p: str, n: Note) -> list[str]:
        return [note_text(n["title"], n["desc"])]

    print(f"MRR@10, vectors alone / hybrid, {args.embedder}, {len(b.paths)} notes")
    print("| variant | descriptions | set 1 (tune) | set 2 (report) |")
    print("|---|---|---|---|")
    base = b.index(chunks, shipped_row)
    b.run(f"baseline (note weight {NOTE_WEIGHT:g}, {FUSION.mode} kw {FUSION.keyword:g})", base)
    if "text" in groups:
        anchors = anchor_texts(b.notes)

        def with_aliases(_p: str, n: Note) -> list[str]:
            names = ", ".join(a.rsplit("/", 1)[-1] for a in n["aliases"])
            return [". ".join(c for c in (n["title"], names, n["desc"]) if c)]

        def with_headings(_p: str, n: Note) -> list[str]:
            heads = [c.heading.rsplit(" > ", 1)[-1] for c in chunk_note(n["title"], n["body"])]
            text = ", ".join(dict.fromkeys(h for h in heads if h))
            return [". ".join(c for c in (n["title"], n["desc"], text) if c)[:600]]

        def anchor_row(p: str, n: Note) -> list[str]:
            extra = [f"{n['title']}. " + "; ".join(anchors[p])][: bool(anchors[p])]
            return [note_text(n["title"], n["desc"]), *(t[:600] for t in extra)]

        def anchors_inside(p: str, n: Note) -> list[str]:
            text = note_text(n["title"], n["desc"])
            return [(text + (". " + "; ".join(anchors[p]) if anchors[p] else ""))[:600]]

        print(f"  ({sum(1 for a in anchors.values() if a)} notes have anchor text)")
        for name, rows in (
            ("note row + aliases", with_aliases),
            ("note row + section headings", with_headings),
            ("anchor text as an extra note row", anchor_row),
            ("anchor text inside the note row", anchors_inside),
        ):
            index = b.index(chunks, rows)
            for w in (0.1, 0.2, 0.3):
                b.run(f"{name}, note weight {w:g}", index, weight=w)
    if "length" in groups:
        for beta in (0.01, 0.02, 0.03, 0.05):
            b.run(f"length penalty {beta:g} x log(sections)", base, beta=beta)
        for centre in (0.5, 1.0):
            b.run(f"vectors centred on {centre:g} x the mean section vector", base, centre=centre)
    if "fusion" in groups:
        for share, depth in itertools.product((0.1, 0.15, 0.2, 0.25, 0.3, 0.4), (20, 50, 100)):
            f = Fusion(keyword=share, vector=1 - share, depth=depth, mode="cc")
            b.run(f"cc keyword {share:g}, depth {depth}", base, fusion=f)
        for weight, k in itertools.product((0.3, 0.5, 0.75, 1.0), (5, 10, 30, 60)):
            f = Fusion(keyword=weight, vector=1.0, k=k, depth=50, mode="rrf")
            b.run(f"rrf keyword {weight:g}, k {k:g}", base, fusion=f)
        for share in (0.15, 0.25, 0.4, 0.6):
            b.run(f"keyword side without words in > {share:g} of notes", base,
                  keyword_query=b.without_common(share))  # fmt: skip
    if "grid" in groups:
        # note weight x keyword share x depth, the ten best on set 1
        found = []
        for w, share, depth in itertools.product(
            (0.1, 0.15, 0.2, 0.25, 0.3, 0.4),
            (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4),
            (10, 20, 30, 50, 100),
        ):
            f = Fusion(keyword=share, vector=1 - share, depth=depth, mode="cc")
            with contextlib.redirect_stdout(io.StringIO()) as out:
                b.run(f"note weight {w:g}, cc keyword {share:g}, depth {depth}", base, weight=w,
                      fusion=f)  # fmt: skip
            row = out.getvalue().strip()
            found.append((float(row.split(" | ")[2].split(" / ")[1]), row))
        found.sort(key=lambda t: -t[0])
        print(f"  best 10 of {len(found)} on set 1 (hybrid):")
        for _, row in found[:10]:
            print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
