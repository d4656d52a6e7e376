"""``goat wiki ...``: ingest, lint and write, on the wiki bound to Global or a Pen.

Each command opens the scope's memory with :func:`goat_core.cli.open_memory` (the same
plugins, config and GOAT home as every other ``goat`` command) and refuses a scope whose
binding is not a wiki. Errors are :mod:`goat_core.errors` classes; the root ``goat`` group
turns them into one line on stderr and their exit code. Progress bars go to stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from goat_core.cli import home_option
from goat_core.logs import visible_cell

__all__ = ["wiki"]

F = TypeVar("F", bound=Callable[..., Any])


def _echo(text: str, err: bool = False) -> None:
    """One text line; control characters from names and notes shown, never sent to the
    terminal, and a newline or tab in a name shown too, so the line stays one
    (:func:`goat_core.logs.visible_cell`)."""
    click.echo(visible_cell(text), err=err)


def _options(f: F) -> F:
    f = click.option("--json", "as_json", is_flag=True, help="Print JSON on stdout.")(f)
    f = home_option(f)  # core's --home: an empty value is refused
    return click.option(
        "--pen", "pen", metavar="ID", default=None, help="Use this Pen's wiki (default: Global)."
    )(f)


@contextmanager
def _wiki(home: Path | None, pen: str | None) -> Iterator[Callable[..., Any]]:
    """Yield ``run(operation, *args)``: one of the wiki's operations on the scope's memory
    context, through the scope's policy hooks (the command never gets the provider).

    :raises ScopeError: an invalid Pen id (before any I/O). :raises NotSupported: the scope
        is not bound to a wiki. :raises ProviderUnavailable: the scope has no memory.
    """
    from goat_core.cli import open_memory
    from goat_core.contract import Scope
    from goat_core.errors import NotSupported

    scope = Scope.pen(pen) if pen is not None else Scope.global_()
    with open_memory(home, scope.pen_id) as memory:
        context = memory.context
        if context.available and (context.spec is None or context.spec.name != "wiki"):
            name = context.spec.name if context.spec else "none"
            raise NotSupported(
                f"{context.label} uses provider {name!r}, not a wiki; bind one with "
                f"'goat bind{' --pen ' + scope.pen_id if scope.pen_id else ''} wiki'"
            )
        yield lambda name, *a, **kw: memory.run_operation(name, *a, **kw)


def _emit(data: Any) -> None:
    from goat_core.cli import emit_json

    emit_json(data)


@click.group("wiki")
def wiki() -> None:
    """The LLM wiki: ingest sources, lint, write pages (remember, recall, pages, show and
    map work on a wiki like on any memory)."""


@wiki.command("ingest")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@_options
def ingest_cmd(path: Path, pen: str | None, home: Path | None, as_json: bool) -> None:
    """Copy PATH (a file or folder) into the wiki's raw sources. A source is identified by
    its relative path and content hash: re-ingesting it adds nothing, while same-named files
    from different folders (or the same bytes at another path) stay distinct sources."""
    bar: Any = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if total < 2:
            return
        if bar is None:
            bar = click.progressbar(length=total, label="ingesting", file=sys.stderr)
            bar.__enter__()
        bar.update(done - bar.pos)

    with _wiki(home, pen) as call:
        try:
            result = call("ingest", path, progress)
        finally:
            if bar is not None:
                bar.__exit__(None, None, None)
    if as_json:
        _emit(result)
        _exit_if_refused(result)
        return
    _echo(
        f"{len(result['added'])} source(s) added, {len(result['present'])} already present, "
        f"{len(result['skipped'])} skipped; {result['sources']} in the wiki"
    )
    # each line names the source's id (what `goat wiki write --source ID` takes), not a path
    for source_id in result["added"]:
        _echo(f"added   {source_id}")
    for source_id in result["present"]:
        _echo(f"present {source_id}")
    for reason in result.get("degraded", ()):
        _echo(f"goat: warning: {reason}", err=True)
    for item in result["skipped"]:
        _echo(f"skipped {item['path']}: {item['reason']}", err=True)
    _exit_if_refused(result)


def _exit_if_refused(result: dict[str, Any]) -> None:
    """Exit 5 (rejected) when a policy hook refused any file: the ingest did not all land."""
    refused = [i for i in result["skipped"] if i["reason"].startswith("rejected by policy")]
    if refused:
        _echo(f"goat: error: rejected: {len(refused)} file(s) refused by policy", err=True)
        raise click.exceptions.Exit(5)


@wiki.command("lint")
@click.option("--fix", is_flag=True, help="Apply the deterministic fixes, report the rest.")
@_options
def lint_cmd(fix: bool, pen: str | None, home: Path | None, as_json: bool) -> None:
    """Check the wiki. Exit status 1 when a finding of severity warning or error remains."""
    with _wiki(home, pen) as call:
        report = call("lint_fix" if fix else "lint")
    if as_json:
        _emit(report.to_json())
    else:
        for f in report.fixed:
            _echo(f"fixed  {f.code:<22} {f.path or '-'}  {f.message}")
        for f in report.findings:
            where = f"{f.path}:{f.line}" if f.line else (f.path or "-")
            _echo(f"{f.severity:<7} {f.code:<22} {where}  {f.message}")
        counts: dict[str, int] = {}
        for f in report.findings:
            counts[f.severity] = counts.get(f.severity, 0) + 1
        summary = (
            ", ".join(
                f"{n} {s}" if n == 1 or s == "info" else f"{n} {s}s"
                for s, n in sorted(counts.items())
            )
            or "no findings"
        )
        _echo(f"{summary}; {len(report.fixed)} fixed", err=True)
        for reason in report.degraded:
            _echo(f"goat: warning: {reason}", err=True)
    if any(f.severity in {"error", "warning"} for f in report.findings):
        raise click.exceptions.Exit(1)


@wiki.command("write")
@click.argument("title")
@click.option(
    "--file",
    "file",
    type=click.File("r", encoding="utf-8"),
    required=True,
    help="The page text ('-' reads stdin); frontmatter optional.",
)
@click.option("--folder", default=None, help="A folder the schema defines.")
@click.option("--type", "page_type", default=None, help="Page type (default: from the folder).")
@click.option("--summary", default=None, help="The page's index line.")
@click.option("--source", "sources", multiple=True, help="An ingested source id (repeatable).")
@click.option("--etag", default=None, help="The etag read before, to update a page.")
@_options
def write_cmd(
    title: str,
    file: Any,
    folder: str | None,
    page_type: str | None,
    summary: str | None,
    sources: tuple[str, ...],
    etag: str | None,
    pen: str | None,
    home: Path | None,
    as_json: bool,
) -> None:
    """Write page TITLE (or update it with --etag); index and log follow."""
    from goat_wiki.provider import PageWrite

    body = file.read()
    write = PageWrite(
        title=title,
        body=body,
        folder=folder,
        type=page_type,
        summary=summary,
        sources=sources or None,
        etag=etag,
    )
    with _wiki(home, pen) as call:
        result = call("write_page", write)
    if as_json:
        _emit(result)
    if result.get("status") == "rejected":  # a policy hook refused: nothing was written
        reason = " ".join(str(result.get("reason") or "no reason given").split())
        _echo(f"goat: error: rejected: {reason}", err=True)
        raise click.exceptions.Exit(5)
    if as_json:
        return
    _echo(f"{result['op']} {result['page']} (etag {result['etag']})")
    for f in result["findings"]:
        _echo(f"{f['severity']}: {f['code']}: {f['message']}", err=True)
