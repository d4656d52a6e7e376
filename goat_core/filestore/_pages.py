"""Pages of a folder of Markdown files: reading, naming, resolving and listing them.

What every file-based provider (markdown, wiki) does with the notes under its store root,
written once:

- **Reading**: :func:`read_note` reads and parses one file into a :class:`StoredNote`
  (content hash, title from frontmatter ``title`` else the file name, unparsable frontmatter
  or invalid UTF-8 kept as ``error``); :func:`refresh_notes` re-reads only the files whose
  ``(mtime_ns, size)`` changed; :func:`to_page` turns a note into a :class:`~goat_core.contract.
  Page`.
- **Resolving**: :func:`resolve_page_ref` finds the one page a user's reference names (path,
  frontmatter ``id``, path without ``.md``, then a unique title or file name ignoring case),
  :func:`ambiguous_pages` builds the error listing several candidates.
- **Listing**: :func:`page_window` cuts one page of a listing ordered by :func:`page_order`,
  continued by an opaque cursor (:func:`encode_cursor`, :func:`decode_cursor`).
- **Indexing**: :func:`open_search_index`, :func:`indexed_doc` and :func:`degraded_reasons`
  for a store's :class:`~goat_core.filestore.search.SearchIndex`.
- **Naming**: :func:`generated_title` titles untitled text by its first words.

Nothing here knows a provider: messages name the store as the caller says (``store``,
``wiki``; :meth:`~goat_core.contract.Provider.label`).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import os
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from goat_core.contract import Health, Page, PageSummary, RecallItem
from goat_core.errors import Ambiguous, BadInput, NotFound, PathError, TooLarge
from goat_core.fileio import contain, etag, shown_name
from goat_core.filestore._frontmatter import jsonable, parse_note

# Pages use the search index (never the reverse), imported where first needed: it loads
# sqlite3, which a caller that only reads or names notes never needs.
if TYPE_CHECKING:
    from goat_core.filestore.search import IndexedDoc, SearchHit, SearchIndex

#: A generated title keeps at most this many words of the text ...
TITLE_WORDS = 8
#: ... and at most this many characters.
TITLE_CHARS = 60
#: A recall item's ``text`` holds at most this many characters of the note's body.
RECALL_TEXT_CHARS = 2000
#: Markdown markup dropped from text before it is titled (headings, quotes, emphasis, code,
#: link brackets).
MARKUP_CHARS = "#>*_`[]"

#: What page resolution needs of a note: ``(path, title, frontmatter id or None)``.
PageRef = tuple[str, str, str | None]

#: A :class:`StoredNote` or a provider's subclass of it.
N = TypeVar("N", bound="StoredNote")

#: Frontmatter keys never copied into an indexed document's ``extra`` text.
_NOT_EXTRA = frozenset({"title", "aliases", "tags", "id", "created", "updated"})
#: English month names, for dates written out in words (:func:`date_words`).
_MONTHS = (
    "January February March April May June July August September October November December"
).split()
_ISO_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})(?![0-9])")


def calendar_date(value: object) -> date | None:
    """The calendar date of a ``date``, a ``datetime`` or a string that starts with an ISO
    8601 date (``2023-03-27``, ``2023-03-27T13:10:00Z``); ``None`` for anything else, an
    impossible date included. The date is the one written: no time zone is applied."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str) and (m := _ISO_DATE.match(value.strip())):
        try:
            return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            return None
    return None


def date_words(value: object) -> str:
    """:func:`calendar_date` in words, ``27 March 2023``; ``""`` where it is ``None``."""
    when = calendar_date(value)
    if when is None:
        return ""
    return f"{when.day} {_MONTHS[when.month - 1]} {when.year}"


def nfc(text: str) -> str:
    """Unicode NFC: how titles and references are compared (macOS writes NFD names)."""
    return unicodedata.normalize("NFC", text)


def fold(text: str) -> str:
    """NFC plus case folding: the case-insensitive key of titles and paths."""
    return nfc(text).casefold()


def now_utc() -> datetime:
    """The current UTC time to the second (frontmatter ``created``/``updated``)."""
    return datetime.now(UTC).replace(microsecond=0)


def file_stem(rel: str) -> str:
    """The file name of a store-relative path without ``.md`` (any case): ``a/B.md`` -> ``B``."""
    name = rel.rsplit("/", 1)[-1]
    return name[:-3] if name.lower().endswith(".md") else name


def str_list(value: Any) -> list[str]:
    """A frontmatter value (``tags``, ``aliases``) as strings: ``None`` -> ``[]``, a string
    -> ``[it]``, a list -> its non-null items as text, anything else -> ``[str(it)]``."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [str(v) for v in value if v is not None]
    return [str(value)]


def page_order(path: str) -> tuple[str, str]:
    """Page order: by path case-insensitively, ties by exact path (as ``walk_notes``)."""
    return (path.casefold(), path)


# -- reading --------------------------------------------------------------------------------


@dataclass
class StoredNote:
    """One note file as read: store-relative ``path``, the ``(mtime_ns, size)`` it was read
    at, ``etag`` (content hash of the bytes), ``title`` (NFC), parsed frontmatter ``data``,
    ``body`` (after the frontmatter), ``text`` (the whole file decoded, invalid UTF-8
    replaced) and ``error`` (why the frontmatter or encoding was not understood; the note is
    then read as body and must never be rewritten)."""

    path: str
    mtime_ns: int
    size: int
    etag: str
    title: str
    data: dict[str, Any]
    body: str
    text: str
    error: str | None

    @property
    def fm_id(self) -> str | None:
        """Frontmatter ``id`` as text, if any."""
        value = self.data.get("id")
        return str(value) if value is not None else None

    def summary(self) -> PageSummary:
        """The listing entry: ``updated`` from frontmatter (naive read as UTC), else mtime."""
        updated = self.data.get("updated")
        if not isinstance(updated, datetime):
            updated = datetime.fromtimestamp(self.mtime_ns / 1e9, UTC)
        elif updated.tzinfo is None:
            updated = updated.replace(tzinfo=UTC)
        return PageSummary(
            id=self.path, title=self.title, path=self.path, etag=self.etag, updated=updated
        )


def read_note(
    root: Path, rel: str, mtime_ns: int = 0, size: int = 0, *, noun: str = "note"
) -> StoredNote | None:
    """Read and parse ``root / rel``; ``None`` if it vanished or is unreadable.

    ``mtime_ns``/``size``: from the walk that found it (``0``: stat it here). The title is
    frontmatter ``title`` (a string or number, not blank) else the file stem, as Obsidian
    shows it. Bytes that are not UTF-8 set ``error`` to ``"<noun> is not valid UTF-8"``
    (unless the frontmatter error came first); a literal U+FFFD in the file does not.
    """
    path = root / rel
    try:
        raw = path.read_bytes()
        if not mtime_ns:
            st = os.stat(path)
            mtime_ns, size = st.st_mtime_ns, st.st_size
    except OSError:
        return None
    text = raw.decode("utf-8", "replace")
    parsed = parse_note(text)
    error = parsed.error
    if error is None and "\ufffd" in text and b"\xef\xbf\xbd" not in raw:
        error = f"{noun} is not valid UTF-8"
    value = parsed.data.get("title")
    title = (
        nfc(str(value))
        if isinstance(value, str | int | float) and str(value).strip()
        else nfc(file_stem(rel))
    )
    return StoredNote(
        path=rel,
        mtime_ns=mtime_ns,
        size=size,
        etag=etag(raw),
        title=title,
        data=parsed.data,
        body=parsed.body,
        text=text,
        error=error,
    )


def refresh_notes(
    files: Iterable[Any],
    cache: dict[str, N],
    load: Callable[[str, int, int], N | None],
) -> list[N]:
    """Every file of a walk as a note, re-reading (``load(path, mtime_ns, size)``) only those
    whose ``(mtime_ns, size)`` differ from ``cache``; ``cache`` is updated in place and loses
    the files no longer walked. ``files``: items with ``path``, ``mtime_ns`` and ``size``.
    Unreadable files are left out."""
    notes: list[N] = []
    seen = set()
    for f in files:
        seen.add(f.path)
        cached = cache.get(f.path)
        if cached is not None and (cached.mtime_ns, cached.size) == (f.mtime_ns, f.size):
            notes.append(cached)
            continue
        note = load(f.path, f.mtime_ns, f.size)
        if note is not None:
            cache[f.path] = note
            notes.append(note)
    for gone in set(cache) - seen:
        del cache[gone]
    return notes


def to_page(note: StoredNote, provenance_keys: Sequence[str]) -> Page:
    """The :class:`~goat_core.contract.Page` of a note; ``provenance`` holds the frontmatter
    values of ``provenance_keys`` that are present, plus ``error`` for an unparsable note."""
    data = note.data
    provenance: dict[str, Any] = {k: jsonable(data[k]) for k in provenance_keys if k in data}
    if note.error:
        provenance["error"] = note.error
    return Page(
        id=note.path,
        title=note.title,
        path=note.path,
        frontmatter=jsonable(data),
        body=note.body,
        etag=note.etag,
        provenance=provenance,
        frontmatter_text=note.text[: len(note.text) - len(note.body)],
    )


# -- resolving ------------------------------------------------------------------------------


def ambiguous_pages(ref: str, paths: Iterable[str]) -> Ambiguous:
    """The error for a reference several pages match: candidates in page order."""
    ordered = sorted(paths, key=page_order)
    return Ambiguous(
        f"{len(ordered)} pages match {ref!r}: {', '.join(ordered)}; use a path",
        candidates=ordered,
    )


def resolve_page_ref(
    ref: str,
    refs: Iterable[PageRef],
    *,
    root: Path,
    where: str,
    shared_ids_ambiguous: bool = True,
    exact_paths: bool = False,
    aliases: Callable[[], Mapping[str, Sequence[str]]] | None = None,
) -> str:
    """The path of the one page ``ref`` names, tried in order: its exact path (NFC), a unique
    frontmatter ``id``, the path plus ``.md``, the path ignoring case (when ``ref`` has a
    ``/`` or ends in ``.md``), a unique title or file name ignoring case (NFC; a trailing
    ``.md`` is dropped), as Obsidian's quick switcher matches names, then a unique
    frontmatter alias ignoring case (NFC).

    A title or file name wins over an alias: Obsidian resolves ``[[X]]`` to the note named
    ``X`` even when another note lists ``X`` among its ``aliases`` (aliases only offer a note
    in the link suggester and the quick switcher, they never take a name over), and a lookup
    that finds a page by its title must keep finding it when some other note gains that
    alias. So an alias is looked at only when no title or file name matches; two pages
    sharing it are :class:`Ambiguous`.

    :param refs: ``(path, title, frontmatter id)`` of every page.
    :param root: the store root (a path-like reference must stay inside it).
    :param where: how the store is named in :class:`NotFound` (``Provider.label()``).
    :param shared_ids_ambiguous: when several pages carry ``ref`` as their ``id``, raise
        :class:`Ambiguous` listing them (``False``: fall through to titles and names).
    :param aliases: called only when no title or name matched: ``path -> frontmatter
        aliases`` (a list or a single string as Obsidian reads them, :func:`str_list`).
    :param exact_paths: for destructive operations (``forget``): a reference written as a
        path (a ``/`` or a trailing ``.md``) that names no page is :class:`NotFound`, never
        matched by title or file name elsewhere, so repeating a forget cannot remove a
        same-named page in another folder.
    :raises BadInput: an empty reference. :raises PathError: an unsafe path (traversal,
        absolute...). :raises Ambiguous: several pages match. :raises NotFound: none does.
    """
    if not isinstance(ref, str) or not ref.strip():
        raise BadInput("page reference is empty")
    ref = nfc(ref.strip())
    items = list(refs)
    paths = {nfc(p): p for p, _t, _i in items}
    if ref in paths:
        return paths[ref]
    with_id = [p for p, _t, i in items if i == ref]
    if len(with_id) == 1:
        return with_id[0]
    if f"{ref}.md" in paths:
        return paths[f"{ref}.md"]
    if "/" in ref or ref.lower().endswith(".md"):
        try:
            contain(root, ref)  # an unsafe reference is refused with its rule, not "missing"
        except PathError:
            # ... unless it is a title as remember accepted it (``../x`` is ``-x.md``)
            titled = _by_exact_title(ref, items)
            if titled is None:
                raise
            return titled
        folded = fold(ref if ref.lower().endswith(".md") else f"{ref}.md")
        hits = [p for n, p in paths.items() if fold(n) == folded]
        if len(hits) == 1:
            return hits[0]
        if hits:
            raise ambiguous_pages(ref, hits)
        if exact_paths:
            # a title that looks like a path (``.obsidian/x``, ``~/x``) names its own note,
            # never a same-named file elsewhere
            found = _by_exact_title(ref, items)
            if found is None:
                raise NotFound(f"no page at path {ref!r} in {where}")
            return found
    key = fold(ref[:-3] if ref.lower().endswith(".md") else ref)
    matches = [p for p, t, _i in items if fold(t) == key or fold(file_stem(p)) == key]
    if shared_ids_ambiguous and len(with_id) > 1:
        matches = with_id
    if not matches and aliases is not None:
        key = fold(ref)
        matches = [p for p, names in aliases().items() if any(fold(a) == key for a in names)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise ambiguous_pages(ref, matches)
    raise NotFound(f"no page matches {ref!r} in {where}")


def _by_exact_title(ref: str, items: Sequence[PageRef]) -> str | None:
    """The one page whose title is ``ref`` (ignoring case, NFC), ``None`` when none is.

    Titles round-trip (docs/design.md, Writes and outcomes): whatever ``remember`` accepted as
    a title finds its note, even when it reads as a path (``../x``, ``.git/config``).
    :raises Ambiguous: several pages carry that title.
    """
    key = fold(ref)
    hits = [p for p, t, _i in items if fold(t) == key]
    if len(hits) > 1:
        raise ambiguous_pages(ref, hits)
    return hits[0] if hits else None


# -- listing --------------------------------------------------------------------------------


def encode_cursor(path: str) -> str:
    """The cursor continuing a listing after ``path``: unpadded URL-safe base64 of its UTF-8
    (a name that is not UTF-8: of its bytes, as :func:`os.fsencode` gives them)."""
    raw = path.encode("utf-8", "surrogateescape")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str, *, issuer: str = "store") -> str:
    """The path a cursor of :func:`encode_cursor` continues after.

    Strict: only the URL-safe alphabet, no padding, canonical (re-encoding gives the same
    text) and not empty, so a mistyped or foreign cursor is refused rather than silently
    restarting the listing (lenient base64 decoding drops non-alphabet characters).

    :raises BadInput: ``invalid page cursor '<cursor>': not one this <issuer> issued``.
    """
    try:
        if not cursor:
            raise ValueError("empty cursor")
        padded = cursor + "=" * (-len(cursor) % 4)
        raw = base64.b64decode(padded.encode("ascii"), altchars=b"-_", validate=True)
        path = raw.decode("utf-8", "surrogateescape")
        if encode_cursor(path) != cursor:
            raise ValueError("cursor is not canonical")
    except (binascii.Error, UnicodeError, ValueError) as exc:
        raise BadInput(f"invalid page cursor {cursor!r}: not one this {issuer} issued") from exc
    return path


def page_window(
    ordered: Sequence[str], limit: int, cursor: str | None, *, issuer: str = "store"
) -> tuple[list[str], bool, str | None]:
    """One page of a listing of ``ordered`` (paths in :func:`page_order`): at most ``limit``
    paths after the cursor's path (a path since removed still places the cursor), whether
    more follow, and the cursor for the next page (``None`` at the end).

    :raises BadInput: a cursor :func:`decode_cursor` refuses.
    """
    start = 0
    if cursor is not None:
        after = page_order(decode_cursor(cursor, issuer=issuer))
        start = bisect.bisect_right(ordered, after, key=page_order)
    chunk = list(ordered[start : start + limit])
    more = start + limit < len(ordered)
    return chunk, more, encode_cursor(chunk[-1]) if more and chunk else None


def check_list_limit(limit: int) -> None:
    """:raises BadInput: a listing ``limit`` outside 1..1000."""
    if not 1 <= limit <= 1000:
        raise BadInput(f"limit must be between 1 and 1000, got {limit}")


def page_summaries(
    paths: Iterable[str], load: Callable[[str], StoredNote | None]
) -> tuple[list[PageSummary], list[str]]:
    """The listing entries of ``paths`` (each read with ``load``, in order) and a
    ``<path>: skipped, not readable`` line for each that ``load`` could not read."""
    items: list[PageSummary] = []
    unreadable: list[str] = []
    for rel in paths:
        note = load(rel)
        if note is None:
            unreadable.append(f"{rel}: skipped, not readable")
        else:
            items.append(note.summary())
    return items, unreadable


# -- indexing -------------------------------------------------------------------------------


def open_search_index(path: Path) -> SearchIndex:
    """The store's search index at ``path`` (``GoatHome.index_path``), its folder created
    private (0700) when missing."""
    from goat_core.filestore.search import SearchIndex

    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    return SearchIndex(path)


def indexed_doc(
    note: StoredNote, *, description_keys: Sequence[str] = ("description",)
) -> IndexedDoc:
    """What the search index holds for a note: title, body, ``aliases``/``alias``,
    ``tags``/``tag``, frontmatter ``id`` and the parse problem; ``description`` from the
    first of ``description_keys`` with a value (a string, else empty); ``extra``: the other
    scalar frontmatter values as text (never ``title``, ``aliases``, ``tags``, ``id``,
    ``created``, ``updated`` or ``description_keys[0]``), and every date among them and in
    ``created`` in words and as an ISO date (:func:`date_words`: ``27 March 2023
    2023-03-27``), so ``March 2023`` and ``2023-03-27`` find a note created then."""
    from goat_core.filestore.search import IndexedDoc

    data = note.data
    skip = _NOT_EXTRA | set(description_keys[:1])
    extra: list[str] = []
    for k, v in data.items():
        if k in skip and k != "created":
            continue
        texts = []  # the value as written (``created`` never), then its date
        if k != "created" and isinstance(v, str | int | float) and not isinstance(v, bool):
            texts.append(str(v))
        if (k == "created" or isinstance(v, date | str)) and (when := calendar_date(v)):
            texts.append(date_words(when))
            if when.isoformat() not in [t.strip() for t in texts]:  # "2024-01-05T10:00" too
                texts.append(when.isoformat())
        extra += texts
    description: Any = None
    for key in description_keys:
        description = data.get(key)
        if description:
            break
    return IndexedDoc(
        path=note.path,
        title=note.title,
        body=note.body,
        description=str(description) if isinstance(description, str) else "",
        aliases=tuple(str_list(data.get("aliases") or data.get("alias"))),
        tags=tuple(str_list(data.get("tags") or data.get("tag"))),
        extra=" ".join(extra),
        ident=note.fm_id,
        problem=note.error,
    )


def index_loader(
    load: Callable[[str], N | None],
    cache: dict[str, N],
    to_doc: Callable[[N], IndexedDoc],
) -> Callable[[str], IndexedDoc | None]:
    """The loader :meth:`~goat_core.filestore.search.SearchIndex.sync` calls for each new or changed
    file: reads it with ``load`` (``None``: unreadable), refreshes its entry in ``cache`` if
    it has one (so a link-map cache needs no second parse), and returns ``to_doc(note)``."""

    def loader(rel: str) -> IndexedDoc | None:
        note = load(rel)
        if note is None:
            return None
        if rel in cache:
            cache[rel] = note
        return to_doc(note)

    return loader


def index_note(index: SearchIndex, note: StoredNote, doc: IndexedDoc) -> None:
    """Put one note just written into the index as ``doc``, at the ``(mtime_ns, size)`` it
    was read at (the next change scan then skips it)."""
    from goat_core.filestore.search import FileStat

    index.update_one(doc, FileStat(note.path, note.mtime_ns, note.size))


def check_recall_args(query: str, limit: int) -> None:
    """:raises BadInput: ``limit`` outside 1..100 or a blank query."""
    if not 1 <= limit <= 100:
        raise BadInput(f"limit must be between 1 and 100, got {limit}")
    if not query.strip():
        raise BadInput("query is empty")


def recall_item(hit: SearchHit, note: StoredNote | None, *, source: str | None) -> RecallItem:
    """A recall result for an index hit: path as id, the hit's title, score and snippet,
    ``text`` the first :data:`RECALL_TEXT_CHARS` characters of the note's stripped body
    (``None`` when the note could not be read)."""
    return RecallItem(
        id=hit.path,
        title=hit.title,
        path=hit.path,
        score=float(hit.score),
        snippet=hit.snippet,
        snippet_spans=hit.spans,
        text=note.body.strip()[:RECALL_TEXT_CHARS] if note is not None else None,
        source=source,
    )


def degraded_reasons(
    problems: Iterable[tuple[str, str]], skipped: Iterable[tuple[str, str]]
) -> list[str]:
    """``degraded`` lines: unparsable notes (``<path>: <problem>; read as body``) first, then
    files the walk skipped (``<path>: skipped, <reason>``)."""
    reasons = [f"{shown_name(path)}: {problem}; read as body" for path, problem in problems]
    reasons += [f"{shown_name(path)}: skipped, {reason}" for path, reason in skipped]
    return reasons


def unsearched_reasons(unsearched: Mapping[str, str]) -> list[str]:
    """``degraded`` lines for the files a sync found but could not index
    (``SearchIndex.unsearched``): ``<path>: not searched, <why>``, in path order. A name
    that is not UTF-8 is written with its bytes escaped (``bad\\xffname.md``), so the
    line encodes as text and as JSON."""
    return [f"{shown_name(path)}: not searched, {unsearched[path]}" for path in sorted(unsearched)]


#: Skip reasons of entries whose notes a listing still shows (a link to a folder listed under
#: its own path, the link closing a cycle) or that hold none (a broken symlink).
_NOTHING_WITHHELD = ("already listed there", "symlink cycle", "broken symlink")


def withheld(skipped: Iterable[tuple[str, str]]) -> list[str]:
    """The paths of skipped entries whose notes a listing leaves out: a symlink that points
    outside the store, an unreadable file or folder. A page list with any is not complete
    (docs/design.md, Browsing and links: ``complete`` only with nothing skipped)."""
    return [path for path, why in skipped if not any(n in why for n in _NOTHING_WITHHELD)]


# -- writing and health ---------------------------------------------------------------------


def checked_text(text: str, max_chars: int, *, noun: str = "store") -> str:
    """Text to remember, with CRLF line ends made LF.

    :raises TooLarge: over ``max_chars`` characters (``ProviderSpec.max_input_chars``).
    :raises BadInput: empty or whitespace only.
    """
    if len(text) > max_chars:
        raise TooLarge(
            f"text is {len(text)} characters; this {noun} accepts at most "
            f"{max_chars}; nothing was stored"
        )
    if not text.strip():
        raise BadInput("nothing to remember: the text is empty")
    return text.replace("\r\n", "\n")


def generated_title(text: str, *, markup: str = MARKUP_CHARS) -> str:
    """A title for untitled text: its first :data:`TITLE_WORDS` words after dropping the
    ``markup`` characters, cut to whole words within :data:`TITLE_CHARS` (a single longer
    first word is cut to that length), NFC; ``""`` for text of markup only."""
    words = re.sub(f"[{re.escape(markup)}]+", " ", text).split() if markup else text.split()
    title = ""
    for word in words[:TITLE_WORDS]:
        candidate = f"{title} {word}".strip()
        if len(candidate) > TITLE_CHARS:
            break
        title = candidate
    if not title and words:
        title = words[0][:TITLE_CHARS]
    return nfc(title)


def folder_health(root: Path, *, noun: str, healthy: str, index_path: Path | None = None) -> Health:
    """Broken when the store folder ``root`` is missing or not readable (``<noun> folder
    <root> is missing``); ``warn`` (still ``ok``: reads work) when it, or the folder of its
    search index under the GOAT home (``index_path``), cannot be written now: on a disk that
    is full or read-only, or without write permission (docs/design.md, Writes and outcomes);
    else healthy with the message ``healthy``."""
    from goat_core.contract import Tone
    from goat_core.filestore.search._faults import unwritable_reason

    if not root.is_dir():
        return Health.broken(f"{noun} folder {root} is missing")
    if not os.access(root, os.R_OK | os.X_OK):
        return Health.broken(f"{noun} folder {root} is not readable")
    found = []
    if why := unwritable_reason(root):
        found.append(f"{noun} folder {root} is {why}")
    if index_path is not None:
        if why := unwritable_reason(index_path.parent):
            found.append(f"search index folder {index_path.parent} (GOAT home) is {why}")
        elif index_path.is_file() and not os.access(index_path, os.W_OK):
            found.append(f"search index {index_path} (GOAT home) is read-only")
    if found:
        reason = f"{healthy}; cannot be written: {'; '.join(found)} (reads work, writes fail)"
        return Health(ok=True, tone=Tone.WARN, reason=reason)
    return Health.healthy(healthy)
