"""A self-contained HTML page for a store's link map (``goat map --html FILE``).

:func:`render_map_html` returns one HTML document: all JavaScript and CSS inline, no network
(a Content-Security-Policy of ``default-src 'none'`` forbids every fetch, font, frame and
remote image), the map's data embedded as JSON in ``<script type="application/json">``.
The page has three views, switched by a tab bar: **Pages** (a filterable list, one
``li.page`` per page), **Map** (an interactive force-directed graph drawn on a canvas: click
a node to select it, drag nodes, drag the background to pan, wheel to zoom) and
**Connections** (the selected page's outgoing links and backlinks). The selected item is
marked with a neutral grey outline and background, never an accent colour.

Map: node area grows with the number of distinct linked nodes; pages are coloured by
top-level folder from a muted palette (the largest folders first, the rest grey). Labels are
drawn for the best-linked nodes that fit without overlapping, for the hovered or selected
node and its neighbours, and for more nodes as the user zooms in. Link targets that exist
nowhere are split as Obsidian's graph view splits unresolved links from attachments:
a **missing note** (no extension or ``.md``: a hollow dashed circle) and a **missing
attachment** (any other extension, ``.png``, ``.svg``: a small dotted square). Missing
attachments are hidden behind a legend toggle when there are more than
:data:`ATTACHMENTS_SHOWN_UP_TO`; the fragment ``#map?attachments=1`` (or ``=0``) sets it.
Resolved attachments are listed under Connections but are not graph nodes.

After each draw the script sets on ``<body>``: ``data-rendered-nodes`` (nodes drawn),
``data-rendered-missing-notes``, ``data-rendered-missing-attachments`` and
``data-layout="done"`` when the layout settles. The layout is a force simulation (the
velocity-Verlet model of d3-force: many-body repulsion, link springs, gravity, collision)
with Barnes-Hut repulsion past 600 nodes and an iteration budget that shrinks with size,
so 10,000 nodes lay out in a few seconds without blocking the page.
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

from goat_core.contract import Connections, LinkMap, LinkResolution
from goat_core.filestore import parse_links

#: Missing attachments are drawn by default only up to this many (the legend toggles them).
ATTACHMENTS_SHOWN_UP_TO = 20

# A file extension: 1-8 ASCII letters or digits, at least one letter ("v1.2" is a note name).
_EXTENSION = re.compile(r"\.([A-Za-z0-9]{1,8})$")

_RESOLUTION_CODES = {
    LinkResolution.EXACT: "exact",
    LinkResolution.NAME: "name",
    LinkResolution.AMBIGUOUS: "ambiguous",
    LinkResolution.MISSING: "missing",
    LinkResolution.ATTACHMENT: "attachment",
    LinkResolution.SELF: "self",
}


@cache
def _asset(name: str) -> str:
    text = resources.files("goat_core.cli").joinpath("assets", name).read_text(encoding="utf-8")
    if "</" in text and name.endswith(".js"):
        raise RuntimeError(f"asset {name} must not contain '</' (it is inlined in <script>)")
    return text


def _json_for_script(value: Any) -> str:
    """JSON safe inside ``<script>``: ``<``, ``>``, ``&`` and the JavaScript line separators
    are escaped, so no string in the data can close the element (HTML 13.2.5 script data)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _missing_label(raw: str) -> str:
    links = parse_links(raw)
    if links and links[0].target_text:
        return links[0].target_text
    return raw


def missing_link_kind(raw: str) -> str:
    """``"note"`` or ``"attachment"`` for a link as written that resolves to nothing (the
    rule of :func:`missing_target`, applied to the link's decoded target)."""
    return missing_link_target(raw)[0]


def missing_link_target(raw: str) -> tuple[str, str, str]:
    """:func:`missing_target` of a link as written that resolves to nothing: ``(kind, label,
    key)``; links with the same key are one missing node on the map."""
    return missing_target(_missing_label(raw))


def missing_target(text: str) -> tuple[str, str, str]:
    """Classify and name the target of a link that resolves to nothing.

    :param text: the decoded link target as written (``Example.md``, ``icons/x.svg``).
    :returns: ``(kind, label, key)``: ``kind`` is ``"note"`` when the last path segment has no
        extension or ``.md`` (Obsidian creates a note for it) and ``"attachment"`` for any other
        extension (``.png``, ``.svg``, ``.pdf``; an extension is 1-8 ASCII letters or digits
        with at least one letter, so ``Release 1.2`` is a note); ``label`` is ``text`` without
        a ``.md`` suffix; ``key`` groups spellings of one target: ``label`` NFC-normalised and
        case-folded (Obsidian matches link targets case-insensitively and with ``.md``
        optional), so ``[[Example]]`` and ``[[example.md]]`` share one node.
    """
    label = text.strip()
    if label.lower().endswith(".md") and len(label) > 3:
        label = label[:-3]
        kind = "note"
    else:
        ext = _EXTENSION.search(label.rsplit("/", 1)[-1])
        suffix = ext.group(1).lower() if ext else ""
        kind = "attachment" if suffix and suffix != "md" and not suffix.isdigit() else "note"
    key = unicodedata.normalize("NFC", label).casefold()
    return kind, label, key


def _folder(page_id: str) -> str:
    return page_id.split("/", 1)[0] if "/" in page_id else ""


def map_data(
    link_map: LinkMap, *, title: str, connections: Mapping[str, Connections] | None = None
) -> dict[str, Any]:
    """The JSON document the page embeds.

    Shape: ``{"title", "attachments_shown_up_to", "groups": [folder], "nodes": [{"id",
    "title", "missing": false, "group"} or {"id": "", "title", "missing": true, "kind": "note"
    | "attachment"}], "edges": [[source index, target index or -1, raw, resolution,
    attachment path or ""]], "links": {page id: [{"raw", "target", "resolution", "line",
    "alias", "heading", "block", "embed"}]}}``.
    ``groups`` are the pages' top-level folders (``""`` for the store root), the most pages
    first (ties by name); a page's ``group`` indexes it. Node indexes past the pages are
    missing targets, one per :func:`missing_target` key, labelled as written the first time.
    """
    counts: dict[str, int] = {}
    for n in link_map.nodes:
        counts[_folder(n.id)] = counts.get(_folder(n.id), 0) + 1
    groups = sorted(counts, key=lambda g: (-counts[g], g))
    group_index = {g: i for i, g in enumerate(groups)}
    nodes: list[dict[str, Any]] = [
        {
            "id": n.id,
            "title": n.title or n.id,
            "missing": False,
            "group": group_index[_folder(n.id)],
        }
        for n in link_map.nodes
    ]
    index = {n.id: i for i, n in enumerate(link_map.nodes)}
    missing: dict[str, int] = {}
    edges: list[list[Any]] = []
    for edge in link_map.edges:
        source = index.get(edge.source)
        if source is None:
            continue
        extra = ""
        if edge.resolution is LinkResolution.MISSING:
            kind, label, key = missing_target(_missing_label(edge.raw))
            target = missing.get(key)
            if target is None:
                target = missing[key] = len(nodes)
                nodes.append({"id": "", "title": label, "missing": True, "kind": kind})
        elif edge.resolution is LinkResolution.ATTACHMENT:
            target = -1
            extra = edge.target or ""
        else:
            target = index.get(edge.target or "", -1)
        edges.append([source, target, edge.raw, _RESOLUTION_CODES[edge.resolution], extra])
    links: dict[str, list[dict[str, Any]]] = {}
    for page_id, conn in (connections or {}).items():
        links[page_id] = [
            {
                "raw": link.raw,
                "target": link.target,
                "resolution": _RESOLUTION_CODES[link.resolution],
                "line": link.line,
                "alias": link.alias,
                "heading": link.heading,
                "block": link.block,
                "embed": link.embed,
            }
            for link in conn.outgoing
        ]
    return {
        "title": title,
        "groups": groups,
        "nodes": nodes,
        "edges": edges,
        "links": links,
        "attachments_shown_up_to": ATTACHMENTS_SHOWN_UP_TO,
    }


def render_map_html(
    link_map: LinkMap, *, title: str, connections: Mapping[str, Connections] | None = None
) -> str:
    """Render ``link_map`` as one self-contained HTML page (see the module docstring).

    :param link_map: pages as nodes and links as edges (``goat_core.filestore.build_link_map``).
    :param title: shown in the page header and ``<title>``; any text is safe (escaped).
    :param connections: optional per-page :class:`~goat_core.contract.Connections` (keyed by
        page id) whose outgoing links, with line, alias, heading and block, the Connections
        view lists; without it the view lists the map's edges from the page.
    :returns: the HTML document as a string (UTF-8 when written).
    """
    data = _json_for_script(map_data(link_map, title=title, connections=connections))
    safe_title = html.escape(title)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; \
script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{safe_title}</title>
<style>
{_asset("map.css")}
</style>
</head>
<body data-rendered-nodes="0" data-rendered-missing-notes="0" \
data-rendered-missing-attachments="0" data-layout="pending">
<header>
<h1 id="map-title">{safe_title}</h1>
<nav role="tablist" aria-label="Views">
<button type="button" role="tab" id="tab-pages" data-view="pages">Pages</button>
<button type="button" role="tab" id="tab-map" data-view="map">Map</button>
<button type="button" role="tab" id="tab-connections" data-view="connections">Connections</button>
</nav>
<p id="stats"></p>
</header>
<main>
<section id="view-pages" class="view" role="tabpanel" aria-labelledby="tab-pages" hidden>
<input id="filter" type="search" placeholder="Filter pages" aria-label="Filter pages">
<ul id="page-list"></ul>
</section>
<section id="view-map" class="view" role="tabpanel" aria-labelledby="tab-map" hidden>
<canvas id="graph" aria-label="Link graph"></canvas>
<div class="legend">
<span class="key"><span class="dot"></span> page</span>
<span class="key"><span class="dot missing"></span> missing note</span>
<label class="key" id="attachments-key"><input type="checkbox" id="show-attachments">\
<span class="square missing"></span> missing attachments</label>
<button type="button" id="fit">Fit</button>
<span class="hint">hover or click a node · drag to move · wheel to zoom</span>
</div>
<ul id="folders" aria-label="Folders"></ul>
</section>
<section id="view-connections" class="view" role="tabpanel" aria-labelledby="tab-connections" \
hidden>
<div id="connections"></div>
</section>
</main>
<script type="application/json" id="goat-map-data">{data}</script>
<script>
{_asset("map.js")}
</script>
</body>
</html>
"""
