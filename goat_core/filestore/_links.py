"""Obsidian link parsing and resolution, shared by every file-based provider.

Two steps, both pure (no I/O):

1. :func:`parse_links` finds the links written in a note: wikilinks (``[[Note]]``,
   ``[[Note|alias]]``, ``[[Note\\|alias]]``, ``[[Note#Heading]]``, ``[[Note#^block]]``,
   ``[[#Heading]]``, ``![[embed]]``) and Markdown links (``[t](Some%20Note.md)``,
   ``[t](<Some Note.md>)``, ``![alt](img.png)``), skipping code, comments and frontmatter.
2. :class:`LinkResolver` resolves a parsed link against every file path of a store, and
   :class:`LinkIndex` (or :func:`build_link_map` / :func:`connections`) turns a store's notes
   into a :class:`~goat_core.contract.LinkMap` and per-page
   :class:`~goat_core.contract.Connections`.

Sources of the rules: Obsidian's help vault, ``Linking notes and files/Internal links.md``
(link formats, folder paths from the vault root, heading/sub-heading/block subpaths, other
formats need their extension, Markdown destinations are URL encoded), ``Embed files.md``
(``!`` prefix, ``|100`` / ``|640x480`` sizes) and ``Aliases.md`` (an alias is display text,
``[[AI]]`` is not a link to the note aliased ``AI``); CommonMark 0.31 for code spans, fenced and
indented code blocks, backslash escapes and link destinations; Obsidian's ``%%comment%%``
syntax (``Editing and formatting/Basic formatting syntax.md``).
"""

from __future__ import annotations

import os
import posixpath
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote

from goat_core.contract import Connections, Edge, Link, LinkMap, LinkResolution, PageSummary
from goat_core.errors import NotFound, PathError


@dataclass(frozen=True)
class ParsedLink:
    """One link as written in a note.

    :param raw: the link exactly as written (``![[a.png|100]]``, ``[t](Some%20Note.md)``).
    :param kind: ``"wikilink"`` or ``"markdown"``.
    :param target_text: the target without heading or block; Markdown destinations are
        percent-decoded, wikilinks are taken literally; ``""`` for a same-note link.
    :param alias: the display text after ``|`` of a wikilink (for an embedded image this is
        its size, e.g. ``"100"``), the bracketed text of a Markdown link; ``None`` without one.
    :param heading: the heading subpath; sub-headings keep their ``#`` separators
        (``[[N#A#B]]`` gives ``"A#B"``); ``None`` without one.
    :param block: the block id after ``#^`` (without the caret), or ``None``.
    :param embed: ``True`` for ``![[...]]`` and ``![...](...)``.
    :param line: 1-based line number of the link's first character in the text given to
        :func:`parse_links` (frontmatter lines count).
    """

    raw: str
    kind: Literal["wikilink", "markdown"]
    target_text: str
    alias: str | None
    heading: str | None
    block: str | None
    embed: bool
    line: int


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------

_BLANK = re.compile(r"[ \t]*\r?$")
_QUOTE_PREFIX = re.compile(r"(?: {0,3}>[ \t]?)+")
_FENCE_OPEN = re.compile(r"([ \t]*)(`{3,}|~{3,})(.*)$")
_ATX_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
_LIST_ITEM = re.compile(r"[ \t]*(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)")
_THEMATIC = re.compile(r" {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
# What can start an inline construct we care about. Backtick runs and bracket runs are taken
# whole so their length is known.
_INLINE = re.compile(r"\\.|`+|%%|<!--|!?\[+", re.DOTALL)
_WIKI_BODY = re.compile(r"((?:(?!\[\[|\]\])[^\n\r])+)\]\]")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_ESCAPABLE = re.compile(r"\\([!-/:-@\[-`{-~])")


def _indent_width(text: str) -> int:
    """Columns of leading whitespace, tabs to the next multiple of 4 (CommonMark 2.2)."""
    col = 0
    for ch in text:
        if ch == " ":
            col += 1
        elif ch == "\t":
            col += 4 - col % 4
        else:
            break
    return col


def _frontmatter_end(text: str) -> int:
    """Offset just past a leading ``---`` frontmatter block, or 0 without one.

    Obsidian reads properties only from a block that opens on the first line with ``---`` and
    closes with a later ``---`` line; an unclosed opener is body text.
    """
    first_end = text.find("\n")
    if first_end < 0 or text[:first_end].rstrip() != "---":
        return 0
    pos = first_end + 1
    while pos <= len(text):
        end = text.find("\n", pos)
        line = text[pos:] if end < 0 else text[pos:end]
        if line.rstrip() == "---":
            return len(text) if end < 0 else end + 1
        if end < 0:
            return 0
        pos = end + 1
    return 0


class _Scanner:
    """One pass over a note: block structure line by line, inline constructs per chunk."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.links: list[ParsedLink] = []
        # Offsets of line starts, for offset -> line number.
        self._line_starts = [0]
        self._line_starts.extend(m.end() for m in re.finditer("\n", text))
        # Block state of :meth:`run`: the open fence (char, length, blockquote depth), the
        # pending inline chunk, and the offset where a comment that ran past it closed.
        self._fence: tuple[str, int, int] | None = None
        self._in_list = False
        self._prev_blank = True
        self._prev_code = False
        self._chunk_start: int | None = None
        self._chunk_end = 0
        self._resume: int | None = None

    # -- helpers ------------------------------------------------------------------------------

    def line_of(self, offset: int) -> int:
        lo, hi = 0, len(self._line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    def _line_bounds(self, index: int) -> tuple[int, int]:
        start = self._line_starts[index]
        if index + 1 < len(self._line_starts):
            return start, self._line_starts[index + 1] - 1
        return start, len(self.text)

    # -- block level --------------------------------------------------------------------------

    def run(self) -> list[ParsedLink]:
        """The links of the note, in order (frontmatter, fenced and indented code skipped)."""
        text = self.text
        n_lines = len(self._line_starts)
        body = _frontmatter_end(text)
        i = self.line_of(body) - 1 if body < len(text) else n_lines
        if body and body == len(text):
            return []
        while i < n_lines:
            i = self._step(i)
        resume = self._flush()
        while resume is not None:
            # Only reachable when the last chunk's comment closed on the last line.
            self._chunk_start, self._chunk_end = resume, len(text)
            resume = self._flush()
        return self.links

    def _flush(self) -> int | None:
        """Scan the pending chunk; return the offset where scanning must resume when a
        comment opened in it runs past its end, else ``None``."""
        if self._chunk_start is None:
            return None
        start, self._chunk_start = self._chunk_start, None
        return self._inline(start, self._chunk_end)

    def _flush_back(self) -> int | None:
        """:meth:`_flush`, keeping its resume offset for the next step: the index of the
        line to scan again (where the comment closed), or ``None`` to go on."""
        self._resume = self._flush()
        return None if self._resume is None else self.line_of(self._resume) - 1

    def _step(self, i: int) -> int:
        """Scan line ``i``; returns the index of the next line to scan."""
        start, end = self._line_bounds(i)
        if self._resume is not None:
            return self._resumed_line(i, end)
        line = self.text[start:end]
        if self._fence is not None and self._in_fence(line):
            return i + 1
        if _BLANK.match(line):
            back = self._flush_back()
            if back is not None:
                return back
            self._prev_blank = True
            return i + 1
        return self._block_line(i, start, end, line)

    def _resumed_line(self, i: int, end: int) -> int:
        """Line ``i``, where a comment closed: the rest of the line is inline text."""
        assert self._resume is not None
        self._chunk_start, self._chunk_end = self._resume, end
        self._resume = None
        self._prev_blank = False
        i += 1
        if i >= len(self._line_starts) or not self._continues_paragraph(i, self._fence):
            back = self._flush_back()
            if back is not None:
                i = back
        return i

    def _in_fence(self, line: str) -> bool:
        """Whether ``line`` is inside the open fence (its closing line included); a line
        that leaves the fence's blockquote ends the fence and is not."""
        fence = self._fence
        assert fence is not None
        quote = _QUOTE_PREFIX.match(line)
        depth = quote.group(0).count(">") if quote else 0
        rest = line[quote.end() :] if quote else line
        if depth < fence[2]:
            self._fence = None  # the enclosing blockquote ended, and the fence with it
            return False
        m = _FENCE_OPEN.match(rest)
        if (
            m
            and m.group(2)[0] == fence[0]
            and len(m.group(2)) >= fence[1]
            and not m.group(3).strip()
        ):
            self._fence = None
        self._prev_blank = False
        return True

    def _block_line(self, i: int, start: int, end: int, line: str) -> int:
        """Line ``i`` (``text[start:end]``, not blank, outside a fence): a fence opening,
        indented code, or text added to the pending chunk (a list item, heading or rule
        starts a chunk of its own); returns the index of the next line to scan."""
        quote = _QUOTE_PREFIX.match(line)
        depth = quote.group(0).count(">") if quote else 0
        rest = line[quote.end() :] if quote else line
        indent = _indent_width(rest)
        m = _FENCE_OPEN.match(rest)
        if (
            m
            and (indent <= 3 or self._in_list)
            and not (m.group(2)[0] == "`" and "`" in m.group(3))
        ):
            back = self._flush_back()
            if back is not None:
                return back
            self._fence = (m.group(2)[0], len(m.group(2)), depth)
            self._prev_blank = self._prev_code = False
            return i + 1
        is_item = bool(_LIST_ITEM.match(rest))
        if not is_item and indent < 2 and self._prev_blank:
            self._in_list = False
        if (
            indent >= 4
            and depth == 0
            and not self._in_list
            and (self._prev_blank or self._prev_code)
            and self._chunk_start is None
        ):
            self._prev_code = True
            self._prev_blank = False
            return i + 1
        self._prev_code = False
        self._prev_blank = False
        if is_item:
            self._in_list = True
        standalone = bool(_ATX_HEADING.match(rest) or _THEMATIC.match(rest))
        if is_item or standalone:
            back = self._flush_back()
            if back is not None:
                return back
        if self._chunk_start is None:
            self._chunk_start = start
        self._chunk_end = end
        if standalone:
            back = self._flush_back()
            if back is not None:
                return back
        return i + 1

    def _continues_paragraph(self, i: int, fence: tuple[str, int, int] | None) -> bool:
        start, end = self._line_bounds(i)
        line = self.text[start:end]
        if fence is not None or _BLANK.match(line):
            return False
        quote = _QUOTE_PREFIX.match(line)
        rest = line[quote.end() :] if quote else line
        return not (
            _FENCE_OPEN.match(rest)
            or _LIST_ITEM.match(rest)
            or _ATX_HEADING.match(rest)
            or _THEMATIC.match(rest)
        )

    # -- inline level -------------------------------------------------------------------------

    def _inline(self, start: int, end: int) -> int | None:
        """Scan ``text[start:end]`` for links. Returns the offset just past a comment closer
        when a comment opened here closes beyond ``end`` (scanning resumes there), ``len(text)``
        when it never closes, else ``None``."""
        text = self.text
        pos = start
        while True:
            m = _INLINE.search(text, pos, end)
            if m is None:
                return None
            tok = m.group(0)
            at = m.start()
            c = tok[0]
            if c == "\\":
                pos = m.end()
            elif c == "`":
                pos = self._code_span(at, len(tok), end)
            elif tok == "%%":
                close = text.find("%%", at + 2)
                # Obsidian comments run to the next %% anywhere, or to the end of the note.
                stop = len(text) if close < 0 else close + 2
                if stop > end:
                    return stop
                pos = stop
            elif tok == "<!--":
                close = text.find("-->", at + 4)
                line_start = text.rfind("\n", 0, at) + 1
                block = not text[line_start:at].strip(" ")
                if close >= 0 and (close + 3 <= end or block):
                    stop = close + 3
                    if stop > end:
                        return stop
                    pos = stop
                elif close < 0 and block:
                    return len(text)  # an HTML comment block runs to the end of the note
                else:
                    pos = m.end()  # an unclosed inline comment is literal text
            else:
                pos = self._bracket(m, end)

    def _code_span(self, at: int, run: int, end: int) -> int:
        """CommonMark 6.1: a run of ``run`` backticks opens a code span closed by the next run
        of exactly the same length in the same paragraph; unmatched, the run is literal."""
        closer = re.compile("(?<!`)`{" + str(run) + "}(?!`)")
        m = closer.search(self.text, at + run, end)
        return at + run if m is None else m.end()

    def _bracket(self, m: re.Match[str], end: int) -> int:
        text = self.text
        tok = m.group(0)
        at = m.start()
        bang = tok[0] == "!"
        run = len(tok) - (1 if bang else 0)
        if run >= 2:
            # In "[[[x]]" the last two brackets open the wikilink; earlier ones are literal.
            open_at = at + len(tok) - 2
            embed = bang and run == 2
            w = _WIKI_BODY.match(text, open_at + 2, end)
            if w is not None:
                self._add_wikilink(open_at - 1 if embed else open_at, w.end(), w.group(1), embed)
                return w.end()
            if run == 2:
                return self._markdown(at + 1 if bang else at, bang, end) or m.end()
            return m.end() - 2  # rescan the last two brackets as a possible Markdown link
        return self._markdown(at + 1 if bang else at, bang, end) or m.end()

    def _add_wikilink(self, start: int, stop: int, inner: str, embed: bool) -> None:
        alias: str | None = None
        target = inner
        bar = inner.find("|")
        if bar >= 0:
            target, alias = inner[:bar], inner[bar + 1 :].strip()
            if target.endswith("\\"):  # [[Note\|alias]], as written inside a table
                target = target[:-1]
        name, heading, block = _split_subpath(target)
        name = name.strip()
        if not name and not heading and block is None:
            return
        self.links.append(
            ParsedLink(
                raw=self.text[start:stop],
                kind="wikilink",
                target_text=name,
                alias=alias,
                heading=heading,
                block=block,
                embed=embed,
                line=self.line_of(start),
            )
        )

    def _markdown(self, open_at: int, embed: bool, end: int) -> int | None:
        """Parse ``[text](destination "title")`` at ``open_at`` (CommonMark 6.3); returns the
        offset past it when it is a link (recorded only if internal), else ``None``."""
        text = self.text
        close = self._link_text_end(open_at + 1, end)
        if close is None or close + 1 >= end or text[close + 1] != "(":
            return None
        parsed = _link_destination(text, close + 2, end)
        if parsed is None:
            return None
        dest, stop = parsed
        start = open_at - 1 if embed else open_at
        if not dest or _SCHEME.match(dest) or dest.startswith("//"):
            return stop  # external (any URL scheme) or empty: not an internal link
        path, _, fragment = dest.partition("#")
        name = unquote(path).strip()
        heading: str | None = None
        block: str | None = None
        if fragment or dest.endswith("#"):
            _, heading, block = _split_subpath("#" + unquote(fragment))
        if not name and not heading and block is None:
            return stop
        label = _ESCAPABLE.sub(r"\1", text[open_at + 1 : close])
        self.links.append(
            ParsedLink(
                raw=text[start:stop],
                kind="markdown",
                target_text=name,
                alias=label,
                heading=heading,
                block=block,
                embed=embed,
                line=self.line_of(start),
            )
        )
        return stop

    def _link_text_end(self, pos: int, end: int) -> int | None:
        """Offset of the ``]`` closing link text that starts at ``pos``: brackets nest,
        backslash escapes and code spans are skipped (CommonMark 6.3 link text)."""
        text = self.text
        depth = 0
        while pos < end:
            ch = text[pos]
            if ch == "\\":
                pos += 2
                continue
            if ch == "`":
                run_end = pos
                while run_end < end and text[run_end] == "`":
                    run_end += 1
                nxt = self._code_span(pos, run_end - pos, end)
                pos = nxt
                continue
            if ch == "[":
                depth += 1
            elif ch == "]":
                if depth == 0:
                    return pos
                depth -= 1
            pos += 1
        return None


def _split_subpath(target: str) -> tuple[str, str | None, str | None]:
    """Split ``Note#Heading#Sub`` / ``Note#^block`` into name, heading and block."""
    name, sep, sub = target.partition("#")
    if not sep:
        return name, None, None
    parts = [p.strip() for p in sub.split("#")]
    block: str | None = None
    headings: list[str] = []
    for part in parts:
        if part.startswith("^"):
            block = part[1:].strip()
            break
        if part:
            headings.append(part)
    heading = "#".join(headings) if headings else None
    if block == "":
        block = None
    if heading is None and block is None:
        heading = ""  # "[[Note#]]": a bare '#' is an empty heading, still a link to Note
    return name, heading, block


def _link_destination(text: str, pos: int, end: int) -> tuple[str, int] | None:
    """Parse a CommonMark inline-link destination and optional title from ``pos`` (just after
    ``(``) up to ``)``. Returns the unescaped destination and the offset past ``)``."""
    n = min(end, len(text))
    while pos < n and text[pos] in " \t\n":
        pos += 1
    if pos >= n:
        return None
    if text[pos] == "<":
        close = pos + 1
        while close < n and text[close] not in "<>\n":
            close += 2 if text[close] == "\\" else 1
        if close >= n or text[close] != ">":
            return None
        dest = text[pos + 1 : close]
        pos = close + 1
    else:
        begin = pos
        depth = 0
        while pos < n:
            ch = text[pos]
            if ch == "\\" and pos + 1 < n:
                pos += 2
                continue
            if ch in " \t\n" or ord(ch) < 0x20:
                break
            if ch == "(":
                depth += 1
            elif ch == ")":
                if depth == 0:
                    break
                depth -= 1
            pos += 1
        if depth:
            return None
        dest = text[begin:pos]
    # Optional title, then ")".
    ws = pos
    while pos < n and text[pos] in " \t\n":
        pos += 1
    if pos < n and text[pos] in "\"'(" and pos > ws:
        closer = ")" if text[pos] == "(" else text[pos]
        pos += 1
        while pos < n and text[pos] != closer:
            pos += 2 if text[pos] == "\\" else 1
        if pos >= n:
            return None
        pos += 1
        while pos < n and text[pos] in " \t\n":
            pos += 1
    if pos >= n or text[pos] != ")":
        return None
    return _ESCAPABLE.sub(r"\1", dest), pos + 1


def parse_links(markdown: str) -> list[ParsedLink]:
    """Return the links written in ``markdown``, in order of appearance.

    ``markdown`` is a note's text, with or without its leading ``---`` frontmatter block
    (skipped; line numbers stay those of the text given). Recognised: every wikilink and
    Markdown-link form of Obsidian's ``Internal links.md`` and ``Embed files.md`` (see
    :class:`ParsedLink`). Not links: anything in inline code (backtick runs of any length,
    CommonMark 6.1), fenced code (```` ``` ```` / ``~~~``, longer fences, up to three spaces
    of indent, inside blockquotes and list items) or indented code blocks; ``%%comments%%``
    (to the next ``%%``, or the end of the note when unclosed, as Obsidian hides them);
    HTML comments; backslash-escaped brackets (``\\[\\[x\\]\\]``); Markdown links with a URL
    scheme (``https:``, ``mailto:``, ``obsidian:`` ...) or a protocol-relative ``//`` address.
    A Markdown link to ``#anchor`` is a same-note link (``target_text == ""``).

    Not recognised (by design): reference-style Markdown links, links in frontmatter
    properties, math blocks. Never raises on any ``str``.
    """
    return _Scanner(markdown).run()


# --------------------------------------------------------------------------------------------
# Resolution
# --------------------------------------------------------------------------------------------


def _key(path: str) -> str:
    """Comparison key of a path or name: NFC-normalised, then case-folded."""
    return unicodedata.normalize("NFC", path).casefold()


#: A drive (``C:/x``) is absolute everywhere; ``C:x`` only on Windows: elsewhere ``x:y.md``
#: is an ordinary file name (docs/design.md, Browsing and links).
_DRIVE_PATH = r"[A-Za-z]:" if os.name == "nt" else r"[A-Za-z]:(?:/|\\|$)"


def _check_path(path: str) -> str:
    if not isinstance(path, str) or not path:
        raise PathError(f"store path {path!r} is empty; give a relative POSIX path", rule="empty")
    if path.startswith("/") or re.match(_DRIVE_PATH, path):
        raise PathError(
            f"store path {path!r} is absolute; paths are relative to the store root",
            rule="absolute-path",
        )
    if "\x00" in path or (os.name == "nt" and "\\" in path):
        raise PathError(
            f"store path {path!r} contains a NUL or (on Windows) a backslash; use '/' separators",
            rule="separator",
        )
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise PathError(
            f"store path {path!r} has an empty, '.' or '..' segment; give a normalised path",
            rule="parent-traversal",
        )
    return path


class LinkResolver:
    """Resolve parsed links against every file of a store, as Obsidian does.

    :param paths: store-relative POSIX paths of all files of the store, notes (``.md``) and
        attachments alike (``"Folder/Note.md"``, ``"Attachments/img.png"``).
    :raises PathError: a path that is empty, absolute, holds a NUL, or has ``.``/``..``/empty
        segments (rule ``empty``, ``absolute-path``, ``separator``, ``parent-traversal``).

    Rules (``Internal links.md``; tie-break below):

    - Names and paths compare NFC-normalised and case-folded (Obsidian matches link paths
      case-insensitively). The ``.md`` extension is optional; another extension must be
      written (``[[Figure 1.png]]``).
    - ``[[#Heading]]`` / ``[t](#h)``: :attr:`~LinkResolution.SELF`, target = the source.
    - A target containing ``/`` is a path: from the vault root (a leading ``/`` is allowed),
      then relative to the source's folder (``./``, ``../``, as Markdown links written with
      "Relative path to file" need): :attr:`~LinkResolution.EXACT`. Otherwise it matches
      files whose path ends with ``/<target>`` (Obsidian resolves partial paths):
      :attr:`~LinkResolution.NAME`, or :attr:`~LinkResolution.AMBIGUOUS` when several do.
    - A bare name matches files of that name in any folder: one is
      :attr:`~LinkResolution.NAME`, several are :attr:`~LinkResolution.AMBIGUOUS`.
    - Several matches: the target is the one Obsidian's ``getFirstLinkpathDest`` returns:
      the file at exactly that vault path, else one in the source note's own folder (an
      ancestor folder counts for nothing), else the shortest path string, then the first
      in case-folded then code-point order. The help vault does not state this tie-break; it
      is Obsidian 1.13.7's observed behaviour (recorded in markdown-vault-mcp PR #1380).
    - A match that is not a ``.md`` file is :attr:`~LinkResolution.ATTACHMENT` and its target
      is the attachment's path, so a map can name it; attachments are never page nodes.
    - No match is :attr:`~LinkResolution.MISSING` (target ``None``), whatever the extension.
      A name matching only a note's frontmatter ``aliases`` is missing too (``Aliases.md``:
      Obsidian writes ``[[Artificial Intelligence|AI]]``, never ``[[AI]]``).
    """

    def __init__(self, paths: Iterable[str]) -> None:
        self._by_path: dict[str, list[str]] = {}
        self._by_name: dict[str, list[str]] = {}
        self._suffix_cache: dict[str, list[str]] = {}
        for path in paths:
            _check_path(path)
            key = _key(path)
            bucket = self._by_path.setdefault(key, [])
            if path not in bucket:
                bucket.append(path)
                self._by_name.setdefault(key.rsplit("/", 1)[-1], []).append(path)

    def resolve(self, link: ParsedLink, source: str) -> Link:
        """Resolve ``link`` written in the note at ``source`` (a store-relative path).

        :returns: a :class:`~goat_core.contract.Link` with ``target`` (a page id, an attachment
            path, or ``None``) and ``resolution``; the other fields are copied from ``link``.
        """
        target, resolution = self.resolve_target(link.target_text, source)
        return Link(
            raw=link.raw,
            kind=link.kind,
            target_text=link.target_text,
            target=target,
            alias=link.alias,
            heading=link.heading,
            block=link.block,
            embed=link.embed,
            line=link.line,
            resolution=resolution,
        )

    def resolve_target(self, target_text: str, source: str) -> tuple[str | None, LinkResolution]:
        """Resolve a decoded link target (no heading or block) written in ``source``."""
        text = target_text.strip()
        if not text:
            return source, LinkResolution.SELF
        rooted = text.startswith("/")
        text = text.lstrip("/")
        if not text:
            return None, LinkResolution.MISSING
        key = _key(text)
        src_dir = posixpath.dirname(source)
        wanted = [key + ".md", key] if not key.endswith(".md") else [key, key + ".md"]
        relative = text.startswith(("./", "../"))
        if "/" in text or rooted:
            for candidate_key in wanted:
                hits = self._by_path.get(candidate_key)
                if hits:
                    return self._finish(hits, candidate_key, src_dir, LinkResolution.EXACT)
            if not rooted:
                joined = posixpath.normpath(posixpath.join(_key(src_dir), key))
                if not joined.startswith("../") and joined != "..":
                    rel = [joined + ".md", joined] if not joined.endswith(".md") else [joined]
                    for candidate_key in rel:
                        hits = self._by_path.get(candidate_key)
                        if hits:
                            return self._finish(hits, candidate_key, src_dir, LinkResolution.EXACT)
            if rooted or relative:
                return None, LinkResolution.MISSING
            for candidate_key in wanted:
                hits = self._suffix_matches(candidate_key)
                if hits:
                    return self._finish(hits, candidate_key, src_dir, LinkResolution.NAME)
            return None, LinkResolution.MISSING
        for candidate_key in wanted:
            hits = self._by_name.get(candidate_key)
            if hits:
                return self._finish(hits, candidate_key, src_dir, LinkResolution.NAME)
        return None, LinkResolution.MISSING

    def _suffix_matches(self, key: str) -> list[str]:
        cached = self._suffix_cache.get(key)
        if cached is None:
            name = key.rsplit("/", 1)[-1]
            tail = "/" + key
            cached = [p for p in self._by_name.get(name, ()) if _key(p).endswith(tail)]
            self._suffix_cache[key] = cached
        return cached

    @staticmethod
    def _finish(
        hits: list[str], key: str, src_dir: str, single: LinkResolution
    ) -> tuple[str, LinkResolution]:
        if len(hits) == 1:
            chosen = hits[0]
            resolution = single
        else:
            src_key = _key(src_dir)

            def rank(path: str) -> tuple[bool, bool, int, str, str]:
                k = _key(path)
                return (
                    k != key,
                    _key(posixpath.dirname(path)) != src_key,
                    len(path),
                    k,
                    path,
                )

            chosen = min(hits, key=rank)
            resolution = LinkResolution.AMBIGUOUS
        if not chosen.lower().endswith(".md"):
            return chosen, LinkResolution.ATTACHMENT
        return chosen, resolution


# --------------------------------------------------------------------------------------------
# Map and connections
# --------------------------------------------------------------------------------------------


class LinkIndex:
    """Every note's resolved links, built once; answers the map and connections.

    :param pages: each page's summary (``id`` = the note's store-relative path with ``.md``)
        and its text (frontmatter optional).
    :param paths: all file paths of the store (notes and attachments); defaults to the page
        ids, so links to attachments are then missing.

    A page id or path :class:`LinkResolver` would refuse is left out and reported in
    :attr:`skipped` (and the map's ``degraded``): one bad name never breaks the map of the
    rest of the store (docs/design.md, Browsing and links).
    """

    def __init__(
        self, pages: Iterable[tuple[PageSummary, str]], paths: Iterable[str] | None = None
    ) -> None:
        page_list: list[tuple[PageSummary, str]] = []
        #: why each left-out page or file was left out, one line each
        self.skipped: list[str] = []
        self.pages: dict[str, PageSummary] = {}
        for summary, body in pages:
            if self._usable(summary.id):
                page_list.append((summary, body))
                self.pages[summary.id] = summary
        extra = [] if paths is None else [p for p in paths if p in self.pages or self._usable(p)]
        self.resolver = LinkResolver([*extra, *self.pages])
        self.links: dict[str, tuple[Link, ...]] = {}
        for summary, body in page_list:
            self.links[summary.id] = tuple(
                self.resolver.resolve(p, summary.id) for p in parse_links(body)
            )
        self._backlinks: dict[str, list[Edge]] | None = None

    def _usable(self, path: str) -> bool:
        try:
            _check_path(path)
        except PathError as exc:
            self.skipped.append(f"left out of the link map: {exc.message}")
            return False
        return True

    def edges(self) -> Iterator[Edge]:
        """Every link as an edge, pages in path order, links in order of appearance."""
        for page_id in sorted(self.links):
            for link in self.links[page_id]:
                yield Edge(
                    source=page_id, target=link.target, raw=link.raw, resolution=link.resolution
                )

    def link_map(self) -> LinkMap:
        """All pages as nodes (ordered by id) and every link as an edge (attachment edges
        carry the attachment path as target; missing ones ``None``; same-note links are
        self-edges with resolution ``self``)."""
        nodes = tuple(self.pages[k] for k in sorted(self.pages))
        return LinkMap(nodes=nodes, edges=tuple(self.edges()), degraded=tuple(self.skipped))

    def connections(self, page_id: str) -> Connections:
        """The page's outgoing links and its backlinks: edges from *other* pages whose target
        is this page (same-note links are outgoing only).

        :raises NotFound: no page with that id.
        """
        page = self.pages.get(page_id)
        if page is None:
            raise NotFound(f"no page {page_id!r} in the link map")
        if self._backlinks is None:
            back: dict[str, list[Edge]] = {}
            for edge in self.edges():
                if edge.target is not None and edge.target != edge.source:
                    back.setdefault(edge.target, []).append(edge)
            self._backlinks = back
        return Connections(
            page=page,
            outgoing=self.links.get(page_id, ()),
            backlinks=tuple(self._backlinks.get(page_id, ())),
        )


def build_link_map(
    pages: Iterable[tuple[PageSummary, str]], paths: Iterable[str] | None = None
) -> LinkMap:
    """The :class:`~goat_core.contract.LinkMap` of ``pages`` (see :class:`LinkIndex`)."""
    return LinkIndex(pages, paths).link_map()


def connections(
    pages: LinkIndex | Iterable[tuple[PageSummary, str]],
    page_id: str,
    paths: Iterable[str] | None = None,
) -> Connections:
    """Outgoing links and backlinks of ``page_id``; ``pages`` is a built :class:`LinkIndex`
    (cheap, reuse it for many pages) or the pages with their texts (see :class:`LinkIndex`).

    :raises NotFound: no page with that id.
    """
    index = pages if isinstance(pages, LinkIndex) else LinkIndex(pages, paths)
    return index.connections(page_id)
