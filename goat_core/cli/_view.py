"""What ``goat recall`` prints, from a recall result's JSON form (``RecallResult.to_json``):
one renderer for the command run in full (goat_core/cli/_memory.py) and for its answer
through a running server (goat_core/cli/_fast.py), so both print the same bytes. No click
and no pydantic: the fast path imports it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from goat_core.logs import redact, visible_cell, visible_controls

#: The largest ``goat recall --limit``.
RECALL_LIMIT_MAX = 100
#: What ``click.style(text, bold=True)`` writes around a matched word.
_BOLD, _RESET = "\x1b[1m", "\x1b[0m"


def json_text(data: Any, *, line: bool = False) -> str:
    """``data`` as the ``--json`` output: indented JSON (non-ASCII kept, other values as
    ``str``); with ``line``, one line (a stream of JSON lines). A lone surrogate (a file
    name that is not UTF-8 decodes to one) cannot be written as UTF-8, so such output is all
    ASCII: every non-ASCII character escaped, that surrogate as ``\\udcff`` (``json.loads``
    gives the same string back)."""
    indent = None if line else 2
    text = json.dumps(data, ensure_ascii=False, indent=indent, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data, ensure_ascii=True, indent=indent, default=str)
    return text


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) made one space."""
    return " ".join(str(text).split())


def table(rows: Sequence[Sequence[str]], headers: Sequence[str] | None = None) -> str:
    """Left-aligned columns separated by two spaces; the last column is not padded. Cells
    come ready for a terminal: text from notes through :func:`goat_core.logs.visible_cell`."""
    all_rows = [list(headers)] if headers else []
    all_rows += [[str(c) for c in r] for r in rows]
    if not all_rows:
        return ""
    widths = [max(len(r[i]) for r in all_rows) for i in range(len(all_rows[0]))]
    lines = []
    for r in all_rows:
        cells = [c.ljust(widths[i]) for i, c in enumerate(r[:-1])] + [r[-1]]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def error_line(message: str) -> str:
    """A stderr line: secrets this process handed out redacted, control characters shown."""
    return visible_controls(redact(message))


def _snippet(item: Mapping[str, Any], styled: bool) -> str:
    """A row's snippet: its matched words bold when ``styled``, else the plain text."""
    text = visible_controls(item["snippet"])
    spans = item.get("snippet_spans") or ()
    if not styled or not spans:
        return text
    out: list[str] = []
    pos = 0
    for start, end in spans:
        out += [text[pos:start], _BOLD, text[start:end], _RESET]
        pos = end
    return "".join([*out, text[pos:]])


def recall_lines(data: Mapping[str, Any], limit: int, styled: bool) -> tuple[str | None, list[str]]:
    """The text form of a recall: ``(stdout text or None, stderr lines)``.

    :param data: ``RecallResult.to_json()``.
    :param limit: the ``--limit`` asked for (the hint when more matched).
    :param styled: matched words in bold (a terminal without ``NO_COLOR``).
    """
    items = data["items"]
    out: list[str] = []
    if not items:
        out.append(f"no matches in {data['scope']}")
    rows = [
        [
            f"{item['score']:.2f}",
            visible_cell(item.get("path") or item["id"]),
            one_line(_snippet(item, styled)),
        ]
        for item in items
    ]
    if rows:
        out.append(table(rows, ["SCORE", "PAGE", "SNIPPET"]))
    err = [error_line(f"goat: warning: {one_line(reason)}") for reason in data["degraded"]]
    if not data["complete"] and not data["degraded"]:
        hint = " (raise --limit)" if limit < RECALL_LIMIT_MAX else " (a narrower query shows them)"
        err.append(error_line(f"goat: more matched than shown{hint}"))
    return ("\n".join(out) if out else None), err
