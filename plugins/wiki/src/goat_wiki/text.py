"""Pure text rules of the wiki (no I/O): index and log formats, summaries, folders, code
masking, footnotes, tables, headings and block ids.

Sources of the rules: Obsidian's help vault (``Basic formatting syntax.md``: footnotes
``[^id]`` with definitions ``[^id]: text``, inline footnotes ``^[text]``, ``%%comments%%``,
tables and ``\\|`` inside table cells; ``Internal links.md``: heading and block links,
``^block-id`` at the end of a block; ``Accepted file formats.md``: attachment extensions)
and CommonMark 0.31 (fenced code, code spans).
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ATTACHMENT_EXTENSIONS",
    "IndexEntry",
    "LogEntry",
    "block_ids",
    "derive_summary",
    "folder_for",
    "footnote_problems",
    "heading_key",
    "heading_keys",
    "index_line",
    "is_attachment_target",
    "mask_code",
    "parse_index",
    "parse_log",
    "render_index",
    "table_lines",
    "type_for_folder",
]

#: Non-Markdown file types Obsidian accepts (``Files and folders/Accepted file formats.md``).
ATTACHMENT_EXTENSIONS = frozenset(
    {
        ".base",
        ".canvas",
        ".avif",
        ".bmp",
        ".gif",
        ".jpeg",
        ".jpg",
        ".png",
        ".svg",
        ".webp",
        ".flac",
        ".m4a",
        ".mp3",
        ".ogg",
        ".wav",
        ".webm",
        ".3gp",
        ".mkv",
        ".mov",
        ".mp4",
        ".ogv",
        ".pdf",
    }
)

_SUMMARY_CHARS = 160
_FENCE = re.compile(r"^[ \t]{0,3}(?:>[ \t]?)*[ \t]*(`{3,}|~{3,})")
_INLINE = re.compile(r"`+|%%|<!--")
_FOOTNOTE_DEF = re.compile(r"^[ ]{0,3}\[\^([^\]\s]+)\]:")
_FOOTNOTE_REF = re.compile(r"(?<!\\)\[\^([^\]\s]+)\](?!:)")
_INLINE_FOOTNOTE = re.compile(r"(?<!\\)\^\[[^\]]*\]")
_HEADING = re.compile(r"^[ ]{0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
_BLOCK_ID = re.compile(r"\^([A-Za-z0-9-]+)[ \t]*$")
_DELIMITER_ROW = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_QUOTE = re.compile(r"^(?:[ ]{0,3}>[ \t]?)+")
_WIKILINK = re.compile(r"!?\[\[([^\]|]*)(?:\\?\|([^\]]*))?\]\]")
_LOG_HEADING = re.compile(r"^## \[(\d{4}-\d{2}-\d{2})\] ([a-z][a-z-]*) \| (.+?)[ \t]*$")
_INDEX_LINE = re.compile(r"^- \[\[([^\]|#]+?)(?:\|([^\]]*))?\]\](?: — (.*))?$")


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def is_attachment_target(target_text: str) -> bool:
    """Whether a link target names a non-Markdown file Obsidian accepts (``img.png``,
    ``doc.pdf``); ``v1.2 notes`` and ``Note.md`` are note targets."""
    ext = posixpath.splitext(target_text.strip().lower())[1]
    return ext in ATTACHMENT_EXTENSIONS


def mask_code(text: str) -> str:
    """``text`` with fenced code blocks, code spans, ``%%comments%%`` and HTML comments
    replaced by spaces (line breaks kept, so offsets and line numbers stay valid)."""
    out: list[str] = []
    lines = text.splitlines(keepends=True)
    fence: str | None = None
    in_comment: str | None = None  # "%%" or "-->" carried across lines
    for line in lines:
        if fence is not None:
            m = _FENCE.match(line)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            out.append(_blank(line))
            continue
        if in_comment is None:
            m = _FENCE.match(line)
            if m:
                fence = m.group(1)
                out.append(_blank(line))
                continue
        masked, in_comment = _mask_inline(line, in_comment)
        out.append(masked)
    return "".join(out)


def _blank(segment: str) -> str:
    return "".join(c if c in "\r\n" else " " for c in segment)


def _mask_inline(line: str, in_comment: str | None) -> tuple[str, str | None]:
    chars = list(line)
    pos = 0
    if in_comment is not None:
        end = line.find(in_comment)
        if end < 0:
            return _blank(line), in_comment
        stop = end + len(in_comment)
        chars[:stop] = _blank(line[:stop])
        pos = stop
        in_comment = None
    while True:
        m = _INLINE.search(line, pos)
        if m is None:
            break
        token = m.group(0)
        if token.startswith("`"):
            close = re.compile(r"(?<!`)" + re.escape(token) + r"(?!`)")
            c = close.search(line, m.end())
            if c is None:  # an unmatched backtick run is literal text
                pos = m.end()
                continue
            chars[m.start() : c.end()] = _blank(line[m.start() : c.end()])
            pos = c.end()
            continue
        closer = "%%" if token == "%%" else "-->"
        end = line.find(closer, m.end())
        if end < 0:
            chars[m.start() :] = _blank(line[m.start() :])
            return "".join(chars), closer
        chars[m.start() : end + len(closer)] = _blank(line[m.start() : end + len(closer)])
        pos = end + len(closer)
    return "".join(chars), in_comment


def footnote_problems(text: str) -> list[tuple[int, str]]:
    """Footnote references without a definition: ``(line, id)`` pairs, 1-based lines, in
    order. Code, comments and definitions themselves are not references; ``^[inline]``
    footnotes need no definition."""
    masked = mask_code(text)
    defined: set[str] = set()
    refs: list[tuple[int, str]] = []
    for number, line in enumerate(masked.splitlines(), start=1):
        d = _FOOTNOTE_DEF.match(line)
        if d:
            defined.add(d.group(1).casefold())
            line = line[d.end() :]
        for r in _FOOTNOTE_REF.finditer(line):
            refs.append((number, r.group(1)))
    return [(n, ident) for n, ident in refs if ident.casefold() not in defined]


def table_lines(text: str) -> set[int]:
    """1-based numbers of the lines that belong to a Markdown table (a block of lines around
    a delimiter row such as ``| --- | :-: |``), outside code."""
    masked = [_QUOTE.sub("", m) for m in mask_code(text).splitlines()]
    result: set[int] = set()
    for i, line in enumerate(masked):
        if "|" in line and "-" in line and _DELIMITER_ROW.match(line) and i > 0:
            if "|" not in masked[i - 1]:
                continue
            start = i - 1
            end = i + 1
            while end < len(masked) and masked[end].strip() and "|" in masked[end]:
                end += 1
            result.update(range(start + 1, end + 1))
    return result


def heading_key(heading: str) -> str:
    """Comparison key of a heading or heading link: NFC, case-folded, letters, digits and
    marks only (Obsidian drops ``# | ^ : % [ ]`` from heading links and the help vault's
    links omit code ticks and trailing punctuation, e.g. ``[[Functions#hasTag]]`` for
    ``### `hasTag()```), single spaces."""
    text = _nfc(heading).casefold()
    kept = "".join(c if unicodedata.category(c)[0] in "LNM" else " " for c in text)
    return " ".join(kept.split())


def heading_keys(text: str) -> set[str]:
    """Keys (:func:`heading_key`) of every ATX heading outside code (code spans inside a
    heading are part of its text)."""
    keys = set()
    for masked, line in zip(mask_code(text).splitlines(), text.splitlines(), strict=False):
        if _HEADING.match(masked):
            m = _HEADING.match(line)
            if m:
                keys.add(heading_key(m.group(2)))
    return keys


def block_ids(text: str) -> set[str]:
    """Block ids (``^id`` ending a line) outside code, case-folded."""
    ids = set()
    for line in mask_code(text).splitlines():
        m = _BLOCK_ID.search(line)
        if m:
            ids.add(m.group(1).casefold())
    return ids


def derive_summary(data: Mapping[str, Any], body: str) -> str:
    """The one-line index summary of a page: frontmatter ``summary``, else ``description``,
    else the first line of prose in the body (not a heading, quote, fence, table, embed,
    rule or HTML), whitespace collapsed, cut at 160 characters on a word boundary."""
    for key in ("summary", "description"):
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            return _cut(_plain(value))
    fence = False
    for line in body.splitlines():
        stripped = line.strip()
        if _FENCE.match(line):
            fence = not fence
            continue
        if fence or not stripped:
            continue
        if stripped.startswith(("#", ">", "|", "![[", "<", "---", "%%", "***", "___")):
            continue
        return _cut(_plain(stripped))
    return ""


def _plain(text: str) -> str:
    """One line with wikilinks reduced to their display text (``[[a|b]]`` -> ``b``) and
    footnotes dropped (``[^1]`` references and ``^[inline]`` notes: an index line has no
    definitions to point to, and a summary must not carry a dangling reference)."""
    text = _WIKILINK.sub(lambda m: (m.group(2) or m.group(1)).strip(), text)
    text = _INLINE_FOOTNOTE.sub("", _FOOTNOTE_REF.sub("", text))
    return " ".join(text.split())


def _cut(text: str) -> str:
    if len(text) <= _SUMMARY_CHARS:
        return text
    cut = text[: _SUMMARY_CHARS - 1]
    if " " in cut:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip() + "…"


# -- folders ------------------------------------------------------------------------------------
def _forms(word: str) -> set[str]:
    w = word.casefold()
    forms = {w, w + "s", w + "es"}
    if w.endswith("y"):
        forms.add(w[:-1] + "ies")
    if w.endswith("is"):
        forms.add(w[:-2] + "es")
    return forms


def folder_for(requested: str, defined: Iterable[str]) -> str | None:
    """The schema folder ``requested`` names: itself ignoring case, else the one folder it is
    obviously a singular or plural of (``entity`` -> ``entities``, ``synthesis`` ->
    ``syntheses``, ``Concept`` -> ``concepts``); ``None`` when none or several match."""
    folders = list(defined)
    key = requested.strip().casefold()
    exact = [f for f in folders if f.casefold() == key]
    if len(exact) == 1:
        return exact[0]
    near = [f for f in folders if key in _forms(f) or f.casefold() in _forms(key)]
    return near[0] if len(near) == 1 else None


def type_for_folder(folder: str) -> str:
    """A page's default ``type``: the singular of its folder (``entities`` -> ``entity``,
    ``syntheses`` -> ``synthesis``, ``concepts`` -> ``concept``), else the folder name."""
    f = folder.casefold()
    if f.endswith("ies"):
        return f[:-3] + "y"
    if f.endswith("ses") and len(f) > 4:
        return f[:-3] + "sis"
    if f.endswith("s") and not f.endswith("ss"):
        return f[:-1]
    return f


# -- index ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class IndexEntry:
    """One catalog line: the page path (with ``.md``), its title and summary."""

    path: str
    title: str
    summary: str


def _alias(text: str) -> str:
    return " ".join(text.replace("|", "/").replace("[", "(").replace("]", ")").split())


def index_line(entry: IndexEntry) -> str:
    """``- [[folder/Page|Title]] — summary`` (a list item, so the alias pipe is not escaped;
    only tables need ``\\|``)."""
    target = entry.path[:-3] if entry.path.lower().endswith(".md") else entry.path
    line = f"- [[{target}|{_alias(entry.title) or target}]]"
    summary = " ".join(entry.summary.replace("\n", " ").split())
    return f"{line} — {summary}" if summary else line


def _folder_of(path: str) -> str:
    return path.split("/", 1)[0] if "/" in path else ""


def render_index(lines: Mapping[str, str], frontmatter: str) -> str:
    """The whole index file: ``frontmatter`` (a complete ``---`` block), ``# Index``, then one
    ``## <folder>`` section per top-level folder (root pages under ``## (root)``).

    :param lines: page path -> its catalog line (:func:`index_line`); sorted here by path
        case-insensitively.
    """
    ordered = sorted(lines, key=lambda p: (_folder_of(p).casefold(), p.casefold(), p))
    parts = [frontmatter, "# Index\n"]
    current: str | None = None
    for path in ordered:
        folder = _folder_of(path)
        if folder != current:
            current = folder
            parts.append(f"\n## {folder or '(root)'}\n\n")
        parts.append(lines[path] + "\n")
    return "".join(parts)


def parse_index(text: str) -> dict[str, tuple[int, str]]:
    """Catalog lines of an index file: page path (``.md`` added) -> ``(line number, line)``.
    Lines that are not catalog entries are ignored."""
    entries: dict[str, tuple[int, str]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        m = _INDEX_LINE.match(line)
        if m:
            target = m.group(1)
            path = target if target.lower().endswith(".md") else target + ".md"
            entries[_nfc(path)] = (number, line)
    return entries


# -- log ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LogEntry:
    """One log entry: ``## [date] op | title`` and the ``- page: <path>`` lines under it."""

    line: int
    date: str
    op: str
    title: str
    pages: tuple[str, ...]


def parse_log(text: str) -> tuple[list[LogEntry], list[tuple[int, str]]]:
    """Entries of a log file in order, and ``(line, text)`` of level-2 headings that are not
    in the ``## [YYYY-MM-DD] op | title`` form."""
    entries: list[LogEntry] = []
    malformed: list[tuple[int, str]] = []
    current: dict[str, Any] | None = None
    in_code = False
    for number, line in enumerate(text.splitlines(), start=1):
        if _FENCE.match(line):
            in_code = not in_code
        if in_code:
            continue
        if line.startswith("## "):
            if current is not None:
                entries.append(LogEntry(**current))
            m = _LOG_HEADING.match(line)
            if m is None:
                malformed.append((number, line))
                current = None
                continue
            current = {
                "line": number,
                "date": m.group(1),
                "op": m.group(2),
                "title": m.group(3),
                "pages": (),
            }
        elif current is not None and line.startswith("- page: "):
            current["pages"] = (*current["pages"], _nfc(line[len("- page: ") :].strip()))
    if current is not None:
        entries.append(LogEntry(**current))
    return entries, malformed
