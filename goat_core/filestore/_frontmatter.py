"""YAML frontmatter: split, parse and edit notes without disturbing bytes nobody asked to change.

A note has frontmatter when its first line is ``---`` (after an optional BOM) and a later line
is ``---``; the text between is YAML, the rest is the body (Obsidian "Properties"). Parsing
uses PyYAML's C safe loader when available (``CSafeLoader``), else ``SafeLoader``.

A note whose frontmatter does not parse, or is not a mapping, is still a note: it is read as
all body with empty frontmatter and the error recorded (:attr:`ParsedNote.error`), so it stays
listed and searchable. Editing such a note raises instead of guessing.

Edits never re-dump the YAML: :func:`set_keys` rewrites only the lines of the keys it sets
(a top-level ``key: value`` line and its indented continuation lines) and appends new keys
as one line each before the closing fence. Unknown keys, key order, quoting, comments, line
endings and the body stay byte-for-byte.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from goat_core.errors import BadInput

_BOM = "\ufeff"
_FENCE = re.compile(r"---[ \t]*(\r?\n|$)")
_KEY_LINE = re.compile(r"(?P<key>[^\s#:'\"\-?\[\]{},&*!|>%@`][^:]*?)[ \t]*:(?:[ \t]|$)")


class FrontmatterError(BadInput):
    """A note's frontmatter cannot be edited safely (it does not parse, or a key to set is
    not a simple top-level key); the note was not changed."""


class UneditableFrontmatter(FrontmatterError):
    """A note's frontmatter parses but cannot be edited line by line (a key written twice or
    quoted, an anchor on the edited line, a flow mapping as the whole block); the note was not
    changed. Writers that append to a note report it as a conflict with that note; exports and
    imports render the parsed keys instead."""


@dataclass(frozen=True)
class ParsedNote:
    """A note split at its frontmatter fences.

    :param text: the whole note.
    :param data: the parsed frontmatter mapping (``{}`` without frontmatter or on error).
    :param body: the text after the closing fence (the whole text when there is no valid
        frontmatter).
    :param has_frontmatter: both fences were found and the YAML parsed to a mapping.
    :param error: why the frontmatter was ignored (``None`` when fine or absent).
    :param fm_start: offset of the first YAML line (after the opening fence).
    :param fm_end: offset of the closing fence line.
    :param body_start: offset of the body in ``text``.
    :param newline: the fence's line ending (``"\\n"`` or ``"\\r\\n"``).
    """

    text: str
    data: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    has_frontmatter: bool = False
    error: str | None = None
    fm_start: int = 0
    fm_end: int = 0
    body_start: int = 0
    newline: str = "\n"

    @property
    def frontmatter_text(self) -> str:
        """The raw YAML between the fences (``""`` without frontmatter)."""
        return self.text[self.fm_start : self.fm_end] if self.has_frontmatter else ""


def _loader() -> Any:
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _fences(text: str) -> tuple[int, int, int, str] | None:
    """``(fm_start, fm_end, body_start, newline)`` or ``None`` when there are no fences."""
    start = 1 if text.startswith(_BOM) else 0
    first = _FENCE.match(text, start)
    if first is None or not first.group(1):
        return None
    newline = first.group(1)
    fm_start = first.end()
    pos = fm_start
    while pos <= len(text):
        closing = _FENCE.match(text, pos)
        if closing is not None:
            return fm_start, pos, closing.end(), newline
        nxt = text.find("\n", pos)
        if nxt < 0:
            return None
        pos = nxt + 1
    return None


#: The most values a note's frontmatter may hold once its YAML aliases are expanded. YAML
#: shares an aliased node instead of copying it, so nine lines of ``&a``/``*a`` can stand for
#: a billion values that every later rendering (JSON, ``show``, export) would walk; such
#: frontmatter is treated as not parsing (reported, the note never edited).
MAX_FRONTMATTER_VALUES = 100_000


#: The deepest nesting of lists and mappings a note's frontmatter may have (aliases followed).
MAX_FRONTMATTER_DEPTH = 64
#: The longest integer a note's frontmatter may hold, in bits (about 3,000 decimal digits):
#: Python refuses to print an integer of over 4,300 digits, and YAML writes them in hex too.
MAX_FRONTMATTER_INT_BITS = 10_000


class _Unfit(Exception):
    """Frontmatter YAML that loads but that no later step could render (the reason)."""


def _expanded_size(value: Any, limit: int) -> int:
    """How many values ``value`` holds with every shared (aliased) node counted each time it is
    used; counting stops just past ``limit``.

    :raises _Unfit: nesting deeper than :data:`MAX_FRONTMATTER_DEPTH`, or an integer longer
        than :data:`MAX_FRONTMATTER_INT_BITS`.
    """
    seen: dict[int, tuple[int, int]] = {}  # a node's id -> (values, levels below it)

    def size(v: Any, depth: int) -> tuple[int, int]:
        if isinstance(v, dict):
            items: Any = [*v.keys(), *v.values()]
        elif isinstance(v, list | tuple | set | frozenset):
            items = v
        else:
            if isinstance(v, int) and v.bit_length() > MAX_FRONTMATTER_INT_BITS:
                raise _Unfit(f"an integer of over {MAX_FRONTMATTER_INT_BITS} bits")
            return 1, 0
        known = seen.get(id(v))
        if known is not None:
            if depth + known[1] >= MAX_FRONTMATTER_DEPTH:  # a shared node used deeper down
                raise _Unfit(f"it nests over {MAX_FRONTMATTER_DEPTH} levels deep")
            return known
        if depth >= MAX_FRONTMATTER_DEPTH:
            raise _Unfit(f"it nests over {MAX_FRONTMATTER_DEPTH} levels deep")
        seen[id(v)] = (limit + 1, 0)  # a self-referencing alias counts as too large
        total, below = 1, 0
        for item in items:
            count, levels = size(item, depth + 1)
            total += count
            below = max(below, levels + 1)
            if total > limit:
                break
        seen[id(v)] = (min(total, limit + 1), below)
        return seen[id(v)]

    return size(value, 0)[0]


def parse_note(text: str) -> ParsedNote:
    """Split ``text`` into frontmatter and body and parse the frontmatter.

    Never raises for bad YAML: the result then has ``data == {}``, ``body == text`` and
    ``error`` set (e.g. ``"frontmatter does not parse: mapping values are not allowed here
    (line 2)"``, or ``"... : day is out of range for month"`` for ``created: 2023-02-30``).
    """
    fences = _fences(text)
    if fences is None:
        return ParsedNote(text=text, body=text)
    fm_start, fm_end, body_start, newline = fences
    raw = text[fm_start:fm_end]
    import yaml

    try:
        data = yaml.load(raw, Loader=_loader()) if raw.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return ParsedNote(
            text=text, body=text, error=f"frontmatter does not parse: {problem}{where}"
        )
    except (ValueError, OverflowError) as exc:
        # a YAML timestamp that names no real date or time ("2023-02-30", "2023-13-01"):
        # the loader builds the datetime and Python refuses it; or a decimal integer past
        # Python's digit limit for conversions
        why = str(exc)
        if "integer string conversion" in why:
            why = "an integer too long to read"
        return ParsedNote(text=text, body=text, error=f"frontmatter does not parse: {why}")
    except (AttributeError, KeyError, IndexError, TypeError, RecursionError):
        # PyYAML's constructors fail so on a malformed explicit tag: ``!!timestamp 'x'``,
        # ``!!bool 'maybe'``, ``!!int ''``
        return ParsedNote(
            text=text,
            body=text,
            error="frontmatter does not parse: a value does not fit its explicit tag (!!...)",
        )
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return ParsedNote(
            text=text,
            body=text,
            error=f"frontmatter is a {type(data).__name__}, not a mapping of keys",
        )
    try:
        expanded = _expanded_size(data, MAX_FRONTMATTER_VALUES)
    except _Unfit as exc:
        return ParsedNote(text=text, body=text, error=f"frontmatter does not parse: {exc}")
    if expanded > MAX_FRONTMATTER_VALUES:
        return ParsedNote(
            text=text,
            body=text,
            error=(
                "frontmatter does not parse: its YAML aliases expand to over "
                f"{MAX_FRONTMATTER_VALUES} values"
            ),
        )
    return ParsedNote(
        text=text,
        data={str(k): v for k, v in data.items()},
        body=text[body_start:],
        has_frontmatter=True,
        fm_start=fm_start,
        fm_end=fm_end,
        body_start=body_start,
        newline=newline,
    )


def jsonable(value: Any) -> Any:
    """``value`` with YAML-only types made JSON-safe: dates and datetimes become ISO 8601
    strings, keys become strings, sets and tuples become lists, bytes become text, and the
    floats JSON has no number for become their YAML spelling (``.inf``, ``-.inf``, ``.nan``)."""
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
    if isinstance(value, dict):
        return {str(jsonable(k)): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


#: Characters YAML reads as line breaks (YAML 1.1 section 5.4, what PyYAML follows): a plain
#: or single-quoted scalar holding one would be folded on reading, so such text is written
#: double-quoted, where they are escaped (``\n``, ``\N``, ``\L``, ``\P``).
_YAML_BREAKS = ("\n", "\r", "\x85", "\u2028", "\u2029")


def format_scalar(value: Any) -> str:
    """One-line YAML for ``value`` (a string, number, bool, ``None`` or a list of those),
    quoted only where YAML needs it: a ``datetime`` is written as an unquoted ISO 8601
    timestamp (``2026-11-29T22:00:00Z``, a YAML timestamp and an Obsidian date-time property),
    the string ``"2026-11-29"`` stays a string,
    ``"yes"`` is quoted, lists are flow style (``[a, b]``)."""
    if isinstance(value, _dt.datetime):
        text = value.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    import yaml

    dumped: str = yaml.safe_dump(
        value, default_flow_style=True, allow_unicode=True, width=2**31 - 1, sort_keys=False
    )
    if dumped.endswith("\n...\n"):
        dumped = dumped[: -len("\n...\n")]
    dumped = dumped.rstrip("\n")
    if any(c in dumped for c in _YAML_BREAKS):  # double quotes escape YAML's line breaks
        dumped = yaml.safe_dump(
            value,
            default_style='"',
            default_flow_style=True,
            allow_unicode=True,
            width=2**31 - 1,
        ).rstrip("\n")
    if "\n" in dumped:
        raise ValueError(f"value {value!r} does not fit on one YAML line")
    return dumped


def _top_level_spans(raw: str) -> dict[str, tuple[int, int]]:
    """Map each top-level key of the YAML text to the span of its lines: the key line plus
    the continuation lines after it (indented, or ``-`` list items, with blank lines between
    them), offsets relative to ``raw``. A key written twice maps to ``(-1, -1)``."""
    spans: dict[str, tuple[int, int]] = {}
    current: str | None = None
    pos = 0
    for line in raw.splitlines(keepends=True):
        content = line.rstrip("\r\n")
        end = pos + len(line)
        continuation = content[:1] in (" ", "\t") or (
            content.startswith("-") and not content.startswith("---")
        )
        if current is not None and content.strip() and continuation:
            spans[current] = (spans[current][0], end)
        elif content.strip() == "" and current is not None:
            pass  # a blank line joins the span only if a continuation line follows
        else:
            m = _KEY_LINE.match(content)
            current = m.group("key") if m is not None else None
            if current is not None:
                spans[current] = (-1, -1) if current in spans else (pos, end)
                if spans[current][0] < 0:
                    current = None
        pos = end
    return spans


def set_keys(text: str, updates: Mapping[str, Any]) -> str:
    """Set top-level frontmatter keys by editing only their lines.

    An existing key's line (and its continuation lines) is replaced by ``key: <value>``;
    a new key is appended as one line just before the closing fence. A note without
    frontmatter gets a new block in front; every original byte follows it unchanged.

    :param text: the note.
    :param updates: keys to values (one-line YAML via :func:`format_scalar`).
    :raises FrontmatterError: the frontmatter does not parse (such notes are never
        rewritten), or a key is not a plain name.
    :raises UneditableFrontmatter: the note parses but cannot be edited line by line: a key
        to set appears twice or is written in another form (``"updated":``, ``? updated``),
        or the edit would break the YAML or not change the key's value (an anchor on the
        replaced line, a flow mapping as the whole block).
    """
    for key in updates:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", key):
            raise FrontmatterError(f"frontmatter key {key!r} is not a plain name")
    note = parse_note(text)
    if note.error is not None:
        raise FrontmatterError(f"note not edited: {note.error}")
    nl = note.newline
    if not note.has_frontmatter:
        start = 1 if text.startswith(_BOM) else 0
        block = "".join(f"{k}: {format_scalar(v)}{nl}" for k, v in updates.items())
        return f"{text[:start]}---{nl}{block}---{nl}{text[start:]}"
    raw = note.frontmatter_text
    spans = _top_level_spans(raw)
    edits: list[tuple[int, int, str]] = []
    appended: list[str] = []
    for key, value in updates.items():
        line = f"{key}: {format_scalar(value)}"
        if key not in spans and key in note.data:  # quoted, or a complex key: not a line
            raise UneditableFrontmatter(
                f"note not edited: its frontmatter key {key!r} is not written as a plain "
                f"`{key}:` line, so it cannot be changed line by line"
            )
        if key in spans:
            start, end = spans[key]
            if start < 0:
                raise UneditableFrontmatter(
                    f"note not edited: frontmatter key {key!r} appears more than once"
                )
            chunk = raw[start:end]
            ending = "\r\n" if chunk.endswith("\r\n") else ("\n" if chunk.endswith("\n") else "")
            edits.append((start, end, line + ending))
        else:
            appended.append(line + nl)
    new_raw = raw
    for start, end, replacement in sorted(edits, reverse=True):
        new_raw = new_raw[:start] + replacement + new_raw[end:]
    if appended:
        if new_raw and not new_raw.endswith("\n"):
            new_raw += nl
        new_raw += "".join(appended)
    result = text[: note.fm_start] + new_raw + text[note.fm_end :]
    check = parse_note(result)
    if check.error is not None:  # the YAML parsed, but not line by line: never on disk
        raise UneditableFrontmatter(
            f"note not edited: editing its frontmatter would break it: {check.error}"
        )
    import yaml

    for key, value in updates.items():  # a later form of the key would still win
        if check.data.get(key) != yaml.load(format_scalar(value), Loader=_loader()):
            raise UneditableFrontmatter(
                f"note not edited: its frontmatter key {key!r} is written again further down"
            )
    return result


def drop_keys(text: str, keys: Collection[str]) -> str:
    """Remove top-level frontmatter keys by cutting only their lines (the key line and its
    continuation lines); every other byte stays. A note without frontmatter, or without any
    of ``keys``, is returned unchanged; a block left empty stays (``---`` twice).

    :raises FrontmatterError: the frontmatter does not parse (such notes are never
        rewritten), or a key to drop appears more than once.
    """
    note = parse_note(text)
    if note.error is not None:
        raise FrontmatterError(f"note not edited: {note.error}")
    present = [k for k in keys if k in note.data]
    if not note.has_frontmatter or not present:
        return text
    raw = note.frontmatter_text
    spans = _top_level_spans(raw)
    cuts = []
    for key in present:
        start, end = spans.get(key, (-1, -1))
        if start < 0:
            raise UneditableFrontmatter(f"frontmatter key {key!r} cannot be dropped line by line")
        cuts.append((start, end))
    new_raw = raw
    for start, end in sorted(cuts, reverse=True):
        new_raw = new_raw[:start] + new_raw[end:]
    result = text[: note.fm_start] + new_raw + text[note.fm_end :]
    check = parse_note(result)
    if check.error is not None or any(k in check.data for k in present):
        raise UneditableFrontmatter(f"dropping {', '.join(present)} would break the frontmatter")
    return result


def append_entry(text: str, heading: str, entry: str) -> str:
    """Append a dated section to a note's end: ``\\n## <heading>\\n\\n<entry>\\n``, after a
    newline if the note does not end with one. Everything before is kept byte-for-byte; the
    note's line ending style (``\\r\\n`` or ``\\n``) is used for the new lines."""
    nl = "\r\n" if "\r\n" in text else "\n"
    base = text if text == "" or text.endswith("\n") else text + nl
    body = entry.replace("\r\n", "\n").replace("\n", nl)
    sep = nl if base else ""
    return f"{base}{sep}## {heading}{nl}{nl}{body}{nl}"


def render_note(frontmatter: Mapping[str, Any], body: str) -> str:
    """A new note: a frontmatter block with one ``key: value`` line per key (in the given
    order, values via :func:`format_scalar`), then ``body``."""
    lines = "".join(f"{k}: {format_scalar(v)}\n" for k, v in frontmatter.items())
    return f"---\n{lines}---\n{body}"
