"""goat_core.filestore: note reading, page resolution, listing cursors, titles, index helpers."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from goat_core import filestore
from goat_core.contract import Tone
from goat_core.errors import Ambiguous, BadInput, NotFound, PathError, TooLarge

# -- listing cursors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cursor",
    [
        "@@@",  # no base64 alphabet at all: lenient decoding gave "" and restarted the listing
        "!!!",
        "",  # an empty cursor is not one a listing hands out
        "QR",  # non-canonical: "QQ" is how "A" encodes
        "QQ==",  # padded: issued cursors carry no padding
        "Q",  # a length base64 cannot have
        "+/+/",  # the standard alphabet, not the URL-safe one
        "YS9i Lm1k",  # a space inside an issued cursor
        "é",  # not ASCII
    ],
)
def test_decode_cursor_refuses_foreign_cursors(cursor: str) -> None:
    with pytest.raises(BadInput, match=r"invalid page cursor .*: not one this store issued"):
        filestore.decode_cursor(cursor)


def test_a_cursor_after_a_name_that_is_not_utf8_round_trips() -> None:
    # a listing paged at bad\xffname.md (os.fsdecode gives a lone surrogate) continues there
    path = os.fsdecode(b"bad\xffname.md")
    cursor = filestore.encode_cursor(path)
    assert cursor == "YmFk_25hbWUubWQ"
    assert filestore.decode_cursor(cursor) == path


def test_decode_cursor_names_the_issuer() -> None:
    with pytest.raises(BadInput, match="not one this wiki issued"):
        filestore.decode_cursor("@@@", issuer="wiki")


@pytest.mark.parametrize("path", ["a.md", "Folder/Note.md", "日本/メモ.md", "ä/ü ß.md"])
def test_cursor_round_trip(path: str) -> None:
    cursor = filestore.encode_cursor(path)
    assert "=" not in cursor
    assert filestore.decode_cursor(cursor) == path


@given(st.text(min_size=1))
def test_cursor_round_trip_property(path: str) -> None:
    assert filestore.decode_cursor(filestore.encode_cursor(path)) == path


@given(st.text(alphabet="ABCQRYabz019-_+/=@! ", max_size=12))
def test_an_accepted_cursor_is_the_one_issued(cursor: str) -> None:
    """Strict decoding: whatever is accepted re-encodes to exactly itself."""
    try:
        path = filestore.decode_cursor(cursor)
    except BadInput:
        return
    assert filestore.encode_cursor(path) == cursor


def test_page_window_walks_a_listing_once() -> None:
    ordered = sorted([f"n{i:02}.md" for i in range(7)], key=filestore.page_order)
    seen: list[str] = []
    cursor: str | None = None
    rounds = 0
    while True:
        chunk, more, cursor = filestore.page_window(ordered, 3, cursor)
        seen += chunk
        rounds += 1
        if not more:
            assert cursor is None
            break
        assert cursor is not None
    assert seen == ordered
    assert rounds == 3


def test_page_window_continues_after_a_removed_path() -> None:
    cursor = filestore.encode_cursor("b.md")  # issued before b.md was removed
    chunk, more, nxt = filestore.page_window(["a.md", "C.md", "d.md"], 10, cursor)
    assert chunk == ["C.md", "d.md"]  # case-insensitive order: C after b
    assert (more, nxt) == (False, None)


def test_page_window_refuses_a_bad_cursor_instead_of_restarting() -> None:
    with pytest.raises(BadInput, match="not one this wiki issued"):
        filestore.page_window(["a.md", "b.md"], 1, "!!!", issuer="wiki")


def test_page_order_is_case_insensitive_with_exact_ties() -> None:
    assert sorted(["b.md", "B.md", "a.md"], key=filestore.page_order) == ["a.md", "B.md", "b.md"]


# -- resolution -----------------------------------------------------------------------------

REFS: list[filestore.PageRef] = [
    ("Alpha.md", "Alpha", None),
    ("people/Bob.md", "Robert", "bob-1"),
    ("a/Same.md", "Same", None),
    ("b/Same.md", "Same", None),
    ("x/One.md", "First", "dup"),
    ("y/Two.md", "Second", "dup"),
]


def resolve(ref: str, root: Path, **kw: bool) -> str:
    return filestore.resolve_page_ref(ref, REFS, root=root, where="Global memory", **kw)


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("Alpha.md", "Alpha.md"),  # its path
        ("bob-1", "people/Bob.md"),  # its frontmatter id
        ("people/Bob", "people/Bob.md"),  # path without .md
        ("PEOPLE/bob.MD", "people/Bob.md"),  # path ignoring case
        ("robert", "people/Bob.md"),  # title ignoring case
        ("bob", "people/Bob.md"),  # file name ignoring case
        ("alpha.md", "Alpha.md"),
        ("  Alpha  ", "Alpha.md"),
    ],
)
def test_resolve_page_ref_order(tmp_path: Path, ref: str, expected: str) -> None:
    assert resolve(ref, tmp_path) == expected


def test_resolve_page_ref_compares_nfc(tmp_path: Path) -> None:
    refs = [("Cafe\u0301.md", "Cafe\u0301", None)]
    got = filestore.resolve_page_ref("café", refs, root=tmp_path, where="here")
    assert got == "Cafe\u0301.md"


def test_resolve_page_ref_lists_candidates_in_page_order(tmp_path: Path) -> None:
    with pytest.raises(Ambiguous) as info:
        resolve("same", tmp_path)
    assert info.value.candidates == ["a/Same.md", "b/Same.md"]
    assert str(info.value) == "2 pages match 'same': a/Same.md, b/Same.md; use a path"


def test_resolve_page_ref_shared_ids(tmp_path: Path) -> None:
    with pytest.raises(Ambiguous) as info:
        resolve("dup", tmp_path)
    assert info.value.candidates == ["x/One.md", "y/Two.md"]
    with pytest.raises(NotFound):  # titles and names are tried instead
        resolve("dup", tmp_path, shared_ids_ambiguous=False)


def test_resolve_page_ref_not_found_names_the_store(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="no page matches 'Gamma' in Global memory"):
        resolve("Gamma", tmp_path)


@pytest.mark.parametrize("ref", ["", "   "])
def test_resolve_page_ref_empty(tmp_path: Path, ref: str) -> None:
    with pytest.raises(BadInput, match="page reference is empty"):
        resolve(ref, tmp_path)


def test_resolve_page_ref_unsafe_path_names_its_rule(tmp_path: Path) -> None:
    with pytest.raises(PathError) as info:
        resolve("../outside.md", tmp_path)
    assert info.value.rule == "parent-traversal"


ALIASES = {
    "Alpha.md": ["First letter", "A"],
    "people/Bob.md": ["Bobby"],
    "a/Same.md": ["Twin", "Second"],  # "Second" is another page's title
    "b/Same.md": ["twin"],
}


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("First letter", "Alpha.md"),  # an alias of a list
        ("first LETTER", "Alpha.md"),  # ignoring case, as titles
        ("bobby", "people/Bob.md"),
        ("Second", "y/Two.md"),  # a title wins over another page's alias
        ("Robert", "people/Bob.md"),
    ],
)
def test_resolve_page_ref_by_frontmatter_aliases(tmp_path: Path, ref: str, expected: str) -> None:
    got = filestore.resolve_page_ref(
        ref, REFS, root=tmp_path, where="Global memory", aliases=lambda: ALIASES
    )
    assert got == expected


def test_resolve_page_ref_alias_shared_by_two_pages_is_ambiguous(tmp_path: Path) -> None:
    with pytest.raises(Ambiguous) as info:
        filestore.resolve_page_ref(
            "TWIN", REFS, root=tmp_path, where="Global memory", aliases=lambda: ALIASES
        )
    assert info.value.candidates == ["a/Same.md", "b/Same.md"]
    assert str(info.value) == "2 pages match 'TWIN': a/Same.md, b/Same.md; use a path"


def test_resolve_page_ref_reads_aliases_only_when_no_title_matches(tmp_path: Path) -> None:
    def aliases() -> dict[str, list[str]]:
        raise AssertionError("aliases were read for a reference a title resolves")

    got = filestore.resolve_page_ref("alpha", REFS, root=tmp_path, where="here", aliases=aliases)
    assert got == "Alpha.md"


def test_the_index_keeps_aliases_as_a_list_or_a_single_string(tmp_path: Path) -> None:
    from goat_core.filestore.search import FileStat, SearchIndex

    notes = {
        "Zebra.md": "---\ntitle: Zebra notes\naliases: [Stripes, Equus]\n---\nbody Z\n",
        "Horse.md": "---\naliases: Equus\n---\nbody H\n",
        "Plain.md": "no frontmatter\n",
    }
    for name, text in notes.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    with SearchIndex(tmp_path / "index" / "search.sqlite") as index:

        def load(rel: str) -> filestore.IndexedDoc | None:
            note = filestore.read_note(tmp_path, rel)
            return None if note is None else filestore.indexed_doc(note)

        index.sync([FileStat(n, 1, len(t)) for n, t in notes.items()], load)
        assert index.aliases() == {"Zebra.md": ["Stripes", "Equus"], "Horse.md": ["Equus"]}


# -- reading --------------------------------------------------------------------------------


def test_read_note_title_frontmatter_and_etag(tmp_path: Path) -> None:
    (tmp_path / "f").mkdir()
    (tmp_path / "f/n.md").write_text("---\ntitle: Hello\nid: 7\n---\nbody\n", "utf-8")
    note = filestore.read_note(tmp_path, "f/n.md")
    assert note is not None
    assert (note.title, note.body, note.fm_id, note.error) == ("Hello", "body\n", "7", None)
    assert note.text.startswith("---\ntitle: Hello")
    assert note.size == os.stat(tmp_path / "f/n.md").st_size and note.mtime_ns > 0
    assert note.summary().updated.tzinfo is UTC


@pytest.mark.parametrize("front", ["", "---\ntitle: '  '\n---\n", "---\ntitle: [a]\n---\n"])
def test_read_note_title_falls_back_to_the_file_name(tmp_path: Path, front: str) -> None:
    (tmp_path / "Cafe\u0301.md").write_text(front + "x\n", "utf-8")
    note = filestore.read_note(tmp_path, "Cafe\u0301.md")
    assert note is not None and note.title == "Café"


def test_read_note_invalid_utf8_names_the_noun(tmp_path: Path) -> None:
    (tmp_path / "bad.md").write_bytes(b"caf\xe9\n")
    note = filestore.read_note(tmp_path, "bad.md", noun="page")
    assert note is not None and note.error == "page is not valid UTF-8"
    (tmp_path / "ok.md").write_text("a literal \ufffd\n", "utf-8")
    ok = filestore.read_note(tmp_path, "ok.md")
    assert ok is not None and ok.error is None


def test_read_note_missing_is_none(tmp_path: Path) -> None:
    assert filestore.read_note(tmp_path, "gone.md") is None


def test_summary_reads_naive_updated_as_utc(tmp_path: Path) -> None:
    (tmp_path / "n.md").write_text("---\nupdated: 2026-01-02 03:04:05\n---\nx\n", "utf-8")
    note = filestore.read_note(tmp_path, "n.md")
    assert note is not None
    assert note.summary().updated == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_refresh_notes_rereads_only_changed_files(tmp_path: Path) -> None:
    from goat_core.filestore import walk_notes

    for name in ("a.md", "b.md"):
        (tmp_path / name).write_text(f"# {name}\n", "utf-8")
    cache: dict[str, filestore.StoredNote] = {}
    reads: list[str] = []

    def load(rel: str, mtime_ns: int, size: int) -> filestore.StoredNote | None:
        reads.append(rel)
        return filestore.read_note(tmp_path, rel, mtime_ns, size)

    first = filestore.refresh_notes(walk_notes(tmp_path).files, cache, load)
    assert [n.path for n in first] == ["a.md", "b.md"] and reads == ["a.md", "b.md"]
    (tmp_path / "b.md").write_text("# b, longer now\n", "utf-8")
    (tmp_path / "a.md").unlink()
    reads.clear()
    second = filestore.refresh_notes(walk_notes(tmp_path).files, cache, load)
    assert reads == ["b.md"] and [n.path for n in second] == ["b.md"]
    assert set(cache) == {"b.md"}


def test_to_page_keeps_named_provenance_and_the_error(tmp_path: Path) -> None:
    (tmp_path / "n.md").write_text("---\nsource: cli\nkind: remember\nx: 1\n---\nb\n", "utf-8")
    note = filestore.read_note(tmp_path, "n.md")
    assert note is not None
    note.error = "frontmatter does not parse"
    page = filestore.to_page(note, ("source", "created", "kind"))
    assert page.provenance == {
        "source": "cli",
        "kind": "remember",
        "error": "frontmatter does not parse",
    }
    assert (page.id, page.body, page.etag) == ("n.md", "b\n", note.etag)


def test_page_summaries_reports_unreadable(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("a\n", "utf-8")
    items, unread = filestore.page_summaries(
        ["a.md", "gone.md"], lambda rel: filestore.read_note(tmp_path, rel)
    )
    assert [i.path for i in items] == ["a.md"]
    assert unread == ["gone.md: skipped, not readable"]


# -- index helpers --------------------------------------------------------------------------


def test_indexed_doc_description_and_extra(tmp_path: Path) -> None:
    text = "---\ntitle: T\nsummary: S\ndescription: D\nowner: ann\nflag: true\ntag: x\n---\nb\n"
    (tmp_path / "n.md").write_text(text, "utf-8")
    note = filestore.read_note(tmp_path, "n.md")
    assert note is not None
    plain = filestore.indexed_doc(note)
    assert plain.description == "D"
    assert plain.extra == "S ann x"  # summary is extra here; booleans never are
    wiki = filestore.indexed_doc(note, description_keys=("summary", "description"))
    assert wiki.description == "S"
    assert wiki.extra == "D ann x"
    assert wiki.tags == ("x",) and wiki.ident is None


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (datetime(2023, 3, 27, 13, 10), "27 March 2023"),
        (datetime(2023, 12, 31, 23, 30, tzinfo=UTC), "31 December 2023"),
        (datetime(2022, 7, 9).date(), "9 July 2022"),
        ("2023-03-27T13:10:00Z", "27 March 2023"),
        ("  2024-01-05", "5 January 2024"),
        ("2023-02-30", ""),  # no such day
        ("2023-03-271", ""),  # not a date followed by something else
        ("27 March 2023", ""),
        ("\u0662\u0660\u0662\u0663-\u0660\u0663-\u0662\u0667", ""),  # Arabic-Indic digits
        ("\uff12\uff10\uff12\uff13-\uff10\uff13-\uff12\uff17", ""),  # full-width digits
        ("", ""),
        (2023, ""),
        (True, ""),
        (None, ""),
    ],
)
def test_date_words(value: object, words: str) -> None:
    assert filestore.date_words(value) == words


def test_indexed_doc_dates_in_words(tmp_path: Path) -> None:
    text = (
        "---\ntitle: T\ncreated: 2023-03-27T13:10:00\nupdated: 2024-05-01T00:00:00Z\n"
        "date: 2022-07-09\ndue: '2024-01-05'\nat: '2024-02-01T10:00'\nowner: ann\n---\nb\n"
    )
    (tmp_path / "n.md").write_text(text, "utf-8")
    note = filestore.read_note(tmp_path, "n.md")
    assert note is not None
    extra = filestore.indexed_doc(note).extra
    # created and every other date in words; a date string also as written; updated never
    assert extra == (
        "27 March 2023 2023-03-27 9 July 2022 2022-07-09 2024-01-05 5 January 2024"
        " 2024-02-01T10:00 1 February 2024 2024-02-01 ann"
    )
    (tmp_path / "m.md").write_text("---\ncreated: 2023-02-30\n---\nb\n", "utf-8")
    odd = filestore.read_note(tmp_path, "m.md")
    assert odd is not None and filestore.indexed_doc(odd).extra == ""


def test_an_index_of_schema_4_is_rebuilt_with_dates_in_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index written before dates were indexed in words (schema 4) is rebuilt on open,
    and the rebuilt index finds a note by its creation month."""
    import sqlite3

    from goat_core.filestore import _pages
    from goat_core.filestore.search import FileStat, SearchIndex

    (tmp_path / "Spring.md").write_text("---\ncreated: 2023-03-27T13:10:00\n---\nzqwalk\n")
    stat = FileStat("Spring.md", 1, 40)
    db = tmp_path / "idx" / "index.sqlite"

    def loader() -> object:
        return filestore.index_loader(
            lambda rel: filestore.read_note(tmp_path, rel), {}, filestore.indexed_doc
        )

    with monkeypatch.context() as m:
        m.setattr(_pages, "calendar_date", lambda value: None)  # what schema 4 indexed
        with filestore.open_search_index(db) as index:
            index.sync([stat], loader())
            assert [h.path for h in index.search("zqwalk").hits] == ["Spring.md"]
            assert not index.search("March 2023").hits
    con = sqlite3.connect(db)
    con.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    with SearchIndex(db) as index:
        assert index.rebuilt
        index.sync([stat], loader())
        assert [h.path for h in index.search("March 2023").hits] == ["Spring.md"]


def test_index_loader_and_index_note(tmp_path: Path) -> None:
    (tmp_path / "n.md").write_text("---\ntitle: Old\n---\nhello world\n", "utf-8")
    old = filestore.read_note(tmp_path, "n.md")
    assert old is not None
    cache = {"n.md": old}
    (tmp_path / "n.md").write_text("---\ntitle: New\n---\nhello there\n", "utf-8")
    loader = filestore.index_loader(
        lambda rel: filestore.read_note(tmp_path, rel), cache, filestore.indexed_doc
    )
    doc = loader("n.md")
    assert doc is not None and doc.title == "New" and cache["n.md"].title == "New"
    assert loader("gone.md") is None and "gone.md" not in cache
    index = filestore.open_search_index(tmp_path / "idx" / "sub" / "index.sqlite")
    try:
        assert (tmp_path / "idx" / "sub").is_dir()
        filestore.index_note(index, cache["n.md"], doc)
        hit = index.search("there", limit=5).hits[0]
        assert (hit.path, hit.title) == ("n.md", "New")
        item = filestore.recall_item(hit, cache["n.md"], source="cli")
        assert (item.id, item.text, item.source) == ("n.md", "hello there", "cli")
        assert filestore.recall_item(hit, None, source=None).text is None
    finally:
        index.close()


def test_degraded_reasons_order() -> None:
    got = filestore.degraded_reasons([("a.md", "bad yaml")], [("l.md", "symlink leaves the store")])
    assert got == ["a.md: bad yaml; read as body", "l.md: skipped, symlink leaves the store"]


# -- input checks, titles, health -----------------------------------------------------------


def test_checked_text() -> None:
    assert filestore.checked_text("a\r\nb", 10) == "a\nb"
    with pytest.raises(TooLarge, match="this wiki accepts at most 3; nothing was stored"):
        filestore.checked_text("abcd", 3, noun="wiki")
    with pytest.raises(BadInput, match="the text is empty"):
        filestore.checked_text(" \n\t", 10)


@pytest.mark.parametrize(
    ("query", "limit", "message"),
    [
        ("x", 0, "limit must be between 1 and 100, got 0"),
        ("x", 101, "limit must be between 1 and 100, got 101"),
        ("  ", 10, "query is empty"),
        ("", 1, "query is empty"),
    ],
)
def test_check_recall_args(query: str, limit: int, message: str) -> None:
    with pytest.raises(BadInput) as info:
        filestore.check_recall_args(query, limit)
    assert str(info.value) == message


@pytest.mark.parametrize("limit", [0, -1, 1001])
def test_check_list_limit(limit: int) -> None:
    with pytest.raises(BadInput, match=f"limit must be between 1 and 1000, got {limit}"):
        filestore.check_list_limit(limit)


@pytest.mark.parametrize(
    ("text", "markup", "title"),
    [
        ("# Hello *world*", filestore.MARKUP_CHARS, "Hello world"),
        ("one two three four five six seven eight nine", filestore.MARKUP_CHARS, None),
        ("a|b", filestore.MARKUP_CHARS, "a|b"),
        ("a|b", filestore.MARKUP_CHARS + "|", "a b"),
        ("## ** `", filestore.MARKUP_CHARS, ""),
        ("x" * 70, filestore.MARKUP_CHARS, "x" * 60),
        ("Cafe\u0301 [[link]]", filestore.MARKUP_CHARS, "Café link"),
    ],
)
def test_generated_title(text: str, markup: str, title: str | None) -> None:
    got = filestore.generated_title(text, markup=markup)
    if title is None:  # the eight-word cap
        assert got == "one two three four five six seven eight"
    else:
        assert got == title


def test_generated_title_stops_at_whole_words_within_the_cap() -> None:
    got = filestore.generated_title(" ".join(["word" * 3] * 8))
    assert len(got) <= filestore.TITLE_CHARS and got.endswith("wordwordword")
    assert got.count(" ") == 3  # four 12-letter words fit in 60 characters, five do not


def test_folder_health(tmp_path: Path) -> None:
    good = filestore.folder_health(tmp_path, noun="wiki", healthy="fine")
    assert (good.ok, good.tone, good.reason) == (True, Tone.QUIET, "fine")
    missing = filestore.folder_health(tmp_path / "no", noun="wiki", healthy="fine")
    assert (missing.ok, missing.tone) == (False, Tone.WARN)
    assert missing.reason == f"wiki folder {tmp_path / 'no'} is missing"


def test_exact_paths_never_fall_through_to_a_same_named_page(tmp_path: Path) -> None:
    """Repeating ``forget Plan.md`` must not remove ``b/Plan.md`` (a destructive reference
    written as a path matches only that path)."""
    refs = [("b/Plan.md", "Plan", None)]
    assert filestore.resolve_page_ref("Plan.md", refs, root=tmp_path, where="w") == "b/Plan.md"
    for ref in ("Plan.md", "a/Plan", "a/Plan.md"):
        with pytest.raises(NotFound):
            filestore.resolve_page_ref(ref, refs, root=tmp_path, where="w", exact_paths=True)
    assert filestore.resolve_page_ref("Plan", refs, root=tmp_path, where="w", exact_paths=True) == (
        "b/Plan.md"
    )
