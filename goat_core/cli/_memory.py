"""The memory commands: remember, feedback, refresh, forget, recall, reflect, pages, show,
reindex."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from goat_core.cli._options import _scope, memory_options, open_memory
from goat_core.cli._output import _cell, _err, _one_line, _shown, _table, _to_json, emit_json
from goat_core.cli._view import RECALL_LIMIT_MAX, recall_lines

if TYPE_CHECKING:
    from goat_core.contract import Receipt
    from goat_core.host import SyncMemoryContext

#: ``reindex`` shows a progress bar (on stderr) when at least this many files are indexed.
PROGRESS_THRESHOLD = 200
#: Embedding for semantic recall is shown (on stderr) from this many notes on.
EMBED_PROGRESS_THRESHOLD = 20


# -- memory commands --------------------------------------------------------------------------
_RECEIPT_EXIT = {"stored": 0, "queued": 0, "rejected": 5, "failed": 5, "unknown": 6}


def _store_of(memory: SyncMemoryContext) -> str | None:
    """A shared bank's own label (``shared bank `b` on `s```), ``None`` for a scope's store."""
    from goat_core.host import scope_label

    label = memory.label
    return None if label == scope_label(memory.scope) else label


def _receipt_place(receipt: Receipt, store: str | None) -> str:
    """Where a receipt's write went: the scope, or a shared bank's label (``store``) with the
    scope that only selected it."""
    return f"{store}, selected by {receipt.scope}" if store else receipt.scope


def _exit_for_receipt(receipt: Receipt) -> None:
    """The error line and exit code of a receipt that is not ``stored`` or ``queued``."""
    status = receipt.status.value
    if status in ("rejected", "failed", "unknown"):
        reason = _one_line(receipt.reason or "no reason given")
        msg = {
            "rejected": f"rejected: {reason}",
            "failed": f"the operation failed: {reason}",
            "unknown": f"the outcome is unknown (the write may or may not have happened): {reason}",
        }[status]
        _err(f"goat: error: {msg}")
    code = _RECEIPT_EXIT.get(status, 1)
    if code:
        raise click.exceptions.Exit(code)


def _report_receipt(receipt: Receipt, as_json: bool, verb: str, store: str | None = None) -> None:
    """Print a receipt (``store``: a shared bank's label, named instead of the scope alone,
    which only selected it)."""
    status = receipt.status.value
    if as_json:
        emit_json(receipt.to_json())
    else:
        where = receipt.path or receipt.id
        in_ = _cell(_receipt_place(receipt, store))
        if status == "stored":
            line = f"{verb} {_cell(where)} ({in_})" if where else f"{verb} ({in_})"
            click.echo(line)
            for removed in receipt.removed:
                if removed != where:
                    click.echo(f"  also removed {_cell(removed)}")
        elif status == "queued":
            click.echo(f"queued as operation {_cell(receipt.operation_id or '')} ({in_})")
    _exit_for_receipt(receipt)


def _read_text(text: str) -> str:
    if text == "-":
        return sys.stdin.read()
    return text


@click.command("remember")
@click.argument("text")
@click.option("--title", "title", metavar="T", default=None, help="Append to or create this note.")
@memory_options
def remember_cmd(
    text: str, title: str | None, pen: str | None, as_json: bool, home: Path | None
) -> None:
    """Remember TEXT ('-' reads stdin) in Global memory or --pen ID."""
    body = _read_text(text)
    with open_memory(home, pen) as memory:
        receipt = memory.remember(body, title=title, source="cli")
        store = _store_of(memory)
    _report_receipt(receipt, as_json, "remembered in", store)


@click.command("feedback")
@click.argument("text")
@click.option("--on", "on", metavar="PAGE", default=None, help="The page it is about.")
@memory_options
def feedback_cmd(
    text: str, on: str | None, pen: str | None, as_json: bool, home: Path | None
) -> None:
    """Record feedback TEXT ('-' reads stdin), optionally about a page."""
    body = _read_text(text)
    with open_memory(home, pen) as memory:
        receipt = memory.feedback(body, on=on, source="cli")
        store = _store_of(memory)
    _report_receipt(receipt, as_json, "feedback recorded in", store)


@click.command("refresh")
@click.argument("operation_id")
@memory_options
def refresh_cmd(operation_id: str, pen: str | None, as_json: bool, home: Path | None) -> None:
    """What became of a queued write: OPERATION_ID is the one its receipt printed.

    Exit 0 while it is stored or still queued, 5 when the provider reports it failed."""
    from goat_core.contract import Receipt, ReceiptStatus

    if not operation_id.strip() or len(operation_id) > 200:
        raise click.BadParameter("an operation id is 1-200 characters", param_hint="OPERATION_ID")
    with open_memory(home, pen) as memory:
        queued = Receipt(
            status=ReceiptStatus.QUEUED, operation_id=operation_id, scope=memory.scope.key
        )
        receipt = memory.refresh(queued)
        store = _store_of(memory)
    if as_json:
        emit_json(receipt.to_json())
    else:
        place = _receipt_place(receipt, store)
        click.echo(f"operation {operation_id}: {receipt.status.value} ({place})")
    _exit_for_receipt(receipt)


@click.command("forget")
@click.argument("page")
@memory_options
def forget_cmd(page: str, pen: str | None, as_json: bool, home: Path | None) -> None:
    """Remove PAGE (id, path, or unique title)."""
    with open_memory(home, pen) as memory:
        receipt = memory.forget(page)
        store = _store_of(memory)
    _report_receipt(receipt, as_json, "removed", store)


def _print_degraded(complete: bool, degraded: Sequence[str], more: str | None = None) -> None:
    for reason in degraded:
        _err(f"goat: warning: {_one_line(reason)}")
    if not complete and more and not degraded:
        _err(more)


@click.command("recall")
@click.argument("query")
@click.option("--limit", type=click.IntRange(1, RECALL_LIMIT_MAX), default=10, show_default=True)
@memory_options
def recall_cmd(query: str, limit: int, pen: str | None, as_json: bool, home: Path | None) -> None:
    """Ranked recall for QUERY (plain text, never query syntax).

    Snippets show matched words in bold in a terminal (not with NO_COLOR set), plain text
    otherwise; --json gives each snippet as plain text plus `snippet_spans`, the
    [start, end) character offsets of its matched words."""
    # a bar while a large store is first indexed, drawn by the recall's own change scan (a
    # terminal only; a separate reindex first would scan the store twice)
    progress = _Progress(enabled=not as_json and sys.stderr.isatty())
    embedding = _EmbedProgress()
    try:
        with open_memory(home, pen, progress, embedding) as memory:
            result = memory.recall(query, limit=limit)
    finally:
        progress.close()
        embedding.close()
    data = result.to_json()
    if as_json:
        emit_json(data)
        return
    styled = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    out, err = recall_lines(data, limit, styled)
    if out is not None:
        click.echo(out)
    for line in err:
        click.echo(line, err=True)


@click.command("reflect")
@click.argument("query")
@memory_options
def reflect_cmd(query: str, pen: str | None, as_json: bool, home: Path | None) -> None:
    """Ask the provider to reason over memory about QUERY (capability reflect)."""
    with open_memory(home, pen) as memory:
        reflection = memory.reflect(query)
    if as_json:
        emit_json(_to_json(reflection))
        return
    click.echo(_shown(reflection.text))
    if reflection.based_on:
        click.echo("")
        click.echo("based on:")
        for item in reflection.based_on:
            click.echo("  " + _cell(item.path or item.id) + "  " + _cell(item.title))
    _print_degraded(True, reflection.degraded)


@click.command("pages")
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
@click.option("--cursor", metavar="C", default=None, help="Continue after a previous page.")
@memory_options
def pages_cmd(
    limit: int, cursor: str | None, pen: str | None, as_json: bool, home: Path | None
) -> None:
    """List pages ordered by path (case-insensitively), --limit at a time."""
    with open_memory(home, pen) as memory:
        listing = memory.list_pages(limit=limit, cursor=cursor)
    if as_json:
        emit_json(listing.to_json())
        return
    rows = [[_cell(item.path or item.id), _cell(item.title)] for item in listing.items]
    if rows:
        click.echo(_table(rows, ["PAGE", "TITLE"]))
    else:
        click.echo("no pages")
    more = None
    if listing.next_cursor:
        more = f"more: goat pages --cursor {listing.next_cursor}" + (f" --pen {pen}" if pen else "")
    _print_degraded(listing.complete, listing.degraded, more)


@click.command("show")
@click.argument("page")
@memory_options
def show_cmd(page: str, pen: str | None, as_json: bool, home: Path | None) -> None:
    """Print PAGE's body. PAGE is an id, a path (with or without .md), or a unique title or
    file name (ignoring case); when several match they are listed and the exit code is 3."""
    with open_memory(home, pen) as memory:
        found = memory.get_page(page)
    if as_json:
        emit_json(found.to_json())
        return
    body = _shown(found.body.replace("\r\n", "\n"))  # a terminal gets no control codes
    click.echo(body if body.endswith("\n") else body + "\n", nl=False)


class _Progress:
    """A progress callback ``(done, total)`` drawing a click progress bar on stderr once more
    than :data:`PROGRESS_THRESHOLD` files are involved (click hides it when stderr is not a
    terminal). Safe to call from the store's worker thread: the caller waits meanwhile."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._bar: Any = None
        self._done = 0

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < PROGRESS_THRESHOLD:
            return
        if self._bar is None:
            self._bar = click.progressbar(
                length=total, label="indexing", file=sys.stderr, show_pos=True
            )
            self._bar.__enter__()
        step = done - self._done
        if step > 0:
            self._bar.update(step)
            self._done = done

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None


class _EmbedProgress:
    """``embed_progress(done, total)`` in notes, on stderr once at least
    :data:`EMBED_PROGRESS_THRESHOLD` notes are embedded: a bar on a terminal, else one line
    (``goat: embedding N notes for semantic recall…``). stdout is never touched."""

    def __init__(self) -> None:
        self._bar: Any = None
        self._done = 0
        self._announced = False

    def __call__(self, done: int, total: int) -> None:
        if total < EMBED_PROGRESS_THRESHOLD:
            return
        if not sys.stderr.isatty():
            if not self._announced:
                self._announced = True
                _err(f"goat: embedding {total} notes for semantic recall…")
            return
        if self._bar is None:
            self._bar = click.progressbar(
                length=total, label="embedding", file=sys.stderr, show_pos=True
            )
            self._bar.__enter__()
        if done > self._done:
            self._bar.update(done - self._done)
            self._done = done

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None


@click.command("reindex")
@memory_options
def reindex_cmd(pen: str | None, as_json: bool, home: Path | None) -> None:
    """Bring the store's search index up to date, and its vectors when it has an embedder
    (progress on stderr for large stores)."""
    progress = _Progress(enabled=not as_json)
    embedding = _EmbedProgress()
    try:
        with open_memory(home, pen, embed_progress=embedding) as memory:
            counts = memory.reindex(progress=progress)
    finally:
        progress.close()
        embedding.close()
    data = dict(counts or {})
    if as_json:
        emit_json({"scope": _scope(pen).key, **data})
    else:
        summary = ", ".join(f"{k} {v}" for k, v in data.items()) or "nothing to do"
        click.echo(f"reindexed {_scope(pen).key}: {summary}")


#: The memory commands, added to the root group by :mod:`goat_core.cli`.
COMMANDS: tuple[click.Command, ...] = (
    remember_cmd,
    feedback_cmd,
    refresh_cmd,
    forget_cmd,
    recall_cmd,
    reflect_cmd,
    pages_cmd,
    show_cmd,
    reindex_cmd,
)
