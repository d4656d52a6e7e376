"""Heading-section chunks of a note, what the vector index embeds.

A note is cut at its Markdown headings (``#`` and ``##`` at the start of a line, outside
fenced code; deeper headings stay inside their section). Each section becomes one chunk, or
several when it is longer than :data:`CHUNK_CHARS` (cut at a blank line, else a line end,
else a space). What is embedded is the chunk's *context* (the note title and the heading
path, plus the description for the first chunk) followed by the first :data:`EMBED_CHARS`
characters of its text, so a section that never repeats the note's subject is still found by
it, and the cost of embedding stays near one short model window per section.
``start``/``end`` are offsets into the body, for the snippet. :func:`note_text` is what is
embedded once more per note, its title and description: the row that says what the whole
note is about (``goat_core/filestore/search/_vectors.py`` weighs it beside the best chunk).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Longest chunk in characters; a longer section is cut in several chunks.
CHUNK_CHARS = 4000
#: Headings at this level or above start a chunk (deeper ones stay inside their section).
SPLIT_LEVEL = 2
#: Characters of a chunk's text that are embedded (about 128 word pieces of English with its
#: context, the window small sentence encoders were trained on).
EMBED_CHARS = 480

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Chunk:
    """One piece of a note: ``body[start:end]``, the headings above it, and what to embed."""

    start: int
    end: int
    heading: str
    embed_text: str


def _sections(body: str) -> list[tuple[int, int, list[str]]]:
    """``(start, end, heading path)`` of each heading section (the text before the first
    heading is a section with an empty path)."""
    out: list[tuple[int, int, list[str]]] = []
    path: list[tuple[int, str]] = []
    start = 0
    fenced = False
    pos = 0
    current: list[str] = []
    for line in body.splitlines(keepends=True):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            m = _HEADING.match(line.rstrip("\r\n"))
            if m and len(m.group(1)) <= SPLIT_LEVEL:
                out.append((start, pos, current))
                level = len(m.group(1))
                path = [(lv, t) for lv, t in path if lv < level] + [(level, m.group(2).strip())]
                current = [t for _, t in path]
                start = pos
        pos += len(line)
    out.append((start, len(body), current))
    return [(s, e, h) for s, e, h in out if body[s:e].strip()]


def _split(body: str, start: int, end: int, size: int) -> list[tuple[int, int]]:
    pieces: list[tuple[int, int]] = []
    while end - start > size:
        window = body[start : start + size]
        cut = -1
        for sep in ("\n\n", "\n", " "):
            cut = window.rfind(sep, size // 2)
            if cut > 0:
                break
        cut = size if cut <= 0 else cut + 1
        pieces.append((start, start + cut))
        start += cut
    pieces.append((start, end))
    return [(s, e) for s, e in pieces if body[s:e].strip()]


def chunk_note(
    title: str, body: str, description: str = "", *, size: int = CHUNK_CHARS
) -> list[Chunk]:
    """The chunks of one note (at least one, the title alone for an empty body)."""
    chunks: list[Chunk] = []
    for s, e, headings in _sections(body):
        for ps, pe in _split(body, s, e, size):
            context = [title, *headings]
            if not chunks and description:
                context.append(description)
            text = " ".join(body[ps : ps + EMBED_CHARS * 2].split())[:EMBED_CHARS]
            chunks.append(
                Chunk(
                    ps, pe, " > ".join(headings), ". ".join(c for c in context if c) + "\n" + text
                )
            )
    if not chunks:
        chunks.append(Chunk(0, 0, "", ". ".join(c for c in (title, description) if c)))
    return chunks


def note_text(title: str, description: str = "") -> str:
    """What a note's own vector embeds: its title, then its description when it has one."""
    return ". ".join(c for c in (title, description) if c)
