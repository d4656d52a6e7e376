"""Moving knowledge on purpose: ``goat copy``, ``goat export`` and ``goat import``
(docs/design.md, Copy, export and import). User commands over the
:class:`~goat_core.host.MemoryHost` transfer methods; no model tool or server offers them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from goat_core.cli._options import _scope, home_option, json_option, open_host, pen_option
from goat_core.cli._output import _cell, _err, _one_line, _table, emit_json

if TYPE_CHECKING:
    from goat_core.contract import TransferReport

#: A progress bar (on stderr) is drawn once a transfer involves at least this many pages.
PROGRESS_THRESHOLD = 200

#: Exit codes of a finished transfer: conflicts and refusals 5, unknown outcomes or a
#: degraded export 6 (the worst wins).
_EXIT = {"conflicts": 5, "rejected": 5, "unknown": 6}


class _Bar:
    """``progress(done, total)`` drawing a labelled click progress bar on stderr for large
    transfers (click hides it when stderr is not a terminal)."""

    def __init__(self, label: str, enabled: bool) -> None:
        self.label = label
        self.enabled = enabled
        self._bar: Any = None
        self._done = 0

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < PROGRESS_THRESHOLD:
            return
        if self._bar is None:
            self._bar = click.progressbar(
                length=total, label=self.label, file=sys.stderr, show_pos=True
            )
            self._bar.__enter__()
        if done > self._done:
            self._bar.update(done - self._done)
            self._done = done

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None


def _report(report: TransferReport, as_json: bool) -> None:
    """Print a report (one line per page, then the summary) and exit with its code."""
    if as_json:
        emit_json(report.to_json())
    else:
        skipped = getattr(report, "skipped", ())
        rows = [
            [
                item.outcome.value,
                _cell(item.source),
                _cell(item.target or ""),
                _cell(_one_line(item.reason or "")),
            ]
            for item in report.items
        ]
        rows += [["skipped", _cell(s.path), "", _cell(_one_line(s.reason))] for s in skipped]
        if rows:
            click.echo(_table(rows, ["OUTCOME", "PAGE", "TARGET", "REASON"]))
        counts = ", ".join(
            f"{k} {v}" for k, v in [*report.summary.items(), ("skipped", len(skipped))] if v
        )
        if report.operation == "export":
            counts = f"{len(report.items)} page{'' if len(report.items) == 1 else 's'} written" + (
                "" if report.complete else ", degraded"
            )
        verb = "would " + report.operation if report.dry_run else report.operation
        click.echo(f"{verb} {report.source} -> {report.destination}: {counts or 'nothing to do'}")
        for reason in report.degraded:
            _err(f"goat: warning: {_one_line(reason)}")
        for note in getattr(report, "notes", ()):
            _err(f"goat: note: {_one_line(note)}")
    code = 0
    summary = report.summary
    for key, value in _EXIT.items():
        if summary.get(key):
            code = max(code, value)
    if not report.complete:
        code = 6
    if summary["conflicts"] and not as_json:
        _err("goat: error: conflicts: nothing was written (pass --rename to pick free names)")
    if code:
        raise click.exceptions.Exit(code)


@click.command("copy")
@click.argument("pages", nargs=-1, required=True)
@click.option("--to-pen", "to_pen", metavar="ID", default=None, help="Copy into this Pen.")
@click.option("--to-global", "to_global", is_flag=True, help="Copy into Global memory.")
@click.option("--rename", is_flag=True, help="Take the next free name instead of a conflict.")
@click.option("--dry-run", "dry_run", is_flag=True, help="List what would happen; write nothing.")
@pen_option
@json_option
@home_option
def copy_cmd(
    pages: tuple[str, ...],
    to_pen: str | None,
    to_global: bool,
    rename: bool,
    dry_run: bool,
    pen: str | None,
    as_json: bool,
    home: Path | None,
) -> None:
    """Copy PAGE... one way from Global memory (or --pen ID) into --to-pen ID or --to-global.

    The source is never changed; each copy records copied_from (scope, provider, id,
    sha256, at). A path that is taken is a conflict (exit 5, nothing written) unless
    --rename. The same scope or the same store is refused (exit 2)."""
    if (to_pen is None) == (not to_global):
        raise click.UsageError("choose the destination: --to-pen ID or --to-global")
    source = _scope(pen)
    destination = _scope(to_pen)  # None with --to-global: Global
    bar = _Bar("copying", enabled=not as_json)
    try:
        with open_host(home) as host:
            report = host.copy_pages(
                list(pages),
                source=source,
                destination=destination,
                rename=rename,
                dry_run=dry_run,
                progress=bar,
            )
    finally:
        bar.close()
    _report(report, as_json)


@click.command("export")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Write into a folder that is not empty.")
@pen_option
@json_option
@home_option
def export_cmd(
    directory: Path, force: bool, pen: str | None, as_json: bool, home: Path | None
) -> None:
    """Export Global memory (or --pen ID) into DIRECTORY as an OKF bundle: one .md per page
    at its store path, plus goat-export.json. The bundle is staged beside DIRECTORY and
    renamed into place whole. Exit 6 when the listing was degraded (the manifest says
    so)."""
    scope = _scope(pen)
    bar = _Bar("exporting", enabled=not as_json)
    try:
        with open_host(home) as host:
            report = host.export_bundle(scope, directory, force=force, progress=bar)
    finally:
        bar.close()
    _report(report, as_json)


@click.command("import")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--rename", is_flag=True, help="Take the next free name instead of a conflict.")
@click.option("--dry-run", "dry_run", is_flag=True, help="List what would happen; write nothing.")
@click.option(
    "--resend-unknown",
    "resend_unknown",
    is_flag=True,
    help="Send again pages whose earlier write had an unknown outcome.",
)
@pen_option
@json_option
@home_option
def import_cmd(
    directory: Path,
    rename: bool,
    dry_run: bool,
    resend_unknown: bool,
    pen: str | None,
    as_json: bool,
    home: Path | None,
) -> None:
    """Import an OKF bundle (or any folder of Markdown files) from DIRECTORY into Global
    memory (or --pen ID). The whole bundle is checked first; a bad one, or one an
    interrupted export left, is refused (exit 2) and nothing is written. Every file not
    read is named with why; a .markdown file skipped makes it incomplete (exit 6).
    Importing twice adds nothing."""
    scope = _scope(pen)
    bar = _Bar("importing", enabled=not as_json)
    try:
        with open_host(home) as host:
            report = host.import_bundle(
                directory,
                scope,
                rename=rename,
                dry_run=dry_run,
                resend_unknown=resend_unknown,
                progress=bar,
            )
    finally:
        bar.close()
    _report(report, as_json)


#: The transfer commands, added to the root group by :mod:`goat_core.cli`.
COMMANDS: tuple[click.Command, ...] = (copy_cmd, export_cmd, import_cmd)
