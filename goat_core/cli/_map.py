"""``goat map``: a store's link map as an outline, JSON, or a self-contained HTML graph
(:mod:`goat_core.cli._maphtml`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from goat_core.cli._options import _scope, memory_options, open_memory
from goat_core.cli._output import _cell, _err, _one_line, _shown, _table, emit_json
from goat_core.errors import BadInput

if TYPE_CHECKING:
    from goat_core.contract import LinkMap

_MARKS = {
    "exact": "->",
    "name": "->",
    "ambiguous": "?>",
    "missing": "!!",
    "attachment": "@@",
    "self": "##",
}


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _map_outline(link_map: LinkMap) -> str:
    """Each page (by path, case-insensitively, like ``goat pages``), then its links: ``->``
    resolved, ``?>`` ambiguous (Obsidian's pick shown), ``!!`` a missing note, ``!@`` a
    missing attachment, ``@@`` an attachment, ``##`` same-page heading or block; a closing
    line counts pages, links, and the missing notes and attachments (distinct names, as the
    HTML map counts them) with the links to them."""
    from goat_core.cli._maphtml import missing_link_target

    by_source: dict[str, list[Any]] = {}
    for edge in link_map.edges:
        by_source.setdefault(edge.source, []).append(edge)
    titles = {n.id: n.title for n in link_map.nodes}
    lines: list[str] = []
    missing = {"note": 0, "attachment": 0}  # links
    targets: dict[str, set[str]] = {"note": set(), "attachment": set()}  # what they name
    for node in sorted(link_map.nodes, key=lambda n: ((n.path or n.id).casefold(), n.id)):
        lines.append(f"{_cell(node.path or node.id)}  ({_cell(node.title)})")
        rows = []
        for edge in by_source.get(node.id, []):
            res = edge.resolution.value
            mark = _MARKS.get(res, "--")
            target = edge.target if edge.target is not None else "(missing)"
            if res == "missing":
                kind, _label, key = missing_link_target(edge.raw)
                missing[kind] += 1
                targets[kind].add(key)
                if kind == "attachment":
                    mark, target = "!@", "(missing attachment)"
            elif res == "attachment":
                target = "(attachment)"
            elif res == "self":
                target = "(this page)"
            rows.append([f"  {mark}", _cell(target), _cell(edge.raw), f"[{res}]"])
        if rows:
            lines.extend(_table(rows).split("\n"))  # not splitlines: U+2028 is no row end
    orphans = [e for e in link_map.edges if e.source not in titles]
    for edge in orphans:
        lines.append(f"{_cell(edge.source)}: {_cell(edge.raw)} [{edge.resolution.value}]")
    # the same counts as the HTML map's header: distinct missing targets, as Obsidian's graph
    # draws one unresolved node per name, plus how many links point at them
    lines.append(
        f"{_count(len(link_map.nodes), 'page')}, {_count(len(link_map.edges), 'link')}: "
        f"{missing['note']} to {_count(len(targets['note']), 'missing note')}, "
        f"{missing['attachment']} to {_count(len(targets['attachment']), 'missing attachment')}"
    )
    return "\n".join(lines)


@click.command("map")
@click.option(
    "--html",
    "html",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    help="Write a self-contained interactive HTML graph to FILE.",
)
@memory_options
def map_cmd(html: Path | None, pen: str | None, as_json: bool, home: Path | None) -> None:
    """Show how pages link: an outline, JSON, or (--html FILE) an interactive graph."""
    with open_memory(home, pen) as memory:
        link_map = memory.link_map()
    scope = _scope(pen)
    if html is not None:
        from goat_core.cli._maphtml import render_map_html

        page = render_map_html(link_map, title=f"GOAT Memory map: {scope.key}")
        _write_text_atomic(html, page)
    if as_json:
        emit_json(link_map.to_json())
    elif html is not None:
        nodes, edges = _count(len(link_map.nodes), "page"), _count(len(link_map.edges), "link")
        click.echo(f"wrote {html} ({nodes}, {edges})")
    else:
        click.echo(_shown(_map_outline(link_map)) or "no pages")
    for reason in link_map.degraded:
        _err(f"goat: warning: {_one_line(reason)}")


def _write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` with :func:`goat_core.fileio.atomic_write` (temp file
    in the same folder, fsync, rename, folder fsync: a reader never sees half a file). A new
    file gets ``0644`` minus the umask; an existing one keeps its permissions. A lone
    surrogate (a file name that is not UTF-8) is written as its escape, ``\\udcff``.

    :raises BadInput: the folder does not exist.
    """
    from goat_core.fileio import atomic_write

    target = path.expanduser()
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise BadInput(f"cannot write {path}: folder {folder} does not exist")
    atomic_write(target, text.encode("utf-8", "backslashreplace"))


#: ``goat map``, added to the root group by :mod:`goat_core.cli`.
COMMANDS: tuple[click.Command, ...] = (map_cmd,)
