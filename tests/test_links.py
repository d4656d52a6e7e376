"""Obsidian link parsing and resolution (goat_core.filestore).

Expected values follow Obsidian's help vault (``Internal links.md``, ``Embed files.md``,
``Aliases.md``) and CommonMark for code spans and fences.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goat_core.contract import LinkResolution, PageSummary
from goat_core.errors import NotFound, PathError
from goat_core.filestore import (
    LinkIndex,
    LinkResolver,
    ParsedLink,
    build_link_map,
    connections,
    parse_links,
)


def one(text: str) -> ParsedLink:
    links = parse_links(text)
    assert len(links) == 1, links
    return links[0]


def pl(
    raw: str,
    target: str,
    *,
    kind: str = "wikilink",
    alias: str | None = None,
    heading: str | None = None,
    block: str | None = None,
    embed: bool = False,
    line: int = 1,
) -> ParsedLink:
    return ParsedLink(
        raw=raw,
        kind=kind,  # type: ignore[arg-type]
        target_text=target,
        alias=alias,
        heading=heading,
        block=block,
        embed=embed,
        line=line,
    )


# -- wikilink forms ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see [[Note]] here", pl("[[Note]]", "Note")),
        ("[[Note|alias]]", pl("[[Note|alias]]", "Note", alias="alias")),
        ("| [[Note\\|alias]] | x |", pl("[[Note\\|alias]]", "Note", alias="alias")),
        ("[[Note#Heading]]", pl("[[Note#Heading]]", "Note", heading="Heading")),
        ("[[Note#Heading#Sub]]", pl("[[Note#Heading#Sub]]", "Note", heading="Heading#Sub")),
        ("[[Note#^block-1]]", pl("[[Note#^block-1]]", "Note", block="block-1")),
        ("[[#Heading]]", pl("[[#Heading]]", "", heading="Heading")),
        ("[[#^abc]]", pl("[[#^abc]]", "", block="abc")),
        ("![[embed]]", pl("![[embed]]", "embed", embed=True)),
        ("![[image.png|100]]", pl("![[image.png|100]]", "image.png", alias="100", embed=True)),
        ("[[Folder/Note]]", pl("[[Folder/Note]]", "Folder/Note")),
        ("[[Note.md]]", pl("[[Note.md]]", "Note.md")),
        (
            "[[Note#Heading|Section name]]",
            pl("[[Note#Heading|Section name]]", "Note", heading="Heading", alias="Section name"),
        ),
        (
            "![[Engelbart.jpg#outline|100]]",
            pl(
                "![[Engelbart.jpg#outline|100]]",
                "Engelbart.jpg",
                heading="outline",
                alias="100",
                embed=True,
            ),
        ),
        ("[[Notes 100%]]", pl("[[Notes 100%]]", "Notes 100%")),  # wikilinks are not decoded
        ("[[[Note]]", pl("[[Note]]", "Note")),
        ("x![[Note]]", pl("![[Note]]", "Note", embed=True)),
    ],
)
def test_wikilink_forms(text: str, expected: ParsedLink) -> None:
    assert one(text) == expected


# -- Markdown link forms -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[t](Some%20Note.md)",
            pl("[t](Some%20Note.md)", "Some Note.md", kind="markdown", alias="t"),
        ),
        (
            "[t](<Some Note.md>)",
            pl("[t](<Some Note.md>)", "Some Note.md", kind="markdown", alias="t"),
        ),
        (
            "[t](Note.md#Some%20Heading)",
            pl(
                "[t](Note.md#Some%20Heading)",
                "Note.md",
                kind="markdown",
                alias="t",
                heading="Some Heading",
            ),
        ),
        (
            "![alt](img.png)",
            pl("![alt](img.png)", "img.png", kind="markdown", alias="alt", embed=True),
        ),
        ("[t](#Heading)", pl("[t](#Heading)", "", kind="markdown", alias="t", heading="Heading")),
        ("[t](#^blk)", pl("[t](#^blk)", "", kind="markdown", alias="t", block="blk")),
        (
            '[t](Folder/Note.md "a title")',
            pl('[t](Folder/Note.md "a title")', "Folder/Note.md", kind="markdown", alias="t"),
        ),
        ("[`x]`](Note.md)", pl("[`x]`](Note.md)", "Note.md", kind="markdown", alias="`x]`")),
        (
            "[a [b] c](N(1).md)",
            pl("[a [b] c](N(1).md)", "N(1).md", kind="markdown", alias="a [b] c"),
        ),
        (
            "[Three laws](Three%20laws%20of%20motion)",
            pl(
                "[Three laws](Three%20laws%20of%20motion)",
                "Three laws of motion",
                kind="markdown",
                alias="Three laws",
            ),
        ),
    ],
)
def test_markdown_link_forms(text: str, expected: ParsedLink) -> None:
    assert one(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "[x](https://obsidian.md)",
        "[x](http://example.com/a.md)",
        "[x](mailto:someone@example.com)",
        "[x](obsidian://open?vault=v)",
        "[x](//cdn.example.com/a.png)",
        "![250](https://publish-01.obsidian.md/access/x/Engelbart.jpg)",
        "[x]()",
        "[x](#)",
        "[[]]",
        "[[#]]",
        "[[|alias]]",
        "[text] (Note.md)",  # no space allowed between ] and (
        "[x](Some Note.md)",  # unencoded space ends the destination: not a link
        "\\[\\[Note\\]\\]",
        "\\[x](Note.md)",
        "[[Note\nOther]]",
    ],
)
def test_not_internal_links(text: str) -> None:
    assert parse_links(text) == []


# -- code, comments, frontmatter ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "`[[A]]`",
        "``[[A]] ` still code``",
        "a ``` [[A]] ``` b",
        "`multi\n[[A]] line`",
        "```\n[[A]]\n```",
        "~~~\n[[A]]\n~~~",
        "````md\n```\n[[A]]\n```\n````",
        "   ```\n[[A]]\n   ```",
        "```\n[[A]]",  # an unclosed fence runs to the end of the note
        "~~~\n[[A]]\n```\n[[B]]",  # ``` does not close ~~~
        "> ```md\n> [[A]]\n> ```",
        "- item\n  ```\n  [[A]]\n  ```",
        "para\n\n    [[A]] indented code",
        "%% [[A]] %%",
        "%%\n[[A]]\n\n[[B]]\n%%",
        "text %% unclosed [[A]]\n\n[[B]]",
        "<!-- [[A]] -->",
        "<!--\n[[A]]\n\n[[B]]\n-->",
        "---\nrelated: '[[A]]'\n---\n",
    ],
)
def test_nothing_in_code_comments_or_frontmatter(text: str) -> None:
    assert parse_links(text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("`[[A]]` [[B]]", ["[[B]]"]),
        ("``a`` [[B]] `c`", ["[[B]]"]),
        ("`unclosed [[B]]", ["[[B]]"]),  # a lone backtick is literal text
        ("```\ncode\n```\n[[B]]", ["[[B]]"]),
        ("````\n```\n````\n[[B]]", ["[[B]]"]),
        ("x %%c%% [[B]] %%d%%", ["[[B]]"]),
        ("%%\n[[A]]\n%% [[B]]", ["[[B]]"]),
        ("<!-- c --> [[B]]", ["[[B]]"]),
        ("| `%%Text%%` | [[B]] |", ["[[B]]"]),  # %% inside code is not a comment
        ("- item\n    - nested [[B]]", ["[[B]]"]),  # a nested list is not indented code
        ("- item\n\n    [[B]] continuation", ["[[B]]"]),
        ("para\n    [[B]] lazy continuation", ["[[B]]"]),
        ("> quote\n> ```\n> [[A]]\n> ```\n> [[B]]", ["[[B]]"]),
        ("> ```\n> [[A]]\n\n[[B]]", ["[[B]]"]),  # the blockquote ends, and its fence
        ("# [[B]] heading", ["[[B]]"]),
    ],
)
def test_links_next_to_code_and_comments(text: str, expected: list[str]) -> None:
    assert [link.raw for link in parse_links(text)] == expected


def test_frontmatter_is_skipped_and_line_numbers_kept() -> None:
    text = "---\ntitle: T\naliases: ['[[X]]']\n---\n\nBody [[A]]\n\n[[B|b]] and [t](C.md)\n"
    links = parse_links(text)
    assert [(link.raw, link.line) for link in links] == [
        ("[[A]]", 6),
        ("[[B|b]]", 8),
        ("[t](C.md)", 8),
    ]
    # The same body without frontmatter is parsed the same, with its own line numbers.
    assert [link.line for link in parse_links(text.split("---\n", 2)[2])] == [2, 4, 4]


def test_unclosed_frontmatter_is_body() -> None:
    assert [link.raw for link in parse_links("---\n[[A]]\n")] == ["[[A]]"]


def test_crlf_line_endings() -> None:
    links = parse_links("---\r\na: 1\r\n---\r\nx\r\n[[A]]\r\n```\r\n[[B]]\r\n```\r\n")
    assert [(link.raw, link.line) for link in links] == [("[[A]]", 5)]


# -- property tests ----------------------------------------------------------------------------

_alphabet = st.characters(codec="utf-8")
_link_text = st.text(
    alphabet=st.sampled_from(list("abcXYZ 123-_.é漢")), min_size=1, max_size=12
).filter(lambda s: s.strip())


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("[]()!#|^`~%<>-\\ \n\tab.mdh:/")), max_size=200))
def test_parse_never_raises_and_raw_is_at_its_line(text: str) -> None:
    for link in parse_links(text):
        lines = text.split("\n")
        at = sum(len(x) + 1 for x in lines[: link.line - 1])
        assert text.find(link.raw, at) >= at
        assert "\n" not in text[at : text.find(link.raw, at)]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=_alphabet, max_size=300))
def test_parse_never_raises_on_arbitrary_text(text: str) -> None:
    for link in parse_links(text):
        assert link.raw in text
        assert link.line >= 1


@settings(max_examples=300, deadline=None)
@given(
    before=st.lists(_link_text, max_size=3),
    inside=st.lists(_link_text, min_size=1, max_size=4),
    fence=st.sampled_from(["```", "~~~", "````", "~~~~~"]),
    indent=st.sampled_from(["", " ", "  ", "   "]),
    info=st.sampled_from(["", "md", "python"]),
    closed=st.booleans(),
)
def test_links_in_generated_fences_are_never_returned(
    before: list[str], inside: list[str], fence: str, indent: str, info: str, closed: bool
) -> None:
    body = [f"[[in {name}]] and [x](in%20{name.strip()}.md)" for name in inside]
    lines = [f"[[out {b}]]" for b in before] + [indent + fence + info, *body]
    if closed:
        lines.append(indent + fence)
    links = parse_links("\n".join(lines))
    assert all("in " not in link.raw and "in%20" not in link.raw for link in links)
    assert len(links) == len(before)


@settings(max_examples=300, deadline=None)
@given(
    name=_link_text,
    ticks=st.integers(min_value=1, max_value=4),
    alias=st.none() | _link_text,
    heading=st.none() | _link_text,
)
def test_links_in_generated_code_spans_are_never_returned(
    name: str, ticks: int, alias: str | None, heading: str | None
) -> None:
    inner = name + (f"#{heading}" if heading else "") + (f"|{alias}" if alias else "")
    fence = "`" * ticks
    text = f"a {fence} [[{inner}]] {fence} b [[{inner}]]"
    links = parse_links(text)
    assert [link.raw for link in links] == [f"[[{inner}]]"]
    assert links[0].target_text == name.strip()
    assert links[0].alias == (alias.strip() if alias else None)


# -- resolution --------------------------------------------------------------------------------

VAULT = [
    "Home.md",
    "Note.md",
    "Folder/Note.md",
    "Folder/Other.md",
    "Deep/er/Note.md",
    "Projects/Three laws of motion.md",
    "Attachments/Figure 1.png",
    "Canvas.canvas",
    "Café.md",
    "a/b/Dup.md",
    "zzzz/Dup.md",
    "b/Dup.md",
    "v1.0.md",
]


def resolve(raw: str, source: str = "Home.md", paths: list[str] = VAULT) -> tuple[str | None, str]:
    link = LinkResolver(paths).resolve(one(raw), source)
    return link.target, link.resolution.value


@pytest.mark.parametrize(
    ("raw", "source", "target", "resolution"),
    [
        ("[[Three laws of motion]]", "Home.md", "Projects/Three laws of motion.md", "name"),
        ("[[three LAWS of motion]]", "Home.md", "Projects/Three laws of motion.md", "name"),
        ("[[Three laws of motion.md]]", "Home.md", "Projects/Three laws of motion.md", "name"),
        (
            "[[Projects/Three laws of motion]]",
            "Home.md",
            "Projects/Three laws of motion.md",
            "exact",
        ),
        (
            "[t](Projects/Three%20laws%20of%20motion.md)",
            "Home.md",
            "Projects/Three laws of motion.md",
            "exact",
        ),
        (
            "[t](../Projects/Three%20laws%20of%20motion.md)",
            "Folder/Other.md",
            "Projects/Three laws of motion.md",
            "exact",
        ),
        ("[t](./Other.md)", "Folder/Note.md", "Folder/Other.md", "exact"),
        ("[t](Other.md)", "Folder/Note.md", "Folder/Other.md", "name"),
        ("[[/Folder/Other]]", "Home.md", "Folder/Other.md", "exact"),
        ("[[er/Note]]", "Home.md", "Deep/er/Note.md", "name"),  # partial path from the end
        ("[[Figure 1.png]]", "Home.md", "Attachments/Figure 1.png", "attachment"),
        ("![[Figure 1.png|100]]", "Home.md", "Attachments/Figure 1.png", "attachment"),
        ("![[Canvas.canvas]]", "Home.md", "Canvas.canvas", "attachment"),
        ("[[Figure 2.png]]", "Home.md", None, "missing"),
        ("[[Figure 1]]", "Home.md", None, "missing"),  # other formats need their extension
        ("[[Nowhere]]", "Home.md", None, "missing"),
        ("[[Nowhere/Note]]", "Home.md", None, "missing"),
        ("[t](../../Note.md)", "Home.md", None, "missing"),
        ("[[#Heading]]", "Folder/Note.md", "Folder/Note.md", "self"),
        ("[t](#Heading)", "Folder/Note.md", "Folder/Note.md", "self"),
        ("[[v1.0]]", "Home.md", "v1.0.md", "name"),
        # Unicode: NFD in the link, NFC on disk.
        ("[[Cafe\u0301]]", "Home.md", "Café.md", "name"),
        # Several files named Note.md: the vault-root file wins even over one beside the
        # source; otherwise the source's own folder; otherwise the shortest path.
        ("[[Note]]", "Home.md", "Note.md", "ambiguous"),
        ("[[Note]]", "Folder/Other.md", "Note.md", "ambiguous"),
        ("[[Dup]]", "zzzz/x.md", "zzzz/Dup.md", "ambiguous"),
        ("[[Dup]]", "Home.md", "b/Dup.md", "ambiguous"),
        ("[[Dup]]", "zzzz/deep/x.md", "b/Dup.md", "ambiguous"),  # ancestors count for nothing
        ("[[Folder/Note]]", "Deep/er/x.md", "Folder/Note.md", "exact"),
    ],
)
def test_resolution(raw: str, source: str, target: str | None, resolution: str) -> None:
    assert resolve(raw, source) == (target, resolution)


def test_shortest_path_string_not_fewest_segments() -> None:
    paths = ["a/b/Note.md", "zzzz/Note.md"]
    assert resolve("[[Note]]", "Home.md", paths) == ("a/b/Note.md", "ambiguous")


def test_ties_break_alphabetically() -> None:
    paths = ["b/N.md", "a/N.md"]
    assert resolve("[[N]]", "x/y.md", paths) == ("a/N.md", "ambiguous")


def test_case_only_twins_prefer_same_folder_then_order() -> None:
    paths = ["Note.md", "note.md"]
    target, resolution = resolve("[[NOTE]]", "Home.md", paths)
    assert resolution == "ambiguous"
    assert target == "Note.md"


def test_alias_only_name_is_missing() -> None:
    # Aliases.md: Obsidian writes [[Artificial Intelligence|AI]]; [[AI]] is not a file match.
    pages = [
        (
            PageSummary(id="Artificial Intelligence.md", title="Artificial Intelligence"),
            "---\naliases:\n  - AI\n---\nBody",
        ),
        (PageSummary(id="Home.md", title="Home"), "[[AI]] and [[Artificial Intelligence|AI]]"),
    ]
    links = LinkIndex(pages).links["Home.md"]
    assert [(x.target, x.resolution) for x in links] == [
        (None, LinkResolution.MISSING),
        ("Artificial Intelligence.md", LinkResolution.NAME),
    ]


def test_resolve_copies_fields() -> None:
    link = LinkResolver(VAULT).resolve(one("a\n![[Folder/Note#^b|x]]"), "Home.md")
    assert link.model_dump() == {
        "raw": "![[Folder/Note#^b|x]]",
        "kind": "wikilink",
        "target_text": "Folder/Note",
        "target": "Folder/Note.md",
        "alias": "x",
        "heading": None,
        "block": "b",
        "embed": True,
        "line": 2,
        "resolution": LinkResolution.EXACT,
    }


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        ("", "empty"),
        ("/etc/passwd.md", "absolute-path"),
        ("C:/x.md", "absolute-path"),
        ("a\x00.md", "separator"),
        ("../x.md", "parent-traversal"),
        ("a/./b.md", "parent-traversal"),
        ("a//b.md", "parent-traversal"),
    ],
)
def test_bad_store_paths_are_rejected(path: str, rule: str) -> None:
    with pytest.raises(PathError) as info:
        LinkResolver(["ok.md", path])
    assert info.value.rule == rule


def test_posix_file_names_are_store_paths() -> None:
    """``x:y.md``, ``a\\b.md`` and ``50%2e.md`` are ordinary POSIX file names."""
    resolver = LinkResolver(["x:y.md", "a\\b.md", "50%2e.md"])
    assert resolver.resolve_target("x:y", "a\\b.md") == ("x:y.md", LinkResolution.NAME)
    assert resolver.resolve_target("50%2e", "x:y.md") == ("50%2e.md", LinkResolution.NAME)


# -- map and connections -----------------------------------------------------------------------


def _pages() -> list[tuple[PageSummary, str]]:
    return [
        (PageSummary(id="A.md", title="A", path="A.md"), "[[B]] [[B#h|again]] [[#Top]] [[Gone]]"),
        (PageSummary(id="sub/B.md", title="B", path="sub/B.md"), "![[pic.png]] [back](../A.md)"),
        (PageSummary(id="C.md", title="C", path="C.md"), "`[[A]]` no links"),
    ]


def test_build_link_map() -> None:
    link_map = build_link_map(_pages(), ["A.md", "sub/B.md", "C.md", "img/pic.png"])
    assert [n.id for n in link_map.nodes] == ["A.md", "C.md", "sub/B.md"]
    assert [e.to_json() for e in link_map.edges] == [
        {"source": "A.md", "target": "sub/B.md", "raw": "[[B]]", "resolution": "name"},
        {"source": "A.md", "target": "sub/B.md", "raw": "[[B#h|again]]", "resolution": "name"},
        {"source": "A.md", "target": "A.md", "raw": "[[#Top]]", "resolution": "self"},
        {"source": "A.md", "target": None, "raw": "[[Gone]]", "resolution": "missing"},
        {
            "source": "sub/B.md",
            "target": "img/pic.png",
            "raw": "![[pic.png]]",
            "resolution": "attachment",
        },
        {"source": "sub/B.md", "target": "A.md", "raw": "[back](../A.md)", "resolution": "exact"},
    ]


def test_without_paths_attachments_are_missing() -> None:
    link_map = build_link_map(_pages())
    pic = next(e for e in link_map.edges if e.raw == "![[pic.png]]")
    assert (pic.target, pic.resolution) == (None, LinkResolution.MISSING)


def test_connections() -> None:
    index = LinkIndex(_pages(), ["img/pic.png"])
    a = connections(index, "A.md")
    assert [x.raw for x in a.outgoing] == ["[[B]]", "[[B#h|again]]", "[[#Top]]", "[[Gone]]"]
    assert [(e.source, e.raw) for e in a.backlinks] == [("sub/B.md", "[back](../A.md)")]
    b = connections(_pages(), "sub/B.md")
    assert [e.raw for e in b.backlinks] == ["[[B]]", "[[B#h|again]]"]
    assert connections(index, "C.md").to_json()["outgoing"] == []
    with pytest.raises(NotFound):
        connections(index, "Nope.md")


def test_a_colon_is_a_file_name_character_and_a_bad_name_is_reported_not_fatal() -> None:
    """docs/design.md, Browsing and links: ``x:y.md`` once broke the whole store's map."""
    pages = [
        (PageSummary(id="x:y.md", title="x:y", path="x:y.md"), "[[A]]"),
        (PageSummary(id="A.md", title="A", path="A.md"), "[[x:y]]"),
        (PageSummary(id="../out.md", title="out", path="../out.md"), "[[A]]"),
    ]
    link_map = build_link_map(pages, ["x:y.md", "A.md", "C:/abs.png"])
    assert [n.id for n in link_map.nodes] == ["A.md", "x:y.md"]
    assert [(e.source, e.target) for e in link_map.edges] == [
        ("A.md", "x:y.md"),
        ("x:y.md", "A.md"),
    ]
    assert len(link_map.degraded) == 2
    assert "'../out.md'" in link_map.degraded[0] and "'C:/abs.png'" in link_map.degraded[1]
