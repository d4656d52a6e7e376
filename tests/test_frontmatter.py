"""goat_core.filestore frontmatter: splitting, tolerant parsing and byte-preserving edits."""

from __future__ import annotations

import datetime as dt

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from goat_core.filestore import (
    FrontmatterError,
    UneditableFrontmatter,
    append_entry,
    format_scalar,
    jsonable,
    parse_note,
    render_note,
    set_keys,
)

OBSIDIAN_NOTE = (
    "---\n"
    "aliases:\n"
    "  - How to/Internal link\n"
    "cssclasses:\n"
    "  - soft-embed\n"
    "description: Learn how to link to notes, attachments, and other files.\n"
    "mobile: true\n"
    "permalink: links\n"
    "publish: 'yes'   # keep my comment\n"
    "---\n"
    "Obsidian supports [[Internal links]].\n"
)


def test_parse_obsidian_note() -> None:
    note = parse_note(OBSIDIAN_NOTE)
    assert note.has_frontmatter and note.error is None
    assert list(note.data) == [
        "aliases",
        "cssclasses",
        "description",
        "mobile",
        "permalink",
        "publish",
    ]
    assert note.body == "Obsidian supports [[Internal links]].\n"
    assert note.text[note.body_start :] == note.body


@pytest.mark.parametrize(
    "text",
    ["no frontmatter\n", "", "---\nunterminated: yes\n", "--- \nnot: a fence start", "x\n---\n"],
)
def test_no_frontmatter(text: str) -> None:
    note = parse_note(text)
    assert note.data == {} and note.body == text and note.error is None
    assert not note.has_frontmatter


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("---\ntitle: [unclosed\n---\nbody words\n", "does not parse"),
        ("---\na: b: c\n---\nbody words\n", "does not parse"),
        ("---\n- just\n- a list\n---\nbody words\n", "not a mapping"),
        ("---\n\tindent: tab\n---\nbody words\n", "does not parse"),
        # YAML timestamps naming no real date or time: PyYAML builds them and Python refuses
        ("---\ncreated: 2023-02-30\n---\nbody words\n", "day is out of range for month"),
        ("---\ndue: 2023-13-01\n---\nbody words\n", "month must be in 1..12"),
        ("---\nat: 2023-01-01T25:00:00\n---\nbody words\n", "hour must be in 0..23"),
        ("---\ny: 0000-01-01\n---\nbody words\n", "year 0 is out of range"),
        # malformed explicit tags: PyYAML's constructors fail with other exceptions
        ("---\nx: !!timestamp 'hello'\n---\nbody words\n", "does not fit its explicit tag"),
        ("---\nx: !!bool 'maybe'\n---\nbody words\n", "does not fit its explicit tag"),
        ("---\n? !!bool maybe\n: v\n---\nbody words\n", "does not fit its explicit tag"),
        ("---\nx: !!int ''\n---\nbody words\n", "does not fit its explicit tag"),
        ("---\nx: !!float ''\n---\nbody words\n", "does not fit its explicit tag"),
        # a decimal integer past Python's 4,300-digit limit for conversions
        ("---\nn: " + "7" * 5000 + "\n---\nbody words\n", "an integer too long to read"),
        # integers no later step could print (Python's 4,300-digit limit is for decimal)
        ("---\nn: 0x" + "f" * 5000 + "\n---\nbody words\n", "an integer of over 10000 bits"),
        ("---\n? 0b" + "1" * 20000 + "\n: a\n---\nbody words\n", "an integer of over"),
        # nesting that every later walk would have to recurse through
        ("---\nx: " + "[" * 64 + "]" * 64 + "\n---\nbody words\n", "over 64 levels deep"),
        ("---\nx: " + "[" * 100 + "]" * 100 + "\n---\nbody words\n", "over 64 levels deep"),
        (
            "---\nd: &a "
            + "[" * 40
            + "]" * 40
            + "\ne: "
            + "[" * 40
            + "*a"
            + "]" * 40
            + "\n---\nb\n",
            "over 64 levels deep",
        ),
    ],
)
def test_unparsable_frontmatter_is_all_body(text: str, message: str) -> None:
    note = parse_note(text)
    assert note.data == {} and note.body == text and not note.has_frontmatter
    assert note.error is not None and message in note.error
    with pytest.raises(FrontmatterError, match="not edited"):
        set_keys(text, {"updated": "x"})


UNEDITABLE = [
    # an anchor on the line replaced: the alias after it would point nowhere
    "---\nupdated: &u 2020-01-01\nlast_seen: *u\n---\nb\n",
    # a flow mapping as the whole block: a line appended after it is not YAML
    "---\n{a: 1, b: 2023-03-27}\n---\nb\n",
    # a line separator inside a quoted value: the line-by-line view cuts the string
    '---\ntitle: "abc\u2028updated: x"\n---\nb\n',
    # the key written quoted or as a complex key: a new line would duplicate it
    '---\n"updated": 2020-01-01\n---\nb\n',
    "---\n? updated\n: 2020-01-01\n---\nb\n",
    # the key twice, or a later form of it that would still win over the edited line
    "---\nupdated: 1\nupdated: 2\n---\nb\n",
    '---\nupdated: 1\n"updated": 2\n---\nb\n',
    "---\nupdated: 1\n? updated\n: 2\n---\nb\n",
]


@pytest.mark.parametrize("text", UNEDITABLE)
def test_frontmatter_that_cannot_be_edited_line_by_line_is_refused(text: str) -> None:
    assert parse_note(text).error is None  # it parses: the note is fine, the edit is not
    with pytest.raises(UneditableFrontmatter, match="note not edited"):
        set_keys(text, {"updated": "2026-12-02T00:00:00Z"})


def test_nesting_depth_boundary_is_the_same_through_an_alias() -> None:
    """The top mapping and 63 lists parse; one list more does not, written out or reached
    through an alias (an anchored list of 32 levels used inside 32 more)."""

    def nested(n: int) -> str:
        return "[" * n + "]" * n

    assert parse_note(f"---\nx: {nested(63)}\n---\nb\n").error is None
    assert "over 64 levels" in (parse_note(f"---\nx: {nested(64)}\n---\nb\n").error or "")
    inner = "[" * 31 + "*a" + "]" * 31
    assert parse_note(f"---\nd: &a {nested(32)}\ne: {inner}\n---\nb\n").error is None
    deeper = "[" * 32 + "*a" + "]" * 32
    got = parse_note(f"---\nd: &a {nested(32)}\ne: {deeper}\n---\nb\n").error or ""
    assert "over 64 levels" in got


def test_crlf_bom_and_empty_frontmatter() -> None:
    note = parse_note("\ufeff---\r\na: 1\r\n---\r\nbody\r\n")
    assert note.data == {"a": 1} and note.body == "body\r\n" and note.newline == "\r\n"
    assert parse_note("---\n---\nbody").data == {}
    assert parse_note("---\n---\nbody").body == "body"


def test_set_keys_replaces_only_the_key_line() -> None:
    out = set_keys(OBSIDIAN_NOTE, {"permalink": "other", "updated": "2026-11-29T22:00:00Z"})
    assert out == OBSIDIAN_NOTE.replace("permalink: links\n", "permalink: other\n").replace(
        "# keep my comment\n", "# keep my comment\nupdated: '2026-11-29T22:00:00Z'\n"
    )


def test_set_keys_replaces_a_block_value() -> None:
    out = set_keys(OBSIDIAN_NOTE, {"aliases": ["A", "B c"]})
    assert out.startswith("---\naliases: [A, B c]\ncssclasses:\n")
    assert parse_note(out).data["aliases"] == ["A", "B c"]
    assert out.replace("aliases: [A, B c]\n", "") == OBSIDIAN_NOTE.replace(
        "aliases:\n  - How to/Internal link\n", ""
    )


def test_set_keys_on_note_without_frontmatter_prepends() -> None:
    text = "# Just text\n\nno properties"
    out = set_keys(text, {"updated": dt.datetime(2026, 11, 29, 22, tzinfo=dt.UTC)})
    assert out == "---\nupdated: 2026-11-29T22:00:00Z\n---\n" + text
    assert parse_note(out).body == text


def test_set_keys_refuses_odd_keys_and_duplicates() -> None:
    with pytest.raises(FrontmatterError, match="plain name"):
        set_keys(OBSIDIAN_NOTE, {"a b": 1})
    dup = "---\na: 1\nb: 2\n---\n"
    # PyYAML accepts duplicate keys (last wins); we refuse to guess which line to edit.
    with pytest.raises(FrontmatterError, match="more than once"):
        set_keys(dup.replace("b: 2", "a: 2"), {"a": 3})


def test_format_scalar_round_trips() -> None:
    for value in [
        "plain",
        "a: b",
        "yes",
        "2026-11-29",
        "#x",
        "- y",
        "",
        "ünï",
        3,
        True,
        None,
        ["a", "b c"],
        "it's",
    ]:
        line = format_scalar(value)
        assert "\n" not in line
        assert yaml.safe_load(f"k: {line}")["k"] == value
    stamp = dt.datetime(2026, 11, 29, 22, 0, tzinfo=dt.UTC)
    assert format_scalar(stamp) == "2026-11-29T22:00:00Z"
    assert yaml.safe_load(f"k: {format_scalar(stamp)}")["k"] == stamp


def test_append_entry_keeps_every_byte() -> None:
    out = append_entry(OBSIDIAN_NOTE, "2026-11-29 22:00 UTC", "new text")
    assert out == OBSIDIAN_NOTE + "\n## 2026-11-29 22:00 UTC\n\nnew text\n"
    no_nl = "body without newline"
    assert append_entry(no_nl, "h", "t") == no_nl + "\n\n## h\n\nt\n"
    assert append_entry("a\r\nb\r\n", "h", "x\ny") == "a\r\nb\r\n\r\n## h\r\n\r\nx\r\ny\r\n"


def test_render_note_and_jsonable() -> None:
    text = render_note({"id": "n1", "title": "A: b", "tags": []}, "body\n")
    note = parse_note(text)
    assert note.data == {"id": "n1", "title": "A: b", "tags": []} and note.body == "body\n"
    value = {"d": dt.date(2020, 1, 2), 1: {dt.datetime(2020, 1, 2, 3, 4)}, "b": b"x"}
    assert jsonable(value) == {"d": "2020-01-02", "1": ["2020-01-02T03:04:00"], "b": "x"}


def test_non_finite_floats_become_their_yaml_spelling() -> None:
    """JSON has no number for them: ``json.dumps`` would print ``-Infinity``, not JSON."""
    import json

    note = parse_note("---\na: .inf\nb: -.inf\nc: .nan\nd: [1.5, -.INF]\n---\nb\n")
    out = jsonable(note.data)
    assert out == {"a": ".inf", "b": "-.inf", "c": ".nan", "d": [1.5, "-.inf"]}
    assert jsonable({float("inf"): 1, float("nan"): 2}) == {".inf": 1, ".nan": 2}  # keys too
    json.loads(json.dumps(out, allow_nan=False))  # strict JSON


# -- property tests ---------------------------------------------------------------------------

keys = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
scalars = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=20),
    st.integers(),
    st.booleans(),
    st.none(),
)
values = st.one_of(scalars, st.lists(st.text(max_size=8), max_size=3))
styles = st.sampled_from(["plain", "double", "single", "block", "comment"])
bodies = st.text(max_size=200)


def _line(key: str, value: object, style: str) -> str:
    if style == "block" and isinstance(value, list) and value:
        return key + ":\n" + "".join(f"  - {format_scalar(v)}\n" for v in value)
    if style == "double" and isinstance(value, str):
        dumped = yaml.safe_dump(value, default_style='"', width=2**31 - 1).rstrip("\n")
        if "\n" not in dumped:
            return f"{key}: {dumped}\n"
    if style == "comment":
        return f"{key}: {format_scalar(value)}  # note\n# a comment line\n"
    return f"{key}: {format_scalar(value)}\n"


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(keys, st.tuples(values, styles), max_size=6),
    bodies,
    st.sampled_from(["updated", "title", "kind"]),
    scalars,
    st.sampled_from(["\n", "\r\n"]),
)
def test_set_keys_preserves_everything_else(
    fields: dict[str, tuple[object, str]], body: str, key: str, new: object, nl: str
) -> None:
    yaml_text = "".join(_line(k, v, s) for k, (v, s) in fields.items())
    text = ("---\n" + yaml_text + "---\n").replace("\n", nl) + body
    before = parse_note(text)
    if before.error is not None:  # a generated value YAML reads differently: not our case
        return
    out = set_keys(text, {key: new})
    after = parse_note(out)
    assert after.error is None
    assert after.data[key] == new
    assert after.body == before.body == body
    expected = {k: v for k, v in before.data.items()}
    expected[key] = new
    assert after.data == expected
    assert list(after.data)[: len(before.data)] == list(before.data) or key in before.data
    # every byte outside the edited key's lines is unchanged
    old_lines = [ln for ln in text.splitlines(keepends=True)]
    new_lines = [ln for ln in out.splitlines(keepends=True)]
    removed = [ln for ln in old_lines if ln not in new_lines]
    added = [ln for ln in new_lines if ln not in old_lines]
    assert all(ln.startswith((key + ":", "  - ")) for ln in removed)
    assert all(ln.startswith(key + ":") for ln in added) and len(added) <= 1


@settings(max_examples=100, deadline=None)
@given(bodies, st.text(min_size=1, max_size=50))
def test_append_entry_is_a_pure_suffix(text: str, entry: str) -> None:
    out = append_entry(text, "2026-11-29 22:00 UTC", entry)
    assert out.startswith(text)
    assert "## 2026-11-29 22:00 UTC" in out[len(text) :]


@pytest.mark.parametrize("value", ["\x85", "a\u2028b", "x\u2029", "line\rbreak", "two\nlines"])
def test_yaml_line_break_characters_round_trip(value: str) -> None:
    """YAML reads NEL, LS and PS as line breaks (YAML 1.1 section 5.4): a value holding one is
    written double-quoted and escaped, so it reads back exactly (found by hypothesis)."""
    from goat_core.filestore import parse_note, set_keys

    text = set_keys("---\ntitle: T\n---\nbody\n", {"updated": value})
    assert parse_note(text).data["updated"] == value
    assert parse_note(text).body == "body\n"


def test_yaml_alias_bomb_is_reported_not_expanded() -> None:
    """Nine lines of anchors and aliases stand for 10**9 values: reported as not parsing
    (the count stops past the limit), so rendering the note never walks them; ordinary
    aliases still load."""
    lines = ["---", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    parsed = parse_note("\n".join([*lines, "---", "body", ""]))
    assert parsed.error is not None and "YAML aliases expand to over" in parsed.error
    assert parsed.data == {} and parsed.body.endswith("body\n")
    small = parse_note("---\nx: &a [1, 2]\ny: *a\n---\nok\n")
    assert small.error is None and small.data == {"x": [1, 2], "y": [1, 2]}


def test_drop_keys_cuts_only_the_lines_of_the_keys() -> None:
    from goat_core.filestore import drop_keys

    text = (
        "---\r\n# c\r\nid: x\r\nlist:\r\n  - a\r\n\r\n  - b\r\nkeep: 2024-01-05\r\n---\r\nbody\r\n"
    )
    assert drop_keys(text, ("id", "list")) == "---\r\n# c\r\nkeep: 2024-01-05\r\n---\r\nbody\r\n"
    assert drop_keys(text, ("absent",)) == text
    assert drop_keys("no frontmatter\n", ("id",)) == "no frontmatter\n"
    assert drop_keys("---\nid: x\n---\nb", ("id",)) == "---\n---\nb"


@pytest.mark.parametrize(
    "text",
    ["---\nid: [unclosed\n---\nb\n", "---\nid: x\nid: y\n---\nb\n"],
)
def test_drop_keys_never_edits_what_it_cannot_cut_safely(text: str) -> None:
    from goat_core.filestore import FrontmatterError, drop_keys

    with pytest.raises(FrontmatterError):
        drop_keys(text, ("id",))
