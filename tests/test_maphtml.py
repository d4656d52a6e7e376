"""The self-contained HTML map (goat_core.cli._maphtml), checked statically and in headless
Chromium.

The Chromium tests need ``chromium`` (Debian's package, installed by CI), ``chromium-browser``
or ``google-chrome`` on PATH and are skipped with that reason otherwise.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import unicodedata
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from goat_core.cli._maphtml import (
    ATTACHMENTS_SHOWN_UP_TO,
    map_data,
    missing_target,
    render_map_html,
)
from goat_core.contract import LinkMap, PageSummary
from goat_core.filestore import LinkIndex, build_link_map

EVIL = "</script><script>alert(1)</script><!--"


def _pages() -> list[tuple[PageSummary, str]]:
    return [
        (PageSummary(id="Home.md", title="Home"), "[[Alpha]] [[Beta|b]] [[Nowhere]] ![[pic.png]]"),
        (PageSummary(id="notes/Alpha.md", title="Alpha"), "[[Home]] [[nowhere]] [[#Top]]"),
        (PageSummary(id="notes/Beta.md", title=EVIL), "[[Home#Intro]] [x](../Gone.md)"),
        (PageSummary(id="Lonely.md", title="Lonely"), "no links"),
    ]


def _index() -> LinkIndex:
    return LinkIndex(_pages(), ["img/pic.png"])


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data


def _parse(html: str) -> _Collect:
    c = _Collect()
    c.feed(html)
    return c


def test_page_is_self_contained() -> None:
    index = _index()
    html = render_map_html(index.link_map(), title="My vault")
    parsed = _parse(html)
    for tag, attrs in parsed.tags:
        for name in ("src", "href", "action", "data", "poster"):
            assert attrs.get(name) is None, (tag, attrs)  # nothing loaded from anywhere
        if tag == "link":
            raise AssertionError(f"external resource {attrs}")
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", html)
    assert "http://" not in html and "https://" not in html
    assert "@import" not in html and "url(" not in html
    assert not re.search(r"\bfetch\(|XMLHttpRequest|WebSocket|EventSource|importScripts", html)
    assert "default-src 'none'" in html
    assert [a.get("type") for t, a in parsed.tags if t == "script"] == ["application/json", None]


def test_data_cannot_break_out_of_its_script_element() -> None:
    index = _index()
    html = render_map_html(index.link_map(), title=EVIL)
    parsed = _parse(html)
    # Exactly the two script elements of the page: the data and the code.
    assert sum(1 for t, _ in parsed.tags if t == "script") == 2
    data = json.loads(parsed.scripts[0])
    assert data["title"] == EVIL
    assert EVIL in [n["title"] for n in data["nodes"]]
    assert "<script>alert" not in html
    assert html.count("</script>") == 2
    assert "<title>&lt;/script&gt;&lt;script&gt;alert(1)" in html


def test_map_data_shape() -> None:
    index = _index()
    data = map_data(
        index.link_map(), title="t", connections={"Home.md": index.connections("Home.md")}
    )
    titles = [n["title"] for n in data["nodes"]]
    assert titles[:4] == ["Home", "Lonely", "Alpha", EVIL]
    # Missing targets are extra nodes, one per distinct name (case-folded), marked missing.
    missing = [(n["title"], n["kind"]) for n in data["nodes"] if n["missing"]]
    assert missing == [("Nowhere", "note"), ("../Gone", "note")]
    # Pages carry their top-level folder, the largest folder first.
    assert data["groups"] == ["", "notes"]
    assert [n["group"] for n in data["nodes"][:4]] == [0, 0, 1, 1]
    assert data["attachments_shown_up_to"] == ATTACHMENTS_SHOWN_UP_TO
    edges = {e[2]: e for e in data["edges"]}
    assert edges["[[Nowhere]]"][1] == edges["[[nowhere]]"][1] == titles.index("Nowhere")
    assert edges["![[pic.png]]"][1:] == [-1, "![[pic.png]]", "attachment", "img/pic.png"]
    assert edges["[[#Top]]"][3] == "self"
    assert [x["line"] for x in data["links"]["Home.md"]] == [1, 1, 1, 1]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Example", ("note", "Example", "example")),
        ("Example.md", ("note", "Example", "example")),
        ("EXAMPLE.MD", ("note", "EXAMPLE", "example")),
        ("lucide-list.svg", ("attachment", "lucide-list.svg", "lucide-list.svg")),
        ("Vault picker.png", ("attachment", "Vault picker.png", "vault picker.png")),
        ("media/Demo (1968).ogg", ("attachment", "media/Demo (1968).ogg", "media/demo (1968).ogg")),
        ("Release 1.2", ("note", "Release 1.2", "release 1.2")),
        ("Mr. Smith", ("note", "Mr. Smith", "mr. smith")),
        ("v2.0/Notes", ("note", "v2.0/Notes", "v2.0/notes")),
        (".md", ("note", ".md", ".md")),
        ("Cafe\u0301.md", ("note", "Cafe\u0301", "caf\u00e9")),
    ],
)
def test_missing_target_kind_label_and_key(text: str, expected: tuple[str, str, str]) -> None:
    assert missing_target(text) == expected


@given(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30))
def test_missing_target_key_ignores_md_suffix(name: str) -> None:
    kind, label, key = missing_target(name)
    assert kind in {"note", "attachment"}
    assert key == unicodedata.normalize("NFC", label).casefold()
    if kind == "attachment":
        assert label == name.strip()
    elif label:
        # [[X]] and [[X.md]] (any case of the suffix) are one missing note.
        assert missing_target(label + ".md") == ("note", label, key)
        assert missing_target(label + ".MD")[2] == key


def test_missing_notes_and_attachments_are_separate_nodes() -> None:
    pages = [
        (
            PageSummary(id="a.md", title="a"),
            "[[Example]] [[example.md]] ![[icon.svg]] [[Icon.SVG]]",
        ),
        (PageSummary(id="b.md", title="b"), "[x](Example.md) ![[shot.png]] [[Release 1.2]]"),
    ]
    data = map_data(build_link_map(pages), title="t")
    missing = [(n["title"], n["kind"]) for n in data["nodes"] if n["missing"]]
    assert missing == [
        ("Example", "note"),
        ("icon.svg", "attachment"),
        ("shot.png", "attachment"),
        ("Release 1.2", "note"),
    ]


def test_empty_map_renders() -> None:
    html = render_map_html(LinkMap(), title="Empty")
    assert json.loads(_parse(html).scripts[0])["nodes"] == []


# -- headless Chromium -------------------------------------------------------------------------


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no chromium, chromium-browser or google-chrome on PATH (CI installs chromium)")


def _run_chromium(tmp_path: Path, page: Path, *extra: str, fragment: str = "") -> str:
    profile = tmp_path / "profile"
    cmd = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=5000",
        "--window-size=1200,800",
        *extra,
        page.as_uri() + fragment,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _body_attrs(dom: str) -> dict[str, str]:
    m = re.search(r"<body([^>]*)>", dom)
    assert m, dom[:500]
    return dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(1)))


def test_chromium_renders_nodes_and_views(tmp_path: Path) -> None:
    index = _index()
    conns = {pid: index.connections(pid) for pid in index.pages}
    page = tmp_path / "map.html"
    page.write_text(render_map_html(index.link_map(), title=EVIL, connections=conns), "utf-8")
    dom = _run_chromium(tmp_path, page, "--dump-dom")
    attrs = _body_attrs(dom)
    assert attrs["data-rendered-nodes"] == "6"  # 4 pages + 2 missing targets
    assert attrs["data-layout"] == "done"
    assert "alert(1)" not in re.sub(r"<script.*?</script>", "", dom, flags=re.S).replace(
        "&lt;/script&gt;&lt;script&gt;alert(1)", ""
    )
    assert len(re.findall(r'<li class="page"', dom)) == 4
    assert "4 pages · 9 links · 2 missing notes · 0 missing attachments" in dom
    assert attrs["data-rendered-missing-notes"] == "2"
    assert attrs["data-rendered-missing-attachments"] == "0"
    shot = tmp_path / "map.png"
    _run_chromium(tmp_path, page, f"--screenshot={shot}")
    assert shot.stat().st_size > 1000

    # Deep link to the Connections view of a page: outgoing links and backlinks listed, the
    # page's Pages entry carries the neutral selected state.
    dom = _run_chromium(tmp_path, page, "--dump-dom", fragment="#connections/Home.md")
    section = dom.split('id="view-connections"', 1)[1]
    assert "Outgoing links (4)" in section and "Backlinks (2)" in section
    assert "Nowhere" in section and "img/pic.png" in section and "missing" in section
    assert re.search(r'<li class="page selected"[^>]*aria-selected="true"', dom)
    assert _body_attrs(dom)["data-selected"] == "Home.md"


def test_selected_state_is_neutral_grey() -> None:
    css = render_map_html(LinkMap(), title="t").split("<style>", 1)[1].split("</style>", 1)[0]
    colours = dict(re.findall(r"--(selected-bg|selected-line):\s*(#[0-9a-f]{6})", css))
    for value in colours.values():
        r, g, b = (int(value[i : i + 2], 16) for i in (1, 3, 5))
        assert r == g == b, f"selection colour {value} is not grey"
    assert set(colours) == {"selected-bg", "selected-line"}


def _missing_pages(attachments: int) -> LinkMap:
    body = "[[Example]] [[Example.md]] [[example]] " + " ".join(
        f"![[icon-{i}.svg]]" for i in range(attachments)
    )
    return build_link_map(
        [
            (PageSummary(id="Guide/Start.md", title="Start"), body + " [[Next]]"),
            (PageSummary(id="Guide/Next.md", title="Next"), "[[Start]] [[Later.md]]"),
        ]
    )


@pytest.mark.parametrize(
    ("attachments", "fragment", "drawn"),
    [
        (3, "#map", 3),  # few: drawn by default
        (ATTACHMENTS_SHOWN_UP_TO + 5, "#map", 0),  # many: hidden by default
        (ATTACHMENTS_SHOWN_UP_TO + 5, "#map?attachments=1", ATTACHMENTS_SHOWN_UP_TO + 5),
        (3, "#map?attachments=0", 0),
    ],
)
def test_chromium_counts_missing_notes_and_attachments(
    tmp_path: Path, attachments: int, fragment: str, drawn: int
) -> None:
    page = tmp_path / "map.html"
    page.write_text(render_map_html(_missing_pages(attachments), title="m"), "utf-8")
    dom = _run_chromium(tmp_path, page, "--dump-dom", fragment=fragment)
    attrs = _body_attrs(dom)
    # Example, Example.md and example are one missing note; Later.md is the other.
    assert attrs["data-rendered-missing-notes"] == "2"
    assert attrs["data-rendered-missing-attachments"] == str(drawn)
    assert attrs["data-rendered-nodes"] == str(2 + 2 + drawn)
    assert attrs["data-layout"] == "done"
    assert f"2 pages · {3 + attachments + 3} links · 2 missing notes · {attachments} missing" in dom
    box = re.search(r'<input type="checkbox" id="show-attachments"[^>]*>', dom)
    assert box  # the toggle exists; its checked state is a property, not in the DOM dump


def test_map_palette_is_calm_and_selection_stays_neutral() -> None:
    js = render_map_html(LinkMap(), title="t").split("<script>", 1)[1]
    palette = re.search(r"var PALETTE = \[(.*?)\];", js, re.S)
    assert palette
    colours = re.findall(r'"(#[0-9a-f]{6})"', palette.group(1))
    assert len(colours) >= 8 and len(set(colours)) == len(colours)
    for value in colours:
        r, g, b = (int(value[i : i + 2], 16) / 255 for i in (1, 3, 5))
        hi, lo = max(r, g, b), min(r, g, b)
        light = (hi + lo) / 2
        saturation = (hi - lo) / (1 - abs(2 * light - 1))
        assert saturation <= 0.55 and 0.4 <= light <= 0.7, value
    # The selection ring and halo are drawn in greys (r == g == b), never a palette colour.
    selection = js.split("neutral selection", 1)[1].split("drawLabels", 1)[0]
    for r, g, b in re.findall(r"rgba\((\d+),(\d+),(\d+)", selection):
        assert r == g == b
    for value in re.findall(r'"(#[0-9a-f]{6})"', selection):
        assert value[1:3] == value[3:5] == value[5:7]


def test_chromium_renders_10k_nodes_without_hanging(tmp_path: Path) -> None:
    n = 10_000
    pages = []
    for i in range(n):
        links = f"[[p{(i * 7 + 1) % n}]] [[p{(i * 13 + 5) % n}]]"
        if i % 50 == 0:
            links += f" [[missing{i // 50}]]"
        pages.append((PageSummary(id=f"d{i % 20}/p{i}.md", title=f"p{i}"), links))
    link_map = build_link_map(pages)
    page = tmp_path / "big.html"
    page.write_text(render_map_html(link_map, title="big"), "utf-8")
    _chromium()
    started = time.monotonic()
    dom = _run_chromium(tmp_path, page, "--dump-dom")
    elapsed = time.monotonic() - started
    attrs = _body_attrs(dom)
    assert attrs["data-rendered-nodes"] == str(n + 200)
    assert len(re.findall(r'<li class="page"', dom)) == n
    print(
        f"10k-node map: {len(link_map.edges)} edges, chromium {elapsed:.1f}s, "
        f"layout {attrs['data-layout']}"
    )
    assert elapsed < 120
