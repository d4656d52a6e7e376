"""The full-text search index (goat_core.filestore.search) on real files in temporary folders."""

from __future__ import annotations

import multiprocessing as mp
import os
import re
import sqlite3
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goat_core.errors import BadInput, ProviderUnavailable
from goat_core.filestore.search import (
    SCHEMA_VERSION,
    SNIPPET_CLOSE,
    SNIPPET_OPEN,
    FileStat,
    IndexedDoc,
    SearchHit,
    SearchIndex,
    SyncStats,
    fts_query,
    highlight,
    query_terms,
    search_terms,
)


def marked(hit: SearchHit) -> str:
    """A hit's plain snippet with its spans marked ``==...==`` (Obsidian's highlight)."""
    return highlight(hit.snippet, hit.spans, SNIPPET_OPEN, SNIPPET_CLOSE)


# --------------------------------------------------------------------------- a tiny store


def _split_frontmatter(text: str) -> tuple[dict[str, object], str]:
    import yaml

    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end >= 0:
            data = yaml.safe_load(text[4:end]) or {}
            if isinstance(data, dict):
                return data, text[end + 5 :]
    return {}, text


def scan(root: Path) -> list[FileStat]:
    out = []
    for p in sorted(root.rglob("*.md")):
        st_ = p.stat()
        out.append(FileStat(p.relative_to(root).as_posix(), st_.st_mtime_ns, st_.st_size))
    return out


def loader(root: Path):  # type: ignore[no-untyped-def]
    def load(rel: str) -> IndexedDoc | None:
        try:
            text = (root / rel).read_text(encoding="utf-8")
        except OSError:
            return None
        fm, body = _split_frontmatter(text)
        as_tuple = lambda v: tuple(str(x) for x in v) if isinstance(v, list) else ()  # noqa: E731
        return IndexedDoc(
            path=rel,
            title=str(fm.get("title") or Path(rel).stem),
            body=body,
            description=str(fm.get("description") or ""),
            aliases=as_tuple(fm.get("aliases")),
            tags=as_tuple(fm.get("tags")),
        )

    return load


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def bump_mtime(p: Path) -> None:
    st_ = p.stat()
    os.utime(p, ns=(st_.st_atime_ns, st_.st_mtime_ns + 1_000_000_000))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write(root, "Syntax.md", "Tasks with status: done are archived. Always retry OR give up.\n")
    write(root, "Globs.md", "Use a* to match, keep the -x flag, see a/b and (paren) too.\n")
    write(root, "Quotes.md", 'He said "quoted" words NEAR the door.\n')
    write(root, "Cafe.md", "---\ntitle: Meeting place\n---\nWe met at the café near the station.\n")
    write(root, "zh/数据.md", "这是一个关于数据库设计的笔记，数据很重要。\n")  # noqa: RUF001
    write(root, "ja/接続.md", "データベースへの接続方法を説明します。\n")
    write(root, "ja/kana.md", "きょうはとてもいいてんきですね。\n")
    write(root, "th/ภาษา.md", "บันทึกนี้เกี่ยวกับภาษาไทยและการเขียน\n")
    write(root, "hi.md", "यह किताब पढ़ना अच्छा है\n")
    for i in range(6):
        write(root, f"filler/{i}.md", f"Plain filler note number {i} about gardening and tools.\n")
    return root


@pytest.fixture
def index(tmp_path: Path, store: Path):  # type: ignore[no-untyped-def]
    ix = SearchIndex(tmp_path / "home" / "index" / "search.sqlite")
    ix.sync(scan(store), loader(store))
    yield ix
    ix.close()


def paths(ix: SearchIndex, q: str) -> list[str]:
    return [h.path for h in ix.search(q).hits]


# --------------------------------------------------------------------------- queries


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status: done", "Syntax.md"),
        ("retry OR", "Syntax.md"),
        ("a*", "Globs.md"),
        ('"quoted"', "Quotes.md"),
        ("-x", "Globs.md"),
        ("a/b", "Globs.md"),
        ("(paren)", "Globs.md"),
        ("NEAR", "Quotes.md"),
        ("NEAR(", "Quotes.md"),
        ("give AND up", "Syntax.md"),
        ("NOT retry", "Syntax.md"),
        ("title:status", "Syntax.md"),
        ("^retry", "Syntax.md"),
        ("{retry}", "Syntax.md"),
        ("retry +", "Syntax.md"),
    ],
)
def test_query_syntax_characters_find_the_literal(index: SearchIndex, query: str, expected: str):
    res = index.search(query)
    assert res.hits, query
    assert res.hits[0].path == expected


def test_operator_words_are_plain_words(index: SearchIndex):
    # "OR" is no operator: beside another term it is a stop-word (dropped, never marked) ...
    res = index.search("retry OR")
    assert [h.path for h in res.hits] == ["Syntax.md"]
    snippet = marked(res.hits[0])
    assert snippet == "Tasks with status: done are archived. Always ==retry== OR give up."
    # ... and alone it is the literal word
    res = index.search("OR")
    assert [h.path for h in res.hits] == ["Syntax.md"]
    assert SNIPPET_OPEN + "OR" + SNIPPET_CLOSE in marked(res.hits[0])


def test_stop_words_are_dropped_only_beside_other_terms():
    assert search_terms("What is a vault?") == ["vault"]
    assert search_terms("how do I link to a heading") == ["link", "heading"]
    assert search_terms("To be or not to be") == ["To", "be", "or", "not"]  # nothing else
    assert search_terms("the 数据") == ["数据"]
    assert search_terms("の 数据") == ["の", "数据"]  # spaceless scripts have no stop-words
    assert search_terms("") == []


@pytest.mark.parametrize("query", ["", "   ", "\n\t", "---", '"" ()', "*", ":", "-", "/", "?!."])
def test_queries_without_terms_return_nothing(index: SearchIndex, query: str):
    res = index.search(query)
    assert res.hits == [] and res.total == 0 and res.complete


def test_limit_below_one_is_bad_input(index: SearchIndex):
    with pytest.raises(BadInput, match="at least 1"):
        index.search("retry", limit=0)


def test_query_terms_and_expression():
    assert query_terms('status: done "x" Python数据') == ["status", "done", "x", "Python", "数据"]
    assert fts_query(['a"b', "数据库", "据"], "OR") == '"a""b" OR "数据 据库" OR "据"*'


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(max_size=80))
def test_search_of_any_text_never_raises(index: SearchIndex, query: str):
    res = index.search(query, limit=3)
    assert res.total >= len(res.hits)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(alphabet=st.characters(categories=("L", "N")), min_size=1, max_size=12))
def test_any_indexed_word_is_found(tmp_path: Path, word: str):
    db = tmp_path / "prop.sqlite"
    with SearchIndex(db) as ix:
        ix.update_one(IndexedDoc("w.md", "w", f"before {word} after"), FileStat("w.md", 1, 1))
        assert [h.path for h in ix.search(word).hits] == ["w.md"]
        ix.remove("w.md")


# --------------------------------------------------------------------------- languages


def test_diacritics_are_folded(index: SearchIndex):
    assert paths(index, "cafe") == ["Cafe.md"]
    assert paths(index, "CAFÉ") == ["Cafe.md"]
    assert SNIPPET_OPEN + "café" + SNIPPET_CLOSE in marked(index.search("cafe").hits[0])


def test_decomposed_accents_are_folded(tmp_path: Path):
    with SearchIndex(tmp_path / "i.sqlite") as ix:
        ix.update_one(IndexedDoc("n.md", "n", "cafe\u0301 au lait"), FileStat("n.md", 1, 1))
        assert [h.path for h in ix.search("café").hits] == ["n.md"]
        assert [h.path for h in ix.search("cafe").hits] == ["n.md"]


@pytest.mark.parametrize(
    "text",
    [
        "Café crème",  # folds to another single character: replaced before lower()
        "ÉTÉ à Paris",
        "ΟΔΟΣ και σοφία",  # final sigma: lower() depends on the next character
        "İstanbul",  # lower() gives two characters
        "Straße",  # folds to two characters
        "ﬁle",  # a ligature: folds to two characters
        "が ぎ ぐ",  # kana with a voicing mark: the mark is dropped
        "\uff21\uff22\uff23 full width",
        "\u13a0 \uab70 Cherokee",  # casefold gives upper case
        "Приве́т мир",  # a combining accent
        "ok 👍️ then ﬁne",  # a variation selector folds to nothing; two uneven characters
        "plain ascii only",
    ],
)
def test_fold_in_c_equals_fold_char_by_char(text: str):
    from goat_core.filestore.search._snippets import _fold, _fold_char

    parts = [_fold_char(c) for c in text]
    offsets: list[int] | None = None
    if any(len(p) != 1 for p in parts):  # the map from folded to original index
        offsets = [i for i, p in enumerate(parts) for _ in p] + [len(text)]
    assert _fold(text) == ("".join(parts), offsets)


def test_snippet_marks_an_accented_word_in_a_mostly_ascii_note(tmp_path: Path):
    body = "x " * 300 + "Le CAFÉ est ouvert, the café is open."
    with SearchIndex(tmp_path / "i.sqlite") as ix:
        ix.update_one(IndexedDoc("n.md", "n", body), FileStat("n.md", 1, 1))
        snippet = marked(ix.search("cafe").hits[0])
    assert SNIPPET_OPEN + "CAFÉ" + SNIPPET_CLOSE in snippet
    assert SNIPPET_OPEN + "café" + SNIPPET_CLOSE in snippet


@pytest.mark.parametrize(
    ("query", "expected", "shown"),
    [
        ("接続", "ja/接続.md", "接続"),
        ("数据", "zh/数据.md", "数据"),
        ("数据库", "zh/数据.md", "数据库"),
        ("库", "zh/数据.md", "库"),
        ("データ", "ja/接続.md", "データ"),
        ("てんき", "ja/kana.md", "てんき"),
        ("ภาษา", "th/ภาษา.md", "ภาษา"),
        ("किताब", "hi.md", "किताब"),
    ],
)
def test_spaceless_scripts_find_short_words(
    index: SearchIndex, query: str, expected: str, shown: str
):
    res = index.search(query)
    assert [h.path for h in res.hits] == [expected]
    assert SNIPPET_OPEN + shown + SNIPPET_CLOSE in marked(res.hits[0])


def test_cjk_pair_not_in_text_is_not_found(index: SearchIndex):
    assert paths(index, "据数") == []  # both characters present, never adjacent in this order


# --------------------------------------------------------------------------- ranking, snippets


def test_title_match_outranks_body_only_match(tmp_path: Path):
    root = tmp_path / "v"
    write(root, "a.md", "---\ntitle: Notes\n---\n" + "Kubernetes is mentioned here once.\n")
    write(root, "b.md", "---\ntitle: Kubernetes\n---\nA note about clusters.\n")
    write(root, "c.md", "---\ntitle: Other\ndescription: Kubernetes cheat sheet\n---\nStuff.\n")
    with SearchIndex(tmp_path / "i.sqlite") as ix:
        ix.sync(scan(root), loader(root))
        hits = ix.search("kubernetes").hits
        assert [h.path for h in hits] == ["b.md", "c.md", "a.md"]
        assert hits[0].score > hits[1].score > hits[2].score


def test_all_terms_rank_before_some_terms(tmp_path: Path):
    root = tmp_path / "v"
    write(root, "one.md", "apple apple apple apple banana words\n")
    write(root, "both.md", "apple cherry and more words\n")
    with SearchIndex(tmp_path / "i.sqlite") as ix:
        ix.sync(scan(root), loader(root))
        res = ix.search("apple cherry")
        assert [h.path for h in res.hits] == ["both.md", "one.md"]
        assert res.total == 2 and res.complete
        assert res.hits[0].score >= res.hits[1].score


def _docs_index(tmp_path: Path, docs: list[IndexedDoc]) -> SearchIndex:
    ix = SearchIndex(tmp_path / "i.sqlite")
    ix.sync([FileStat(d.path, 1, len(d.body)) for d in docs], {d.path: d for d in docs}.get)
    return ix


def test_a_term_in_most_notes_still_scores_and_titles_lead(tmp_path: Path):
    # FTS5's bm25 gives a term in over half the notes an idf of about 0 (every score 0.00)
    docs = [IndexedDoc(f"n{i}.md", f"Note {i}", f"the vault holds note {i}") for i in range(8)]
    docs.append(IndexedDoc("Create a vault.md", "Create a vault", "Pick a folder."))
    docs.append(IndexedDoc("Manage vaults.md", "Manage vaults", "Switch between them."))
    with _docs_index(tmp_path, docs) as ix:
        res = ix.search("vault", limit=3)
        # the shorter title is more about the term
        assert [h.path for h in res.hits] == ["Manage vaults.md", "Create a vault.md", "n0.md"]
        assert all(h.score >= 0.01 for h in res.hits)  # shown with two decimals, never 0.00
        assert res.hits[0].score > res.hits[1].score > res.hits[2].score
        # a ranked top 3 of 10: not complete, but nothing was left unsearched
        assert res.total == 10 and res.complete is False and res.degraded == ()


def test_stemming_matches_word_forms_and_marks_them(tmp_path: Path):
    docs = [
        IndexedDoc(
            "a.md", "Recovery", "Deleting a file moves it to the trash; restore deleted files."
        ),
        IndexedDoc("b.md", "Vault", "One vault per project."),
    ]
    with _docs_index(tmp_path, docs) as ix:
        assert [h.path for h in ix.search("vaults").hits] == ["b.md"]
        assert marked(ix.search("vaults").hits[0]) == "One ==vault== per project."
        hit = ix.search("delete").hits[0]
        assert hit.path == "a.md"
        assert "==Deleting==" in marked(hit) and "==deleted==" in marked(hit)
        assert "==files==" not in marked(hit)  # only query terms are marked


def test_equal_scores_break_by_title_match_then_path(tmp_path: Path):
    docs = [IndexedDoc(f"{name}.md", "Same", "gardening tools") for name in ("c", "A", "b")]
    docs.append(IndexedDoc("z.md", "Gardening", "gardening tools"))
    with _docs_index(tmp_path, docs) as ix:
        res = ix.search("gardening tools")
        assert [h.path for h in res.hits] == ["z.md", "A.md", "b.md", "c.md"]
        assert res.hits[1].score == res.hits[2].score == res.hits[3].score > 0


def test_snippet_marks_no_stop_word_and_keep_wikilinks_readable(tmp_path: Path):
    body = "Press Ctrl+P to open the [[Command palette]], a list of every command."
    docs = [IndexedDoc("Command palette.md", "Command palette", body)]
    docs += [IndexedDoc(f"f{i}.md", f"F{i}", "how to open a file") for i in range(3)]
    with _docs_index(tmp_path, docs) as ix:
        hit = ix.search("how do I open the command palette?").hits[0]
        assert hit.path == "Command palette.md"
        assert "[[==Command== ==palette==]]" in marked(hit) and "==open==" in marked(hit)
        assert "==the==" not in marked(hit) and "==to==" not in marked(hit)
    # marks are Obsidian's highlight, so the note's own bold stays readable around them, and
    # text the note already highlights is not wrapped twice
    notes = [
        IndexedDoc("b.md", "B", "Select **Open** now"),
        IndexedDoc("c.md", "C", "Set the **Device name** first"),
        IndexedDoc("d.md", "D", "Always ==sync== twice"),
    ]
    with _docs_index(tmp_path / "2", notes) as ix:
        assert marked(ix.search("open").hits[0]) == "Select **==Open==** now"
        assert marked(ix.search("device").hits[0]) == "Set the **==Device== name** first"
        assert marked(ix.search("sync").hits[0]) == "Always ==sync== twice"


def test_notes_with_every_term_lead_notes_with_some(tmp_path: Path):
    docs = [
        IndexedDoc("all.md", "All", "link to a heading in another note"),
        IndexedDoc("many.md", "Many", "link link link link link link, another link"),
        IndexedDoc("other.md", "Heading", "nothing else"),
    ]
    with _docs_index(tmp_path, docs) as ix:
        res = ix.search("how do I link to a heading")
        assert res.hits[0].path == "all.md"
        assert {h.path for h in res.hits} == {"all.md", "many.md", "other.md"}
        assert res.total == 3 and res.complete


def test_snippet_contains_the_match_far_into_a_long_note(tmp_path: Path):
    body = ("lorem ipsum dolor sit amet " * 20000) + "the needle sits here " + "tail " * 100
    with SearchIndex(tmp_path / "i.sqlite") as ix:
        ix.update_one(IndexedDoc("long.md", "Long", body), FileStat("long.md", 1, len(body)))
        hit = ix.search("needle").hits[0]
        assert SNIPPET_OPEN + "needle" + SNIPPET_CLOSE in marked(hit)
        assert hit.snippet.startswith("…") and len(hit.snippet) < 300


def test_title_only_match_snippet_is_start_of_note(index: SearchIndex):
    hit = index.search("meeting place").hits[0]
    assert hit.path == "Cafe.md" and hit.title == "Meeting place"
    assert hit.snippet.startswith("We met at the café")


def test_limit_and_complete(index: SearchIndex):
    res = index.search("filler", limit=2)
    assert len(res.hits) == 2 and res.total == 6 and res.complete is False


# --------------------------------------------------------------------------- incremental sync


def test_incremental_sync_touch_delete_rename(tmp_path: Path, store: Path):
    loads: list[str] = []
    base = loader(store)

    def counting(rel: str) -> IndexedDoc | None:
        loads.append(rel)
        return base(rel)

    with SearchIndex(tmp_path / "i.sqlite") as ix:
        first = ix.sync(scan(store), counting)
        n = first.scanned
        assert (first.added, first.updated, first.removed) == (n, 0, 0)

        loads.clear()
        again = ix.sync(scan(store), counting)
        assert (again.added, again.updated, again.removed, again.unchanged) == (0, 0, 0, n)
        assert loads == []

        p = store / "Syntax.md"
        p.write_text("Tasks now say status: archived.\n", encoding="utf-8")
        bump_mtime(p)
        touched = ix.sync(scan(store), counting)
        assert (touched.updated, touched.unchanged, touched.added, touched.removed) == (
            1,
            n - 1,
            0,
            0,
        )
        assert loads == ["Syntax.md"]
        assert paths(ix, "archived") == ["Syntax.md"] and paths(ix, "retry") == []

        (store / "Quotes.md").unlink()
        gone = ix.sync(scan(store), counting)
        assert (gone.removed, gone.unchanged) == (1, n - 1)
        assert paths(ix, "quoted") == []

        (store / "Globs.md").rename(store / "filler" / "Renamed.md")
        moved = ix.sync(scan(store), counting)
        assert (moved.added, moved.removed, moved.unchanged) == (1, 1, n - 2)
        assert paths(ix, "paren") == ["filler/Renamed.md"]
        assert ix.verify() == []
        assert ix.stats().documents == n - 1


def test_unreadable_file_is_skipped_and_the_rest_indexed(tmp_path: Path, store: Path):
    base = loader(store)
    seen: list[tuple[int, int]] = []

    def flaky(rel: str) -> IndexedDoc | None:
        return None if rel == "Globs.md" else base(rel)

    with SearchIndex(tmp_path / "i.sqlite") as ix:
        res = ix.sync(scan(store), flaky, progress=lambda d, t: seen.append((d, t)))
        assert res.skipped == 1 and res.added == res.scanned - 1
        assert paths(ix, "paren") == [] and paths(ix, "cafe") == ["Cafe.md"]
        assert seen[0] == (0, res.scanned) and seen[-1] == (res.scanned, res.scanned)
        # retried next time, now readable
        res2 = ix.sync(scan(store), base)
        assert (res2.added, res2.unchanged) == (1, res.scanned - 1)
        assert paths(ix, "paren") == ["Globs.md"]


def test_update_one_and_remove(tmp_path: Path):
    with SearchIndex(tmp_path / "i.sqlite") as ix:
        ix.update_one(IndexedDoc("n.md", "N", "first version"), FileStat("n.md", 1, 13))
        ix.update_one(IndexedDoc("n.md", "N", "second version"), FileStat("n.md", 2, 14))
        assert paths(ix, "first") == [] and paths(ix, "second") == ["n.md"]
        assert ix.remove("n.md") is True and ix.remove("n.md") is False
        assert paths(ix, "second") == [] and ix.verify() == []
        with pytest.raises(BadInput, match="differs"):
            ix.update_one(IndexedDoc("a.md", "A", "x"), FileStat("b.md", 1, 1))


def test_index_lives_outside_the_store_and_stats(tmp_path: Path, store: Path, index: SearchIndex):
    before = sorted(p.name for p in store.rglob("*"))
    index.sync(scan(store), loader(store))
    assert sorted(p.name for p in store.rglob("*")) == before
    s = index.stats()
    assert s.documents == len(scan(store)) and s.bytes > 0


# --------------------------------------------------------------------------- schema, corruption


def test_schema_change_rebuilds(tmp_path: Path):
    db = tmp_path / "i.sqlite"
    with SearchIndex(db) as ix:
        ix.update_one(IndexedDoc("n.md", "N", "hello"), FileStat("n.md", 1, 5))
    con = sqlite3.connect(db)
    con.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    with SearchIndex(db) as ix:
        assert ix.rebuilt and ix.stats().documents == 0
        assert ix.sync([FileStat("n.md", 1, 5)], lambda p: IndexedDoc(p, "N", "hello")).added == 1


def test_index_from_schema_2_is_rebuilt_with_stemming(tmp_path: Path):
    """An index without stemming or an aliases column (schema 2) is rebuilt on open."""
    db = tmp_path / "i.sqlite"
    with SearchIndex(db) as ix:
        ix.update_one(IndexedDoc("n.md", "N", "vaults"), FileStat("n.md", 1, 6))
    con = sqlite3.connect(db)
    con.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    with SearchIndex(db) as ix:
        assert ix.rebuilt and ix.stats().documents == 0
        assert ix.stats().schema_version == SCHEMA_VERSION
        ix.sync([FileStat("n.md", 1, 6)], lambda p: IndexedDoc(p, "N", "vaults"))
        assert [h.path for h in ix.search("vault").hits] == ["n.md"]


def test_index_from_schema_1_is_rebuilt(tmp_path: Path):
    """An index written before ``ident``/``problem`` existed is rebuilt, then synced anew."""
    db = tmp_path / "i.sqlite"
    con = sqlite3.connect(db)
    con.executescript(
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO meta VALUES ('schema_version', '1');"
        "CREATE TABLE docs(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE,"
        " mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL, title TEXT NOT NULL,"
        " meta TEXT NOT NULL, extra TEXT NOT NULL, body BLOB NOT NULL);"
        "CREATE INDEX docs_stat ON docs(path, mtime_ns, size);"
    )
    con.close()
    with SearchIndex(db) as ix:
        assert ix.rebuilt and ix.stats().documents == 0
        doc = IndexedDoc("n.md", "N", "hello", problem="frontmatter does not parse")
        assert ix.sync([FileStat("n.md", 1, 5)], lambda p: doc).added == 1
        assert ix.problems() == [("n.md", "frontmatter does not parse")]


def test_documents_and_problems_persist_without_the_files(tmp_path: Path):
    db = tmp_path / "i.sqlite"
    docs = {
        "b.md": IndexedDoc("b.md", "Bee", "x", ident="id-b", problem="frontmatter does not parse"),
        "A.md": IndexedDoc("A.md", "Ay", "y"),
        "a/c.md": IndexedDoc("a/c.md", "Sea", "z", problem="note is not valid UTF-8"),
    }
    stats = [FileStat(p, 1, 1) for p in docs]
    with SearchIndex(db) as ix:
        ix.sync(stats, docs.__getitem__)

    def never(rel: str) -> IndexedDoc | None:
        raise AssertionError(f"{rel} was loaded although unchanged")

    with SearchIndex(db) as ix:  # a new process: nothing is read again
        assert ix.sync(stats, never).unchanged == 3
        assert [(d.path, d.title, d.ident) for d in ix.documents()] == [
            ("A.md", "Ay", None),
            ("a/c.md", "Sea", None),
            ("b.md", "Bee", "id-b"),
        ]
        assert ix.documents()[1].problem == "note is not valid UTF-8"
        assert ix.problems() == [
            ("a/c.md", "note is not valid UTF-8"),
            ("b.md", "frontmatter does not parse"),
        ]
        # a fixed note loses its problem; a removed one takes it along
        ix.update_one(IndexedDoc("b.md", "Bee", "fixed"), FileStat("b.md", 2, 5))
        ix.remove("a/c.md")
        assert ix.problems() == []
        plan = ix._db.execute(
            "EXPLAIN QUERY PLAN SELECT path, title, ident, problem FROM docs INDEXED BY docs_stat"
        ).fetchall()
        assert "COVERING INDEX" in str(plan)  # the listing never touches the bodies


def test_garbage_file_is_rebuilt(tmp_path: Path):
    db = tmp_path / "i.sqlite"
    db.write_bytes(b"this is not a database at all" * 200)
    with SearchIndex(db) as ix:
        assert ix.rebuilt and ix.verify() == []
        assert ix.search("anything").hits == []


def _fill(ix: SearchIndex, n: int) -> None:
    for i in range(n):
        body = f"word{i} common " * 50
        ix.update_one(IndexedDoc(f"{i}.md", str(i), body), FileStat(f"{i}.md", 1, len(body)))


def test_clobbered_pages_are_rebuilt_on_open(tmp_path: Path):
    db = tmp_path / "i.sqlite"
    with SearchIndex(db) as ix:
        _fill(ix, 300)
        ix._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = bytearray(db.read_bytes())
    for off in range(4096, len(raw) - 4096, 4096):  # clobber every page after the first
        raw[off : off + 64] = b"\xff" * 64
    db.write_bytes(bytes(raw))
    with SearchIndex(db) as ix:
        assert ix.rebuilt and ix.verify() == [] and ix.stats().documents == 0
        _fill(ix, 3)
        assert paths(ix, "word2") == ["2.md"]


def test_corrupt_fulltext_data_found_by_search_and_verify(tmp_path: Path):
    db = tmp_path / "i.sqlite"
    with SearchIndex(db) as ix:
        _fill(ix, 50)
        raw = sqlite3.connect(db)
        raw.execute("UPDATE fts_data SET block = X'FFFFFFFFFFFFFFFFFFFFFFFFFFFF' WHERE id > 10")
        raw.commit()
        raw.close()
        problems = ix.verify()
        assert len(problems) == 1 and "is corrupt" in problems[0] and str(db) in problems[0]
        assert not ix.rebuilt  # verify reports, never repairs
        res = ix.search("common")
        assert res.hits == [] and res.complete is False and "rebuilt" in res.degraded[0]
        assert ix.rebuilt and ix.verify() == []


def test_rows_without_fulltext_entries_are_reported(tmp_path: Path):
    db = tmp_path / "i.sqlite"
    with SearchIndex(db) as ix:
        _fill(ix, 5)
        raw = sqlite3.connect(db)
        raw.execute("DELETE FROM docs WHERE path = '3.md'")
        raw.commit()
        raw.close()
        assert ix.verify() == ["4 documents but 5 full-text entries"]
        ix.rebuild()
        assert ix.verify() == [] and ix.stats().documents == 0


def test_busy_index_raises_provider_unavailable_naming_it(tmp_path: Path):
    db = tmp_path / "i.sqlite"
    with SearchIndex(db, busy_timeout_s=0.3) as ix:
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            t0 = time.monotonic()
            with pytest.raises(ProviderUnavailable, match="busy") as err:
                ix.update_one(IndexedDoc("n.md", "N", "x"), FileStat("n.md", 1, 1))
            assert str(db) in str(err.value)
            assert time.monotonic() - t0 < 3.0
            assert ix.search("x").hits == []  # readers are not blocked by the writer (WAL)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        ix.update_one(IndexedDoc("n.md", "N", "x"), FileStat("n.md", 1, 1))
        assert paths(ix, "x") == ["n.md"]


def test_bad_busy_timeout_is_bad_input(tmp_path: Path):
    with pytest.raises(BadInput, match="busy_timeout_s"):
        SearchIndex(tmp_path / "i.sqlite", busy_timeout_s=0)


# --------------------------------------------------------------------------- two processes


def _hits(ix: SearchIndex, query: str) -> list[tuple[str, float, str]]:
    return [(h.path, h.score, h.snippet) for h in ix.search(query).hits]


@pytest.mark.parametrize("writer", ["same object", "another connection"])
def test_a_search_after_a_write_scores_what_the_index_now_holds(tmp_path: Path, writer: str):
    """Searches keep term positions, sizes and paths read before; any commit to the index
    (this object's own or another connection's, as another process's) drops them, so the
    next search scores the new text exactly as a newly opened index does."""
    db = tmp_path / "i.sqlite"
    with SearchIndex(db) as ix:
        ix.update_one(IndexedDoc("a.md", "a", "zqword one two three"), FileStat("a.md", 1, 1))
        ix.update_one(IndexedDoc("b.md", "b", "zqword four five six"), FileStat("b.md", 1, 1))
        assert [h.path for h in ix.search("zqword").hits] == ["a.md", "b.md"]  # a tie: by path
        ix.search("zqword six")
        edit = IndexedDoc("b.md", "b", "zqword zqword zqword six")
        if writer == "same object":
            ix.update_one(edit, FileStat("b.md", 2, 2))
        else:
            with SearchIndex(db) as other:
                other.update_one(edit, FileStat("b.md", 2, 2))
        got = _hits(ix, "zqword")
        assert [p for p, _, _ in got] == ["b.md", "a.md"]  # b's three occurrences now count
        with SearchIndex(db) as fresh:
            assert got == _hits(fresh, "zqword")
            assert _hits(ix, "zqword six") == _hits(fresh, "zqword six")
        ix.remove("a.md")
        assert [p for p, _, _ in _hits(ix, "zqword")] == ["b.md"]


def test_titles_of_some_paths(tmp_path: Path):
    with SearchIndex(tmp_path / "i.sqlite") as ix:
        ix.update_one(IndexedDoc("a.md", "Alpha", "x"), FileStat("a.md", 1, 1))
        ix.update_one(IndexedDoc("d/b.md", "Beta", "y"), FileStat("d/b.md", 1, 1))
        assert ix.titles(["d/b.md", "gone.md", "a.md", "a.md"]) == {
            "d/b.md": "Beta",
            "a.md": "Alpha",
        }
        assert ix.titles([]) == {}
        many = [f"n{i}.md" for i in range(1200)] + ["a.md"]  # more than one statement holds
        assert ix.titles(many) == {"a.md": "Alpha"}


def test_change_token_changes_with_every_write_and_only_then(tmp_path: Path):
    db = tmp_path / "i.sqlite"
    with SearchIndex(db) as ix:
        first = ix.change_token()
        ix.search("anything")
        ix.documents()
        assert ix.change_token() == first  # reads change nothing
        ix.update_one(IndexedDoc("a.md", "a", "x"), FileStat("a.md", 1, 1))
        second = ix.change_token()
        assert second != first
        with SearchIndex(db) as other:  # another connection, as another process
            other.remove("a.md")
        third = ix.change_token()
        assert third != second
        ix.rebuild()
        assert ix.change_token() != third


def _worker(root: str, db: str, rounds: int, flip: int, out: mp.Queue) -> None:  # type: ignore[type-arg]
    problems: list[str] = []
    try:
        r = Path(root)
        with SearchIndex(Path(db), busy_timeout_s=20) as ix:
            for i in range(rounds):
                if i % 2 == flip:
                    p = r / f"shared/{i % 5}.md"
                    p.write_text(f"round {i} text mentions kiwi and word{i}\n", encoding="utf-8")
                    bump_mtime(p)
                ix.sync(scan(r), loader(r))
                res = ix.search("kiwi")
                if not res.hits:
                    problems.append(f"no hits in round {i}")
                problems.extend(ix.verify())
    except Exception as exc:
        problems.append(f"{type(exc).__name__}: {exc}")
    out.put(problems)


def test_two_processes_sync_and_search_one_index(tmp_path: Path):
    root = tmp_path / "vault"
    for i in range(5):
        write(root, f"shared/{i}.md", f"kiwi note {i}\n")
    for i in range(40):
        write(root, f"other/{i}.md", f"unrelated text {i} " * 50)
    db = tmp_path / "home" / "i.sqlite"
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(str(root), str(db), 30, k, out)) for k in (0, 1)]
    t0 = time.monotonic()
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    assert time.monotonic() - t0 < 120
    assert results == [[], []]
    with SearchIndex(db) as ix:
        final = ix.sync(scan(root), loader(root))
        assert final.added == 0 and final.removed == 0
        assert ix.verify() == []
        assert ix.stats().documents == 45


def test_sync_takes_walk_entries_as_they_are(tmp_path: Path, store: Path):
    from goat_core.filestore import walk_notes

    write(store, "a.md", "zqwalked here")
    write(store, "sub/b.md", "zqwalked there")
    with SearchIndex(tmp_path / "i.sqlite") as ix:
        files = walk_notes(store).files
        assert ix.sync(files, loader(store)).added == len(files) > 2
        assert ix.sync(walk_notes(store).files, loader(store)).unchanged == len(files)
        assert {h.path for h in ix.search("zqwalked").hits} == {"a.md", "sub/b.md"}


def test_sync_by_folder_equals_sync_by_file(tmp_path: Path, store: Path):
    """A walk's ``folders`` given as they are index exactly what its flat ``files`` do,
    through adds, an edit, a move to another folder and a deletion."""
    from goat_core.filestore import walk_notes

    for rel in ["a.md", "sub/b.md", "sub/c.md", "sub/deep/d.md", "other/e.md"]:
        write(store, rel, f"zqgroup {rel}")
    with (
        SearchIndex(tmp_path / "flat.sqlite") as flat,
        SearchIndex(tmp_path / "grouped.sqlite") as grouped,
    ):

        def both() -> tuple[SyncStats, SyncStats]:
            walk = walk_notes(store)
            return (
                flat.sync(walk.files, loader(store)),
                grouped.sync(walk.folders, loader(store)),
            )

        def counts(stats: SyncStats) -> tuple[int, int, int, int]:
            return (stats.added, stats.updated, stats.removed, stats.unchanged)

        n = len(walk_notes(store).files)  # the fixture's notes and the five above
        a, b = both()
        assert counts(a) == counts(b) == (n, 0, 0, 0)
        write(store, "sub/b.md", "zqgroup edited and longer")
        (store / "sub" / "c.md").rename(store / "other" / "c.md")
        (store / "sub" / "deep" / "d.md").unlink()
        a, b = both()
        # the move is one removal and one addition; the deletion the second removal
        assert counts(a) == counts(b) == (1, 1, 2, n - 3)
        assert counts(both()[1]) == (0, 0, 0, n - 1)
        for ix in (flat, grouped):
            assert ix.verify() == []
            assert sorted(h.path for h in ix.search("zqgroup", limit=10).hits) == [
                "a.md",
                "other/c.md",
                "other/e.md",
                "sub/b.md",
            ]


def test_sync_refuses_a_folder_mapping_whose_keys_disagree_with_the_paths(tmp_path: Path):
    with SearchIndex(tmp_path / "i.sqlite") as ix:
        wrong = {"a": [FileStat("b/x.md", 1, 1)], "b": [FileStat("a/y.md", 1, 1)]}
        with pytest.raises(ValueError, match=r"'b/x\.md' is grouped under folder 'a'"):
            ix.sync(wrong, lambda path: IndexedDoc(path=path, title="T", body="zq"))
        assert ix.stats().documents == 0  # refused before anything was written


def test_an_overlong_query_is_cut_openly_not_silently(tmp_path: Path) -> None:
    """Only MAX_QUERY_TERMS distinct terms are searched; the result says so (never silent)."""
    from goat_core.filestore.search import MAX_QUERY_TERMS

    index = SearchIndex(tmp_path / "i.sqlite")
    words = [f"zw{i:03d}x" for i in range(MAX_QUERY_TERMS + 6)]
    doc = IndexedDoc(path="a.md", title="A", body=" ".join(words))
    index.update_one(doc, FileStat("a.md", 1, 1))
    long = index.search(" ".join(words))
    assert [h.path for h in long.hits] == ["a.md"]
    assert long.complete is False
    assert any(f"{MAX_QUERY_TERMS + 6} distinct search terms" in d for d in long.degraded)
    short = index.search(" ".join(words[:MAX_QUERY_TERMS]))
    assert short.complete is True and short.degraded == ()
    index.close()


# --------------------------------------------------------------------------- per-folder digests


@pytest.fixture
def folders_store(tmp_path: Path) -> Path:
    """20 folders of 5 notes each, 2 notes at the root, one nested folder: 107 notes."""
    root = tmp_path / "many"
    for f in range(20):
        for i in range(5):
            write(root, f"f{f:02d}/{i}.md", f"note {i} of folder {f} about lemons\n")
    write(root, "top.md", "a root note\n")
    write(root, "Top2.md", "another root note\n")
    for i in range(5):
        write(root, f"f03/deep/{i}.md", f"nested note {i}\n")
    return root


class _Compared:
    """Records what each sync compared row by row: the folders whose digest did not match
    (listed or gone) and how many stored rows were read for them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.changed: list[str] = []
        self.gone: list[str] = []
        self.rows = -1
        original = SearchIndex._plan

        def plan(ix: SearchIndex, digests):  # type: ignore[no-untyped-def]
            got = original(ix, digests)
            self.changed, self.gone, self.rows = (
                sorted(got.changed),
                sorted(got.gone),
                len(got.rows),
            )
            return got

        monkeypatch.setattr(SearchIndex, "_plan", plan)


def _counting(root: Path, loads: list[str]):  # type: ignore[no-untyped-def]
    base = loader(root)

    def load(rel: str) -> IndexedDoc | None:
        loads.append(rel)
        return base(rel)

    return load


def _stats(res) -> tuple[int, int, int, int, int, int]:  # type: ignore[no-untyped-def]
    return (res.scanned, res.added, res.updated, res.removed, res.unchanged, res.skipped)


def test_one_edit_compares_only_its_folder(
    tmp_path: Path, folders_store: Path, monkeypatch: pytest.MonkeyPatch
):
    seen = _Compared(monkeypatch)
    loads: list[str] = []
    load = _counting(folders_store, loads)
    with SearchIndex(tmp_path / "i.sqlite") as ix:
        assert _stats(ix.sync(scan(folders_store), load)) == (107, 107, 0, 0, 0, 0)
        assert len(seen.changed) == 22 and seen.rows == 0  # every folder new

        loads.clear()
        assert _stats(ix.sync(scan(folders_store), load)) == (107, 0, 0, 0, 107, 0)
        assert (seen.changed, seen.gone, seen.rows, loads) == ([], [], 0, [])

        p = write(folders_store, "f07/3.md", "note 3 of folder 7 now about limes\n")
        bump_mtime(p)
        progress: list[tuple[int, int]] = []
        res = ix.sync(scan(folders_store), load, progress=lambda d, t: progress.append((d, t)))
        assert _stats(res) == (107, 0, 1, 0, 106, 0)
        assert (seen.changed, seen.gone, seen.rows, loads) == (["f07"], [], 5, ["f07/3.md"])
        assert progress == [(0, 1), (1, 1)]
        assert paths(ix, "limes") == ["f07/3.md"]

        # a nested folder is a folder of its own: its parent is not compared
        p = write(folders_store, "f03/deep/2.md", "nested note now about plums\n")
        bump_mtime(p)
        assert _stats(ix.sync(scan(folders_store), load)) == (107, 0, 1, 0, 106, 0)
        assert (seen.changed, seen.rows) == (["f03/deep"], 5)

        # a root note: the root folder ("") holds 2
        p = write(folders_store, "top.md", "a root note about figs\n")
        bump_mtime(p)
        assert _stats(ix.sync(scan(folders_store), load)) == (107, 0, 1, 0, 106, 0)
        assert (seen.changed, seen.rows) == ([""], 2)

        loads.clear()
        assert _stats(ix.sync(scan(folders_store), load)) == (107, 0, 0, 0, 107, 0)
        assert (seen.changed, seen.rows, loads) == ([], 0, [])
        assert ix.verify() == []


def test_add_delete_rename_across_folders(
    tmp_path: Path, folders_store: Path, monkeypatch: pytest.MonkeyPatch
):
    seen = _Compared(monkeypatch)
    loads: list[str] = []
    load = _counting(folders_store, loads)
    with SearchIndex(tmp_path / "i.sqlite") as ix:
        ix.sync(scan(folders_store), load)

        loads.clear()
        write(folders_store, "brand new/x.md", "quinces in a new folder\n")
        assert _stats(ix.sync(scan(folders_store), load)) == (108, 1, 0, 0, 107, 0)
        assert (seen.changed, seen.rows, loads) == (["brand new"], 0, ["brand new/x.md"])

        (folders_store / "f11/4.md").unlink()
        assert _stats(ix.sync(scan(folders_store), load)) == (107, 0, 0, 1, 107, 0)
        assert (seen.changed, seen.gone, seen.rows) == (["f11"], [], 5)

        loads.clear()
        (folders_store / "f01/1.md").rename(folders_store / "f02/moved.md")
        (folders_store / "top.md").rename(folders_store / "f05/top.md")
        assert _stats(ix.sync(scan(folders_store), load)) == (107, 2, 0, 2, 105, 0)
        assert (seen.changed, seen.rows) == (["", "f01", "f02", "f05"], 2 + 5 + 5 + 5)
        assert sorted(loads) == ["f02/moved.md", "f05/top.md"]
        assert [h.path for h in ix.search("folder 1").hits if h.path.startswith("f0")]
        assert "f01/1.md" not in {d.path for d in ix.documents()}
        assert {"f02/moved.md", "f05/top.md"} <= {d.path for d in ix.documents()}

        # the last note of a folder renamed away: the folder is gone
        (folders_store / "brand new/x.md").rename(folders_store / "f09/x.md")
        assert _stats(ix.sync(scan(folders_store), load)) == (107, 1, 0, 1, 106, 0)
        assert (seen.changed, seen.gone) == (["f09"], ["brand new"])
        assert [h.path for h in ix.search("quinces").hits] == ["f09/x.md"]

        assert _stats(ix.sync(scan(folders_store), load)) == (107, 0, 0, 0, 107, 0)
        assert (seen.changed, seen.gone, seen.rows) == ([], [], 0)
        assert ix.verify() == [] and ix.stats().documents == 107


def test_a_whole_folder_deleted(
    tmp_path: Path, folders_store: Path, monkeypatch: pytest.MonkeyPatch
):
    import shutil

    seen = _Compared(monkeypatch)
    db = tmp_path / "i.sqlite"
    with SearchIndex(db) as ix:
        ix.sync(scan(folders_store), loader(folders_store))
        shutil.rmtree(folders_store / "f03")  # with its nested folder f03/deep
        progress: list[tuple[int, int]] = []
        res = ix.sync(
            scan(folders_store),
            loader(folders_store),
            progress=lambda d, t: progress.append((d, t)),
        )
        assert _stats(res) == (97, 0, 0, 10, 97, 0)
        assert (seen.changed, seen.gone, seen.rows) == ([], ["f03", "f03/deep"], 10)
        assert progress == [(0, 10), (10, 10)]
        assert not [h for h in ix.search("nested").hits]
        assert _stats(ix.sync(scan(folders_store), loader(folders_store))) == (97, 0, 0, 0, 97, 0)
        assert (seen.changed, seen.gone, seen.rows) == ([], [], 0)
    con = sqlite3.connect(db)
    listed = {f for (f,) in con.execute("SELECT folder FROM folders")}
    con.close()
    assert "f03" not in listed and "f03/deep" not in listed and len(listed) == 20


def test_update_one_and_remove_then_sync_agree(
    tmp_path: Path, folders_store: Path, monkeypatch: pytest.MonkeyPatch
):
    seen = _Compared(monkeypatch)
    loads: list[str] = []
    load = _counting(folders_store, loads)
    with SearchIndex(tmp_path / "i.sqlite") as ix:
        ix.sync(scan(folders_store), load)

        # the provider writes a note and indexes it itself: the next sync compares that
        # folder only, finds the row current and loads nothing
        p = write(folders_store, "f04/0.md", "written by the provider about dates\n")
        bump_mtime(p)
        st_ = p.stat()
        ix.update_one(load("f04/0.md"), FileStat("f04/0.md", st_.st_mtime_ns, st_.st_size))  # type: ignore[arg-type]
        loads.clear()
        assert _stats(ix.sync(scan(folders_store), load)) == (107, 0, 0, 0, 107, 0)
        assert (seen.changed, seen.rows, loads) == (["f04"], 5, [])
        assert _stats(ix.sync(scan(folders_store), load)) == (107, 0, 0, 0, 107, 0)
        assert (seen.changed, seen.rows) == ([], 0)

        # a new note in a new folder, indexed by update_one
        p = write(folders_store, "g/new.md", "apricots\n")
        st_ = p.stat()
        ix.update_one(load("g/new.md"), FileStat("g/new.md", st_.st_mtime_ns, st_.st_size))  # type: ignore[arg-type]
        loads.clear()
        assert _stats(ix.sync(scan(folders_store), load)) == (108, 0, 0, 0, 108, 0)
        assert (seen.changed, seen.rows, loads) == (["g"], 1, [])

        # update_one with a stat the file does not have: the sync corrects it
        ix.update_one(IndexedDoc("f06/1.md", "stale", "stale text"), FileStat("f06/1.md", 1, 1))
        assert _stats(ix.sync(scan(folders_store), load)) == (108, 0, 1, 0, 107, 0)
        assert (seen.changed, loads[-1]) == (["f06"], "f06/1.md")
        assert paths(ix, "stale") == []

        # the provider deletes a note and its row
        (folders_store / "f08/2.md").unlink()
        assert ix.remove("f08/2.md") is True
        assert _stats(ix.sync(scan(folders_store), load)) == (107, 0, 0, 0, 107, 0)
        assert (seen.changed, seen.gone, seen.rows) == (["f08"], [], 4)

        # remove() of a row whose file still exists: the sync adds it back
        assert ix.remove("f10/0.md") is True
        assert _stats(ix.sync(scan(folders_store), load)) == (107, 1, 0, 0, 106, 0)
        assert seen.changed == ["f10"]

        # the last note of a folder removed by the provider: the folder is dropped at sync
        (folders_store / "g/new.md").unlink()
        assert ix.remove("g/new.md") is True
        assert _stats(ix.sync(scan(folders_store), load)) == (106, 0, 0, 0, 106, 0)
        assert (seen.changed, seen.gone, seen.rows) == ([], ["g"], 0)
        assert _stats(ix.sync(scan(folders_store), load)) == (106, 0, 0, 0, 106, 0)
        assert (seen.changed, seen.gone, seen.rows) == ([], [], 0)
        assert ix.verify() == []


def test_a_skipped_file_keeps_its_folder_compared(
    tmp_path: Path, folders_store: Path, monkeypatch: pytest.MonkeyPatch
):
    seen = _Compared(monkeypatch)
    base = loader(folders_store)
    broken = {"f12/2.md"}

    def flaky(rel: str) -> IndexedDoc | None:
        return None if rel in broken else base(rel)

    with SearchIndex(tmp_path / "i.sqlite") as ix:
        assert _stats(ix.sync(scan(folders_store), flaky)) == (107, 106, 0, 0, 0, 1)
        assert _stats(ix.sync(scan(folders_store), flaky)) == (107, 0, 0, 0, 106, 1)
        assert (seen.changed, seen.rows) == (["f12"], 4)
        broken.clear()
        assert _stats(ix.sync(scan(folders_store), flaky)) == (107, 1, 0, 0, 106, 0)
        assert _stats(ix.sync(scan(folders_store), flaky)) == (107, 0, 0, 0, 107, 0)
        assert seen.changed == []


def test_another_order_or_a_cleared_digest_only_costs_a_compare(
    tmp_path: Path, folders_store: Path, monkeypatch: pytest.MonkeyPatch
):
    seen = _Compared(monkeypatch)
    loads: list[str] = []
    db = tmp_path / "i.sqlite"
    with SearchIndex(db) as ix:
        ix.sync(scan(folders_store), loader(folders_store))
        load = _counting(folders_store, loads)
        backwards = list(reversed(scan(folders_store)))
        assert _stats(ix.sync(backwards, load)) == (107, 0, 0, 0, 107, 0)
        assert (len(seen.changed), seen.rows, loads) == (22, 107, [])
        assert _stats(ix.sync(backwards, load)) == (107, 0, 0, 0, 107, 0)
        assert seen.changed == []
    # digests lost (e.g. edited by hand): every folder is compared, nothing is reloaded
    con = sqlite3.connect(db)
    con.execute("DELETE FROM folders")
    con.commit()
    con.close()
    (folders_store / "f15/0.md").unlink()
    with SearchIndex(db) as ix:
        load = _counting(folders_store, loads)
        assert _stats(ix.sync(scan(folders_store), load)) == (106, 0, 0, 1, 106, 0)
        assert (len(seen.changed), seen.rows, loads) == (22, 107, [])
        assert _stats(ix.sync(scan(folders_store), load)) == (106, 0, 0, 0, 106, 0)
        assert seen.changed == [] and ix.verify() == []


def test_a_row_outside_its_folder_makes_sync_compare_everything(
    tmp_path: Path, folders_store: Path, monkeypatch: pytest.MonkeyPatch
):
    """The row count must equal the rows of the unchanged folders plus those compared; a row
    filed under no listed folder (a damaged index) is then found and removed."""
    seen = _Compared(monkeypatch)
    db = tmp_path / "i.sqlite"
    with SearchIndex(db) as ix:
        ix.sync(scan(folders_store), loader(folders_store))
    con = sqlite3.connect(db)
    con.execute("UPDATE docs SET folder = 'elsewhere' WHERE path = 'f16/0.md'")
    con.commit()
    con.close()
    (folders_store / "f16/0.md").unlink()
    with SearchIndex(db) as ix:
        assert _stats(ix.sync(scan(folders_store), loader(folders_store))) == (
            106,
            0,
            0,
            1,
            106,
            0,
        )
        assert (len(seen.changed), seen.rows) == (22, 107)
        assert _stats(ix.sync(scan(folders_store), loader(folders_store))) == (
            106,
            0,
            0,
            0,
            106,
            0,
        )
        assert seen.changed == [] and ix.verify() == []


def test_many_changed_folders_are_read_in_one_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    seen = _Compared(monkeypatch)
    root = tmp_path / "wide"
    for f in range(80):
        write(root, f"w{f:02d}/n.md", f"wide note {f}\n")
        write(root, f"w{f:02d}/m.md", f"more {f}\n")
    with SearchIndex(tmp_path / "i.sqlite") as ix:
        ix.sync(scan(root), loader(root))
        for f in range(0, 80, 2):  # 40 folders lose a note, 40 get a new one
            (root / f"w{f:02d}/m.md").unlink()
            write(root, f"w{f + 1:02d}/k.md", f"kumquat {f}\n")
        assert _stats(ix.sync(scan(root), loader(root))) == (160, 40, 0, 40, 120, 0)
        assert (len(seen.changed), seen.rows) == (80, 160)
        assert _stats(ix.sync(scan(root), loader(root))) == (160, 0, 0, 0, 160, 0)
        assert seen.changed == [] and ix.stats().documents == 160 and ix.verify() == []


@pytest.mark.parametrize(
    ("body", "query", "snippet", "spans"),
    [
        ("Always ==sync== twice; sync again.", "sync", "Always ==sync== twice; sync again.",
         ((9, 13), (23, 27))),
        # a note's own "==" that marks nothing is text, never read as a mark
        ("if a == b then keep the log", "log", "if a == b then keep the log", ((24, 27),)),
        # the note's own control characters that cut snippets use internally become spaces
        ("tab\x02bed \x03 harbour\nlog", "harbour", "tab bed harbour log", ((8, 15),)),
        ("Café  au\tlait", "cafe", "Café au lait", ((0, 4),)),
    ],
)  # fmt: skip
def test_snippets_are_plain_text_with_the_spans_of_matched_words(
    tmp_path: Path, body: str, query: str, snippet: str, spans: tuple[tuple[int, int], ...]
) -> None:
    with SearchIndex(tmp_path / "ix.sqlite") as ix:
        ix.sync([FileStat("n.md", 1, len(body))], lambda p: IndexedDoc(p, "Note", body))
        hit = ix.search(query).hits[0]
        assert (hit.snippet, hit.spans) == (snippet, spans)
        assert ix.snippet(body, query) == (snippet, spans)


_NOTES_THEN_HARBOUR = "filler " * 40 + "note " * 80 + "harbour at the end"


@pytest.mark.parametrize(
    ("body", "query", "snippet", "spans"),
    [
        # folding to several characters (offset map), ligatures, stems in -i, inflections
        ("The Straße is long; STRASSE too.", "strasse", "The Straße is long; STRASSE too.",
         ((4, 10), (20, 27))),
        ("A ﬁle and a file and files, filed.", "file", "A ﬁle and a file and files, filed.",
         ((2, 5), (12, 16), (21, 26), (28, 33))),
        ("My library, two libraries, librarian, Library.", "library",
         "My library, two libraries, librarian, Library.", ((3, 10), (16, 25), (38, 45))),
        # a word is a run of letters and digits: never inside sync_me's neighbours or resync
        ("sync_me then sync, resync and synced; sync2 syncing", "sync",
         "sync_me then sync, resync and synced; sync2 syncing",
         ((0, 4), (13, 17), (30, 36), (44, 51))),
        ("v2 release notes 2023, 2023-01 and x2023", "2023",
         "v2 release notes 2023, 2023-01 and x2023", ((17, 21), (23, 27))),
        ("Ünïcödé naïve café; NAIVE cafe", "naive cafe", "Ünïcödé naïve café; NAIVE cafe",
         ((8, 13), (14, 18), (20, 25), (26, 30))),
        # only the first 64 matches of a word count: the 65th to 80th "note" stay unmarked
        (_NOTES_THEN_HARBOUR, "note harbour",
         "…" + "note " * 31 + "harbour…",
         (*((i, i + 4) for i in range(1, 75, 5)), (156, 163))),
    ],
)  # fmt: skip
def test_snippets_of_a_note_shown_often_are_cut_from_its_word_index_alike(
    tmp_path: Path, body: str, query: str, snippet: str, spans: tuple[tuple[int, int], ...]
) -> None:
    # the first searches scan the note's text for each term; the memo keeps the note they
    # showed, builds its word index the WORD_INDEX_SHOWS-th time (8), and from then on the
    # searches of the same index state look the words up instead
    with SearchIndex(tmp_path / "ix.sqlite") as ix:
        ix.sync([FileStat("n.md", 1, len(body))], lambda p: IndexedDoc(p, "Note", body))
        scanned = [ix.search(query).hits[0] for _ in range(7)]
        (kept,) = ix._memo.shown.values()
        assert kept[5].words is None and kept[5].shows == 7
        kept[5].found.clear()  # the needles' kept matches: found again, by the word index
        looked_up = [ix.search(query).hits[0] for _ in range(2)]
        assert kept[5].words is not None and kept[5].shows == 9
        assert {(h.snippet, h.spans) for h in scanned + looked_up} == {(snippet, spans)}
        assert ix.snippet(body, query) == (snippet, spans)


def test_a_shown_note_kept_for_snippets_is_dropped_when_the_index_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from goat_core.filestore.search import _ranking

    with SearchIndex(tmp_path / "ix.sqlite") as ix:
        ix.sync([FileStat("n.md", 1, 20)], lambda p: IndexedDoc(p, "Note", "old harbour text"))
        ix.search("harbour")
        ix.search("harbour")
        assert ix.search("harbour").hits[0].snippet == "old harbour text"
        ix.sync([FileStat("n.md", 2, 21)], lambda p: IndexedDoc(p, "Note", "new harbour words"))
        assert ix.search("harbour").hits[0].snippet == "new harbour words"
        # past MEMO_SHOWN_CHARS the kept notes are all dropped before one more is kept
        monkeypatch.setattr(_ranking, "MEMO_SHOWN_CHARS", 30)
        ix.sync(
            [FileStat("n.md", 2, 21), FileStat("m.md", 1, 22)],
            lambda p: (
                IndexedDoc(p, "M", "another harbour, longer")
                if p == "m.md"
                else IndexedDoc(p, "Note", "new harbour words")
            ),
        )
        ix.search("harbour", limit=1)
        assert len(ix._memo.shown) == 1
        assert sorted(h.snippet for h in ix.search("harbour").hits) == [
            "another harbour, longer",
            "new harbour words",
        ]
        assert len(ix._memo.shown) == 1


def test_proximity_counts_the_same_from_either_side() -> None:
    from goat_core.filestore.search._ranking import _near

    # fewer offsets of the first term: the offsets that may follow it are listed (body: 1)
    assert _near({4: [0, 10]}, {4: [1, 2, 3, 4, 11, 20]}) == 4.0
    # fewer of the second: each is checked against the first's (title weight 10)
    assert _near({0: [0, 1, 2, 10, 11]}, {0: [4, 13]}) == 20.0
    assert _near({0: [0, 1, 2, 10, 11], 4: [3]}, {0: [4, 13], 4: [5, 9]}) == 21.0
    assert _near({4: [1]}, {0: [2]}) == 0.0  # another column
    assert _near({0: [5, 6, 7]}, {0: [4]}) == 0.0


def test_term_impacts_kept_by_the_memo_score_as_computed_and_follow_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from goat_core.filestore.search import _ranking

    # each term's share of a note's score is kept per index state: a warm search scores to
    # the last bit as a cold one (another index object on the same file), and an edit that
    # changes a note's length changes its score at once
    notes = {
        "a.md": ("Harbour", "harbour boats in the harbour, boats at rest"),
        "b.md": ("Boats", "boats and more boats near a harbour wall"),
        "c.md": ("Other", "a quiet harbour"),
    }

    def load(p: str) -> IndexedDoc:
        title, body = notes[p]
        return IndexedDoc(p, title, body)

    stats = [FileStat(p, 1, len(notes[p][1])) for p in sorted(notes)]
    with SearchIndex(tmp_path / "ix.sqlite") as ix:
        ix.sync(stats, load)
        cold = [(h.path, h.score.hex()) for h in ix.search("harbour boats").hits]
        assert set(ix._memo.impacts) == {"harbour", "boat"}
        warm = [(h.path, h.score.hex()) for h in ix.search("harbour boats").hits]
        assert warm == cold and len(cold) == 3
        with SearchIndex(tmp_path / "ix.sqlite") as other:
            assert [(h.path, h.score.hex()) for h in other.search("harbour boats").hits] == cold
        notes["c.md"] = ("Other", "a quiet harbour " + "and nothing else " * 20)
        ix.sync([*stats[:2], FileStat("c.md", 2, len(notes["c.md"][1]))], load)
        moved = dict((h.path, h.score.hex()) for h in ix.search("harbour boats").hits)
        assert moved["c.md"] != dict(cold)["c.md"] and moved["a.md"] != dict(cold)["a.md"]
        with SearchIndex(tmp_path / "ix.sqlite") as other:
            fresh = {h.path: h.score.hex() for h in other.search("harbour boats").hits}
        assert moved == fresh
        # past MEMO_IMPACTS the kept impacts are dropped before a term's are kept
        monkeypatch.setattr(_ranking, "MEMO_IMPACTS", 4)
        assert {h.path: h.score.hex() for h in ix.search("harbour boats").hits} == fresh
        assert ix._memo.impact_count <= 4 and set(ix._memo.impacts) == {"boat"}


@pytest.mark.parametrize("depth", [50, 3])
def test_candidates_from_the_memo_rank_as_those_fts5_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, depth: int
) -> None:
    # when every term's notes are known from the memo, the notes holding them all are taken
    # from there (fewer than the re-scoring depth) and the totals counted there; the hits,
    # scores and totals are those of the FTS5 queries (the memo kept no positions)
    from goat_core.filestore.search import _ranking

    monkeypatch.setattr(_ranking, "RERANK_DEPTH", depth)
    words = ["harbour", "boats", "quiet", "wall", "rest", "tide"]
    bodies = {
        f"n{i}.md": " ".join(words[j] for j in range(len(words)) if (i >> j) & 1) or "empty"
        for i in range(40)
    }
    stats = [FileStat(p, 1, len(b)) for p, b in sorted(bodies.items())]

    def run() -> list[tuple[object, ...]]:
        with SearchIndex(tmp_path / f"ix{len(list(tmp_path.iterdir()))}.sqlite") as ix:
            ix.sync(stats, lambda p: IndexedDoc(p, p, bodies[p]))
            out: list[tuple[object, ...]] = []
            for q in ["harbour boats", "harbour", "quiet wall tide", "tide nowhere", "zzz"]:
                for limit in (2, 10):
                    got = ix.search(q, limit=limit)
                    out.append((q, limit, got.total, got.complete))
                    out += [(h.path, h.score.hex(), h.snippet) for h in got.hits]
            fts_only = ix._memo.postings == {}
            return [*out, fts_only]

    from_memo = run()
    monkeypatch.setattr(_ranking, "MEMO_INSTANCES", 0)  # nothing kept: FTS5 finds them
    from_fts = run()
    assert from_memo[-1] is False and from_fts[-1] is True
    assert from_memo[:-1] == from_fts[:-1]


@pytest.mark.parametrize(
    ("text", "term", "stem"),
    [
        ("sync_me then sync, resync and synced; sync2 syncing x_sync", "sync", "sync"),
        ("a note, notes, notebook; anote note_x 1note notes", "notes", "note"),
        ("library libraries librarian, Library", "library", "librari"),
        ("2023 x2023 2023-01 v2023b", "2023", None),
        ("note " * 80, "note", "note"),
    ],
)
def test_a_needle_scanned_by_its_pattern_matches_as_scanned_character_by_character(
    monkeypatch: pytest.MonkeyPatch, text: str, term: str, stem: str | None
) -> None:
    # the first COMPILE_AFTER times a needle is looked for its occurrences are found one by
    # one; from then on by its compiled pattern: the same matches (first 64 of each needle)
    from goat_core.filestore.search import _snippets

    monkeypatch.setattr(_snippets, "_PATTERNS", {})
    mark = _snippets._Mark(term, stem)
    folded = text.lower()
    first = _snippets._find_matches(folded, [mark])
    for _ in range(_snippets.COMPILE_AFTER - 1):
        assert _snippets._find_matches(folded, [mark]) == first
    assert _snippets._PATTERNS and all(isinstance(p, int) for p in _snippets._PATTERNS.values())
    second = _snippets._find_matches(folded, [mark])
    assert all(isinstance(p, re.Pattern) for p in _snippets._PATTERNS.values())
    assert first == second and first


def test_a_shown_note_keeps_each_needles_matches_for_the_next_snippet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a note shown again cuts its snippet from the matches its needles had (the same as
    # found afresh); past _NEEDLES_KEPT needles the kept matches are dropped
    from goat_core.filestore.search import _snippets

    body = "Boats rest in the harbour. " * 5 + "A quiet harbour wall shelters boats."
    with SearchIndex(tmp_path / "ix.sqlite") as ix:
        ix.sync([FileStat("n.md", 1, len(body))], lambda p: IndexedDoc(p, "Note", body))
        first = ix.search("quiet harbour boats").hits[0]
        (kept,) = ix._memo.shown.values()
        assert {needle for needle, _mark in kept[5].found} >= {"quiet", "harbour", "boat"}
        again = ix.search("quiet harbour boats").hits[0]
        assert (again.snippet, again.spans) == (first.snippet, first.spans)
        assert ix.snippet(body, "quiet harbour boats") == (first.snippet, first.spans)
        monkeypatch.setattr(_snippets, "_NEEDLES_KEPT", 2)
        kept[5].found.clear()
        third = ix.search("quiet harbour boats").hits[0]
        assert (third.snippet, third.spans) == (first.snippet, first.spans)
        assert len(kept[5].found) <= 2


def test_bm25_computed_from_the_memo_is_fts5s_to_the_last_bit(tmp_path: Path) -> None:
    # the notes matching any term are ordered by FTS5's bm25 computed from the memo's
    # positions and sizes: each score equals FTS5's own; where equal scores straddle a cut,
    # the choice is left to FTS5
    from goat_core.filestore.search import _ranking
    from goat_core.filestore.search._query import fts_query

    bodies = {
        f"n{i}.md": ("harbour " * (i % 4 + 1)) + ("boats " * (i % 3)) + "filler words " * i
        for i in range(30)
    }
    bodies["twin1.md"] = bodies["twin2.md"] = "tide tide harbour"
    stats = [FileStat(p, 1, len(b)) for p, b in sorted(bodies.items())]
    weights = ", ".join(str(x) for x in _ranking.COLUMN_WEIGHTS)
    with SearchIndex(tmp_path / "ix.sqlite") as ix:
        ix.sync(stats, lambda p: IndexedDoc(p, p.removesuffix(".md"), bodies[p]))
        ix.search("harbour boats tide")  # fills the memo
        with ix._read() as db:
            terms = ["harbour", "boats", "tide"]
            scorer = _ranking._Scorer(db, ix._query_terms(terms), ix._memo)
            order = scorer.bm25_order()
            assert order is not None and len(order) == len(bodies)
            fts5 = dict(
                db.execute(
                    f"SELECT rowid, bm25(fts, {weights}) FROM fts WHERE fts MATCH ?",
                    (fts_query(terms, "OR"),),
                ).fetchall()
            )
        assert {rid: -1.0 * score for score, rid in order} == fts5
        assert [s for s, _ in order] == sorted((s for s, _ in order), reverse=True)
        twins = [i for i, (_s, rid) in enumerate(order) if fts5[rid] == order[0][0] * -1.0]
        top = [rid for _s, rid in order]
        assert _ranking._best_others(order, 5, set(), 5) == top[:5] or order[4][0] == order[5][0]
        cut = twins[0] + 1  # one of two equal scores in, the other out: FTS5 decides
        assert len(twins) == 2 and _ranking._best_others(order, cut, set(), cut) is None
        assert _ranking._best_others(order, cut + 1, set(), cut + 1) == top[: cut + 1]
        assert _ranking._best_others(order, 40, {top[0]}, 40) == top[1:]


# -- the snippet memo's bound -----------------------------------------------------------------


def test_a_note_larger_than_the_memo_bound_is_never_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``MEMO_SHOWN_CHARS`` bounds the shown notes kept for snippets ("about 15 MB at most"),
    but a note longer than the bound alone was kept anyway (the memo is emptied, then the note
    is added): a 10-million-character note stayed in the memo, and its 8th recall built its
    word index: that recall took 3.7 s (0.3 to 12 ms before and after) and left 73 MB more
    resident in the process."""
    from goat_core.filestore.search import _ranking

    monkeypatch.setattr(_ranking, "MEMO_SHOWN_CHARS", 100)
    body = "harbour " + "filler words " * 50  # 658 characters, over the bound
    with SearchIndex(tmp_path / "ix.sqlite") as ix:
        ix.sync([FileStat("n.md", 1, len(body))], lambda p: IndexedDoc(p, "Note", body))
        for _ in range(_ranking.WORD_INDEX_SHOWS):
            assert ix.search("harbour").hits[0].snippet.startswith("harbour")
        assert ix._memo.shown_chars <= 100
        assert all(kept[5].words is None for kept in ix._memo.shown.values())


@pytest.mark.parametrize("limit", [5, 20, 21, 22])
def test_a_note_holding_some_terms_counts_whatever_the_limit(tmp_path: Path, limit: int) -> None:
    """20 notes hold both terms, one holds only one: 21 match at every limit, so a limit
    the both-terms notes fill is not complete (docs/design.md, Reads and truth)."""
    root = tmp_path / "k"
    for i in range(1, 21):
        write(root, f"k{i}.md", f"note {i} about kappa twenty\n")
    write(root, "k21.md", "only kappa here\n")
    ix = SearchIndex(tmp_path / "home" / "search.sqlite")
    try:
        ix.sync(scan(root), loader(root))
        res = ix.search("kappa twenty", limit=limit)
        assert res.total == 21
        assert res.complete is (limit >= 21)
        assert len(res.hits) == min(limit, 21)
    finally:
        ix.close()
