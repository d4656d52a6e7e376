"""Lint: what is wrong with a wiki (links, anchors, orphans, index and log drift, stale or
missing sources, folders the schema does not define, footnotes, taken names), and the
deterministic fixes (rebuild the index, qualify bare links, unescape alias pipes outside
tables).
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goat_core import filestore
from goat_core.contract import LinkResolution, MemoryWrite
from goat_core.errors import Rejected, StoreUnwritable
from goat_core.filestore import MISSING_ETAG, atomic_write, current_etag, etag, walk_notes
from goat_wiki import text as wt
from goat_wiki.ingest import WikiSources, origin_changed
from goat_wiki.layout import Layout, Scan, Schema, WikiNote, str_or_items

if TYPE_CHECKING:
    from goat_core.filestore import LinkResolver, ParsedLink

__all__ = ["Finding", "LintReport", "WikiLint"]
_sort_key = filestore.page_order


@dataclass(frozen=True)
class Finding:
    """One lint finding (the ``--json`` shape of ``goat wiki lint``).

    :param code: ``broken-link``, ``missing-attachment``, ``ambiguous-link``, ``bare-link``,
        ``escaped-alias-pipe``, ``broken-anchor``, ``orphan-page``, ``index-drift``,
        ``log-gap``, ``stale-page``, ``no-sources``, ``schema-folder-drift``,
        ``footnote-undefined``, ``name-taken``, ``unparsable-frontmatter``.
    :param severity: ``error``, ``warning`` or ``info``.
    :param path: the file concerned (store-relative), ``None`` for the wiki as a whole.
    :param line: 1-based line in that file, if any. :param target: the link target,
        source id or name concerned, if any.
    :param fixable: ``lint --fix`` repairs it deterministically.
    """

    code: str
    severity: str
    path: str | None
    line: int | None
    target: str | None
    message: str
    fixable: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "path": self.path,
            "line": self.line,
            "target": self.target,
            "message": self.message,
            "fixable": self.fixable,
        }


@dataclass(frozen=True)
class LintReport:
    """Findings (after fixes, when fixing) and what was fixed."""

    findings: tuple[Finding, ...] | list[Finding]
    fixed: tuple[Finding, ...] | list[Finding] = ()
    #: why findings are missing (e.g. ``"2 findings hidden by policy"``); empty when whole.
    degraded: tuple[str, ...] | list[str] = ()

    def to_json(self) -> dict[str, Any]:
        """``{"findings": [...], "fixed": [...]}``, plus ``"degraded"`` when findings about
        pages a browse policy hides were left out."""
        out: dict[str, Any] = {
            "findings": [f.to_json() for f in self.findings],
            "fixed": [f.to_json() for f in self.fixed],
        }
        if self.degraded:
            out["degraded"] = list(self.degraded)
        return out

    def count(self, code: str) -> int:
        return sum(1 for f in self.findings if f.code == code)


def _raise_unwritten(landed: list[str], failed: list[tuple[str, OSError]]) -> None:
    """Raise the first failed fix's error; when other pages' fixes landed (and were
    logged), a :class:`StoreUnwritable` that names them and the pages left unfixed."""
    exc = failed[0][1]
    if not landed:
        raise exc
    where = Path(os.fsdecode(exc.filename)) if exc.filename else Path(failed[0][0])
    if where.name.endswith(".goat-tmp"):  # a write's temp file: name its folder
        where = where.parent
    typed = StoreUnwritable.from_os_error(exc, where)
    if typed is None:
        raise exc
    what = "the disk is full" if typed.reason == "full" else "it is read-only"
    raise StoreUnwritable(
        f"cannot write the store at {where}: {what} ({exc.strerror or type(exc).__name__}); "
        f"fixed and logged: {', '.join(landed)}; not fixed (nothing written): "
        f"{', '.join(rel for rel, _exc in failed)}",
        path=str(where),
        reason=typed.reason,
    ) from exc


def _links_fixed(
    text: str,
    rel: str,
    items: list[Finding],
    resolver: LinkResolver,
    hidden: frozenset[str],
) -> tuple[str | None, set[tuple[int, str]], int]:
    """``(text, applied, withheld)``: page ``rel``'s ``text`` with the fixable findings
    ``items`` applied (``None`` when no line changed), the ``(line, code)`` pairs fixed, and
    how many fixes were withheld because they would name a hidden page's path. Only a line
    where the link stands once and outside any code span is edited."""
    from goat_core.filestore import parse_links

    tables = wt.table_lines(text)
    # "\n" only, as parse_links counts lines; joined back exactly
    lines = text.split("\n")
    wanted = {(f.line, f.code) for f in items}
    applied: set[tuple[int, str]] = set()
    withheld = 0
    changed = False
    for link in parse_links(text):
        if link.kind != "wikilink":
            continue
        idx = link.line - 1
        line = lines[idx]
        new_raw, held = _link_fixed(link, rel, wanted, link.line in tables, resolver, hidden)
        withheld += held
        # Only a line where the link stands once and outside any code span is edited:
        # a sample in backticks must never be rewritten (the rest stays reported).
        if new_raw != link.raw and line.count(link.raw) == 1 and "`" not in line:
            lines[idx] = line.replace(link.raw, new_raw, 1)
            changed = True
            for code in ("escaped-alias-pipe", "bare-link"):
                if (link.line, code) in wanted:
                    applied.add((link.line, code))
    return ("\n".join(lines) if changed else None), applied, withheld


def _link_fixed(
    link: ParsedLink,
    rel: str,
    wanted: set[tuple[int | None, str]],
    in_table: bool,
    resolver: LinkResolver,
    hidden: frozenset[str],
) -> tuple[str, int]:
    """``(raw, withheld)``: the wikilink ``link`` of page ``rel`` as fixed (an escaped alias
    pipe outside a table unescaped, a bare link qualified by its unique target), and 1 when
    qualifying it was withheld because the target is a hidden page, else 0."""
    new_raw = link.raw
    if (link.line, "escaped-alias-pipe") in wanted and "\\|" in link.raw:
        if not in_table:
            new_raw = new_raw.replace("\\|", "|", 1)
    if (link.line, "bare-link") not in wanted or "/" in link.target_text:
        return new_raw, 0
    target, res = resolver.resolve_target(link.target_text, rel)
    if target is not None and target in hidden:
        return new_raw, 1  # the qualified link would name the hidden page's path
    if res is LinkResolution.NAME and target is not None and "/" in target:
        qualified = target[:-3] if target.lower().endswith(".md") else target
        pipe = "\\|" if in_table else "|"
        sub = ""
        if link.heading is not None:
            sub = f"#{link.heading}"
        if link.block is not None:
            sub += f"#^{link.block}"
        alias = link.alias if link.alias is not None else link.target_text + sub
        bang = "!" if link.embed else ""
        new_raw = f"{bang}[[{qualified}{sub}{pipe}{alias}]]"
    return new_raw, 0


class WikiLint(WikiSources):
    """Finding and fixing a wiki's problems; a page just written gets its own findings
    without reading every page (:meth:`_page_findings`)."""

    def _lint(
        self,
        fix: bool,
        inspect: Callable[[MemoryWrite], MemoryWrite] | None = None,
        hidden: Collection[str] = (),
    ) -> LintReport:
        self._recover()
        pending = self._pending_journal()
        if pending:  # what the journal will repair is not a finding (nor a fix to make)
            return LintReport(tuple(self._unjournaled(self._findings())), degraded=pending)
        findings = self._findings()
        if not fix or not any(f.fixable for f in findings):
            return LintReport(tuple(findings))
        fixed: list[Finding] = []
        with self._lock:
            self._sync()
            done, withheld = self._fix_links(
                [f for f in findings if f.fixable], inspect, frozenset(hidden)
            )
            fixed += done
            drift = [f for f in self._findings() if f.code == "index-drift"]
            if drift:
                layout = self._ensure_files()  # may create the index: still logged below

                def change() -> dict[str, str]:
                    self._rebuild_index(layout)
                    assert layout.index is not None
                    return {layout.index: current_etag(self.root / layout.index)}

                self._commit(
                    "lint", "rebuild index", [], ["- fix: index rebuilt"], change, layout=layout
                )
                fixed += drift
        degraded: tuple[str, ...] = ()
        if withheld:
            degraded = (
                f"{withheld} fix{'' if withheld == 1 else 'es'} withheld: "
                f"{'it touches' if withheld == 1 else 'they touch'} pages hidden by policy",
            )
        return LintReport(tuple(self._findings()), tuple(fixed), degraded)

    def _unjournaled(self, findings: list[Finding]) -> list[Finding]:
        """``findings`` less the index, log and source bookkeeping of the pages a pending
        journal names (``index-drift``, ``log-gap``, ``stale-page``): applying it repairs
        those."""
        try:
            journal = json.loads(self._journal_path.read_text("utf-8"))
            pages = set(journal.get("pages") or ())
        except (OSError, ValueError, AttributeError):
            return findings
        return [
            f
            for f in findings
            if not (
                (f.code == "index-drift" and f.target in pages)
                or (f.code in {"log-gap", "stale-page"} and f.path in pages)
            )
        ]

    def _fix_links(
        self,
        fixable: list[Finding],
        inspect: Callable[[MemoryWrite], MemoryWrite] | None = None,
        hidden: frozenset[str] = frozenset(),
    ) -> tuple[list[Finding], int]:
        """Rewrite bare links to their unique folder-qualified target and unescape alias pipes
        outside tables; one atomic, etag-checked write and one log entry per page. Returns
        the findings fixed and how many fixes were withheld for pages a browse policy hides
        (``hidden``, their paths): such a page is never rewritten, and no link is qualified
        into one's path."""
        by_page: dict[str, list[Finding]] = {}
        for f in fixable:
            if f.code in {"bare-link", "escaped-alias-pipe"} and f.path is not None:
                by_page.setdefault(f.path, []).append(f)
        done: list[Finding] = []
        landed: list[str] = []
        failed: list[tuple[str, OSError]] = []
        scan = self._scan()
        resolver = self._link_index(scan).resolver
        withheld = 0
        for rel, items in sorted(by_page.items()):
            if rel in hidden:
                withheld += len(items)
                continue
            note = self._must_load(rel)
            if note.error:
                continue  # unparsable or not UTF-8: never rewritten (reported, not fixed)
            text, applied, held = _links_fixed(note.text, rel, items, resolver, hidden)
            withheld += held
            if text is None:
                continue
            if inspect is not None:
                try:
                    text = inspect(
                        MemoryWrite(kind="remember", text=text, title=note.title, source="lint")
                    ).text
                except Rejected:
                    continue  # refused by policy: left as it is, still reported
            try:
                self._commit_fix(rel, note, text)
            except OSError as exc:
                failed.append((rel, exc))  # nothing of this page's fix landed
                continue
            self._index_note(rel)
            landed.append(rel)
            done += [f for f in items if (f.line, f.code) in applied]
        if failed:
            _raise_unwritten(landed, failed)
        return done, withheld

    def _commit_fix(self, rel: str, note: WikiNote, text: str) -> None:
        """Write ``text`` over page ``rel`` (etag-checked against ``note``) as one journalled
        ``fix`` step.

        :raises OSError: nothing of the fix landed.
        """
        new = text.encode("utf-8")

        def change() -> dict[str, str]:
            return {rel: atomic_write(self.root / rel, new, expected_etag=note.etag)}

        self._commit(
            "fix",
            note.title,
            [rel],
            [f"- page: {rel}", "- fix: links"],
            change,
            planned={rel: etag(new)},
        )

    def _page_findings(self, rel: str) -> list[Finding]:
        """Findings about one page just written, without reading every page: its links are
        resolved against a stat walk; only link targets with a heading or block are read."""
        from goat_core.filestore import LinkResolver, parse_links

        walk = walk_notes(self.root)
        layout = self._layout()
        note = self._must_load(rel)
        resolver = LinkResolver([f.path for f in walk.files] + list(walk.attachments))
        links = [resolver.resolve(p, rel) for p in parse_links(note.text)]

        def get_note(path: str) -> WikiNote | None:
            if path == rel:
                return note
            return self._load(path) if layout.is_page(path) else None

        out = self._note_findings(note, links, get_note, self._schema(layout, walk))
        out += self._stale_findings([note], layout)
        return out

    def _findings(self) -> list[Finding]:
        scan = self._scan()
        layout = scan.layout
        out: list[Finding] = []
        index = self._link_index(scan)
        notes = {n.path: n for n in scan.notes}
        schema = self._schema(layout, scan.walk)
        for name, kind in layout.taken:
            chosen = getattr(layout, kind, None) if kind != "raw" else layout.raw
            out.append(
                Finding(
                    "name-taken",
                    "info",
                    name,
                    None,
                    name,
                    f"{name} is a user's {'folder' if kind == 'raw' else 'note'}, not the "
                    f"wiki's {kind}; the wiki uses {chosen or 'no name (set a free fallback)'}",
                )
            )
        backlinked: set[str] = set()
        for note in scan.notes:
            links = index.links.get(note.path, ())
            out += self._note_findings(note, links, notes.get, schema)
            backlinked.update(
                link.target for link in links if link.target and link.target != note.path
            )
        for note in scan.notes:
            if note.path not in backlinked:
                out.append(
                    Finding(
                        "orphan-page", "warning", note.path, None, None, "no other page links here"
                    )
                )
        out += self._stale_findings(scan.notes, layout)
        out += self._index_findings(scan, layout)
        out += self._log_findings(scan, layout)
        order = {"error": 0, "warning": 1, "info": 2}
        out.sort(
            key=lambda f: (order.get(f.severity, 3), f.code, _sort_key(f.path or ""), f.line or 0)
        )
        return out

    def _note_findings(
        self,
        note: WikiNote,
        links: Iterable[Any],
        get_note: Callable[[str], WikiNote | None],
        schema: Schema,
    ) -> list[Finding]:
        """Findings about one page alone: frontmatter, its links, footnotes, folder, sources."""
        out: list[Finding] = []
        if note.error:
            out.append(
                Finding(
                    "unparsable-frontmatter",
                    "warning",
                    note.path,
                    1,
                    None,
                    f"frontmatter ignored: {note.error}",
                )
            )
        tables = wt.table_lines(note.text)
        for link in links:
            out += self._link_findings(note, link, tables, get_note)
        # footnotes live in the body: Obsidian renders none in frontmatter (a summary that
        # quotes a reference is not one); lines stay numbered as in the file
        head = len(note.text) - len(note.body)
        body_line = note.text.count("\n", 0, head) if note.text.endswith(note.body) else 0
        for line, ident in wt.footnote_problems(note.text[head:] if body_line else note.text):
            line += body_line
            out.append(
                Finding(
                    "footnote-undefined",
                    "warning",
                    note.path,
                    line,
                    f"^{ident}",
                    f"footnote [^{ident}] has no definition",
                )
            )
        top = note.path.split("/", 1)[0] if "/" in note.path else None
        if top is None and not schema.root_pages:
            out.append(
                Finding(
                    "schema-folder-drift",
                    "warning",
                    note.path,
                    None,
                    None,
                    "page at the wiki root; the schema puts pages in " + ", ".join(schema.folders),
                )
            )
        elif top is not None and not any(top == f for f in schema.folders):
            out.append(
                Finding(
                    "schema-folder-drift",
                    "warning",
                    note.path,
                    None,
                    top,
                    f"folder {top!r} is not defined by the schema ("
                    + ", ".join(schema.folders)
                    + ")",
                )
            )
        if note.is_wiki_page and not str_or_items(note.data.get("sources")):
            out.append(
                Finding(
                    "no-sources",
                    "warning",
                    note.path,
                    None,
                    None,
                    "page cites no sources; its claims trace to nothing",
                )
            )
        return out

    def _link_findings(
        self,
        note: WikiNote,
        link: Any,
        tables: set[int],
        get_note: Callable[[str], WikiNote | None],
    ) -> list[Finding]:
        out: list[Finding] = []
        res = link.resolution
        if res is LinkResolution.MISSING:
            if wt.is_attachment_target(link.target_text):
                out.append(
                    Finding(
                        "missing-attachment",
                        "info",
                        note.path,
                        link.line,
                        link.target_text,
                        f"{link.raw}: no such file in the wiki",
                    )
                )
            else:
                out.append(
                    Finding(
                        "broken-link",
                        "warning",
                        note.path,
                        link.line,
                        link.target_text,
                        f"{link.raw}: no page {link.target_text!r}",
                    )
                )
        elif res is LinkResolution.AMBIGUOUS and link.target is not None:
            if posixpath.dirname(link.target) != posixpath.dirname(note.path):
                out.append(
                    Finding(
                        "ambiguous-link",
                        "info",
                        note.path,
                        link.line,
                        link.target_text,
                        f"{link.raw}: several pages are named {link.target_text!r}; "
                        f"Obsidian opens {link.target}; qualify the link",
                    )
                )
        if (
            link.kind == "wikilink"
            and note.is_wiki_page
            and res is LinkResolution.NAME
            and link.target is not None
            and "/" in link.target
            and "/" not in link.target_text
        ):
            out.append(
                Finding(
                    "bare-link",
                    "info",
                    note.path,
                    link.line,
                    link.target,
                    f"{link.raw}: bare link to a page in a folder; write [[{link.target[:-3]}]]",
                    fixable=True,
                )
            )
        if link.kind == "wikilink" and "\\|" in link.raw and link.line not in tables:
            out.append(
                Finding(
                    "escaped-alias-pipe",
                    "warning",
                    note.path,
                    link.line,
                    link.target_text,
                    f"{link.raw}: '\\|' escapes an alias pipe only inside tables",
                    fixable=True,
                )
            )
        wants_anchor = bool(link.heading) or bool(link.block)
        target = get_note(link.target) if link.target and wants_anchor else None
        if target is not None and res is not LinkResolution.ATTACHMENT:
            if (
                link.heading
                and wt.heading_key(link.heading.split("#")[-1]) not in (self._anchors(target)[0])
            ):
                out.append(
                    Finding(
                        "broken-anchor",
                        "info",
                        note.path,
                        link.line,
                        f"{link.target}#{link.heading}",
                        f"{link.raw}: no heading {link.heading!r} in {link.target}",
                    )
                )
            if link.block and link.block.casefold() not in self._anchors(target)[1]:
                out.append(
                    Finding(
                        "broken-anchor",
                        "info",
                        note.path,
                        link.line,
                        f"{link.target}#^{link.block}",
                        f"{link.raw}: no block ^{link.block} in {link.target}",
                    )
                )
        return out

    def _anchors(self, note: WikiNote) -> tuple[set[str], set[str]]:
        """Heading keys and block ids of a page, cached with the parsed page."""
        key = (note.path, note.etag)
        cached = self._anchor_cache.get(key)
        if cached is None:
            cached = (wt.heading_keys(note.text), wt.block_ids(note.text))
            self._anchor_cache[key] = cached
        return cached

    def _stale_findings(self, notes: Iterable[WikiNote], layout: Layout) -> list[Finding]:
        manifest = self._manifest(layout).by_id()
        hashes: dict[str, str] = {}
        at_origin: dict[str, bool] = {}
        out: list[Finding] = []
        for note in notes:
            for item in str_or_items(note.data.get("sources")):
                if not isinstance(item, dict) or not isinstance(item.get("id"), str):
                    continue
                ident = self._source_ref(item["id"], layout)
                recorded = item.get("hash")
                src = manifest.get(ident)
                why = None
                if src is None or layout.raw is None:
                    why = "is not in the source manifest"
                else:
                    if ident not in hashes:
                        hashes[ident] = current_etag(self.root / layout.raw / src.id)
                    now = hashes[ident]
                    if now == MISSING_ETAG:
                        why = "vanished from the raw folder"
                    elif now != src.hash:
                        why = "was modified in the raw folder"
                    elif recorded != src.hash:
                        why = "differs from the version the page was written from"
                    elif src.superseded_by:
                        why = f"has a newer version (source {src.superseded_by})"
                    else:
                        if ident not in at_origin:
                            at_origin[ident] = origin_changed(src)
                        if at_origin[ident]:
                            why = f"changed at its origin {src.origin}; ingest it again"
                if why:
                    out.append(
                        Finding(
                            "stale-page", "warning", note.path, None, ident, f"source {ident} {why}"
                        )
                    )
        return out

    def _index_findings(self, scan: Scan, layout: Layout) -> list[Finding]:
        if layout.index is None:
            return []
        if layout.index not in layout.own:
            return [
                Finding(
                    "index-drift",
                    "warning",
                    layout.index,
                    None,
                    None,
                    f"{layout.index} does not exist yet; lint --fix builds it",
                    fixable=True,
                )
            ]
        text = (self.root / layout.index).read_text("utf-8", "replace")
        have = wt.parse_index(text)
        want = {n.path: self._index_entry(n) for n in scan.notes}
        out = []
        for rel, line in want.items():
            if rel not in have:
                out.append(
                    Finding(
                        "index-drift",
                        "warning",
                        layout.index,
                        None,
                        rel,
                        f"page {rel} is missing from the index",
                        fixable=True,
                    )
                )
            elif have[rel][1] != line:
                out.append(
                    Finding(
                        "index-drift",
                        "warning",
                        layout.index,
                        have[rel][0],
                        rel,
                        f"index line of {rel} is out of date",
                        fixable=True,
                    )
                )
        for rel, (number, _line) in have.items():
            if rel not in want:
                out.append(
                    Finding(
                        "index-drift",
                        "warning",
                        layout.index,
                        number,
                        rel,
                        f"index lists {rel}, which is not a page",
                        fixable=True,
                    )
                )
        return out

    def _log_findings(self, scan: Scan, layout: Layout) -> list[Finding]:
        if layout.log is None or layout.log not in layout.own:
            return []
        entries, malformed = wt.parse_log((self.root / layout.log).read_text("utf-8", "replace"))
        out = [
            Finding(
                "log-gap",
                "warning",
                layout.log,
                number,
                None,
                f"not a log entry heading (## [YYYY-MM-DD] op | title): {line.strip()}",
            )
            for number, line in malformed
        ]
        last = ""
        for entry in entries:
            if entry.date < last:
                out.append(
                    Finding(
                        "log-gap",
                        "warning",
                        layout.log,
                        entry.line,
                        None,
                        f"entry dated {entry.date} follows one dated {last}",
                    )
                )
            last = max(last, entry.date)
        logged = {p for e in entries for p in e.pages}
        for note in scan.notes:
            if note.is_wiki_page and note.path not in logged:
                out.append(
                    Finding(
                        "log-gap",
                        "warning",
                        note.path,
                        None,
                        None,
                        f"page has no entry in {layout.log}",
                    )
                )
        return out
