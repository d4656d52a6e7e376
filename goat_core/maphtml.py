"""A self-contained HTML page for a store's link map (``goat map --html FILE``).

:func:`render_map_html` returns one HTML document: all JavaScript and CSS inline, no network
(a Content-Security-Policy of ``default-src 'none'`` forbids every fetch, font, frame and
remote image), the map's data embedded as JSON in ``<script type="application/json">``.
The page has three views, switched by a tab bar: **Pages** (a filterable list, one
``li.page`` per page), **Map** (an interactive force-directed graph drawn on a canvas: click
a node to select it, drag nodes, drag the background to pan, wheel to zoom) and
**Connections** (the selected page's outgoing links and backlinks). The selected item is
marked with a neutral grey outline and background, never an accent colour. Links to missing
notes appear as hollow dashed nodes (``missing``) named after the link target; attachments
are listed under Connections but are not graph nodes.

After its first draw the script sets ``data-rendered-nodes`` on ``<body>`` (pages plus
missing targets drawn) and ``data-layout="done"`` when the layout settles; layout work is
capped (fewer iterations and a grid approximation of repulsion for large graphs), so 10,000
nodes lay out in a few seconds without blocking the page.
"""

from __future__ import annotations

import html
import json
import unicodedata
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

from goat_core.links import parse_links
from goat_core.models import Connections, LinkMap, LinkResolution

__all__ = ["render_map_html", "map_data"]

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
    text = resources.files("goat_core").joinpath("assets", name).read_text(encoding="utf-8")
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


def map_data(
    link_map: LinkMap, *, title: str, connections: Mapping[str, Connections] | None = None
) -> dict[str, Any]:
    """The JSON document the page embeds.

    Shape: ``{"title", "nodes": [{"id", "title", "missing"}], "edges": [[source index,
    target index or -1, raw, resolution, attachment path or ""]], "links": {page id:
    [{"raw", "target", "resolution", "line", "alias", "heading", "block", "embed"}]}}``.
    Node indexes past the pages are missing targets, one per distinct target name
    (NFC, case-folded), labelled as written the first time.
    """
    nodes: list[dict[str, Any]] = [
        {"id": n.id, "title": n.title or n.id, "missing": False} for n in link_map.nodes
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
            label = _missing_label(edge.raw)
            key = unicodedata.normalize("NFC", label).casefold()
            target = missing.get(key)
            if target is None:
                target = missing[key] = len(nodes)
                nodes.append({"id": "", "title": label, "missing": True})
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
    return {"title": title, "nodes": nodes, "edges": edges, "links": links}


def render_map_html(
    link_map: LinkMap, *, title: str, connections: Mapping[str, Connections] | None = None
) -> str:
    """Render ``link_map`` as one self-contained HTML page (see the module docstring).

    :param link_map: pages as nodes and links as edges (``goat_core.links.build_link_map``).
    :param title: shown in the page header and ``<title>``; any text is safe (escaped).
    :param connections: optional per-page :class:`~goat_core.models.Connections` (keyed by
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
<body data-rendered-nodes="0" data-layout="pending">
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
<p class="legend"><span class="dot"></span> page <span class="dot missing"></span> missing note
<span class="hint">click to select, drag to move, wheel to zoom</span></p>
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
