"""OKF bundles: a folder of ``.md`` files with YAML frontmatter (the Open Knowledge Format),
written by ``goat export`` and read by ``goat import`` (docs/design.md, Copy, export and
import).

A bundle file's path without ``.md`` is its identity; ``type`` is the one required
frontmatter field, ``title``, ``description``, ``tags``, ``timestamp`` and ``resource`` are
standard, unknown fields are kept and links are left as written. ``goat-export.json`` at the
root (the manifest) records the source scope, provider, counts and each page's sha256.

:func:`read_bundle` validates a whole bundle before anything is imported: no symlink, no
path that climbs out or that a store would refuse, no file over the size limit or not
UTF-8, frontmatter that parses, and, with a manifest, exactly the files it lists with the
hashes it records. Any problem refuses the bundle (:class:`~goat_core.errors.BadInput`).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

from goat_core.contract import PROVENANCE_KEYS, Page, PageSummary
from goat_core.errors import BadInput, NotFound, PathError, StoreUnwritable

#: The manifest's file name at the bundle root.
MANIFEST_NAME = "goat-export.json"
#: The manifest's ``format`` value and version.
MANIFEST_FORMAT = "goat-export"
MANIFEST_VERSION = 1
#: Largest bundle file read (bytes); a larger one refuses the bundle.
MAX_FILE_BYTES = 4 * 1024 * 1024
#: OKF's optional catalog files at a bundle root: not pages unless a manifest lists them.
CATALOG_FILES = ("index.md", "log.md")
#: Problems named in a refusal at most (the rest are counted).
_SHOWN_PROBLEMS = 10


def sha256_hex(data: bytes | str) -> str:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def now_iso() -> str:
    from datetime import UTC

    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


# -- writing ----------------------------------------------------------------------------------
def bundle_path(page: Page | PageSummary) -> str:
    """A page's bundle path: its store path, else ``<id>.md`` (a Hindsight memory)."""
    path = page.path or f"{page.id}.md"
    return path if path.lower().endswith(".md") else f"{path}.md"


def stored_text(page: Page) -> str | None:
    """The page exactly as its store holds it (``frontmatter_text + body``), or ``None``:
    the store keeps no such text, or what browsing shows of the page (after
    ``goat_filter_browse``) is not what that text holds, and only what is shown is moved."""
    from goat_core.filestore import jsonable, parse_note

    if page.frontmatter_text is None:
        return None
    text = page.frontmatter_text + page.body
    parsed = parse_note(text)
    if parsed.body != page.body or jsonable(parsed.data) != page.frontmatter:
        return None
    return text


def render_page(
    page: Page,
    *,
    updated: datetime | None = None,
    okf: bool = True,
    default_type: str = "note",
    drop: Sequence[str] = (),
) -> str:
    """A page as one Markdown file: its own frontmatter without the keys in ``drop``, OKF's
    ``type``, ``title`` and ``timestamp`` added where missing (``okf``), then its body byte
    for byte. A page without frontmatter and nothing to add is its body.

    A page whose store keeps its text (:func:`stored_text`) keeps its frontmatter as
    written, byte for byte: dropped keys lose only their lines and added ones are appended
    as one line each, so a date stays a date, a number a number and comments stay. Other
    pages (a Hindsight memory, or a page a policy changed) are rendered from the shown
    frontmatter, one line of YAML per key."""
    from goat_core.filestore import drop_keys, render_note, set_keys

    added: dict[str, Any] = {}
    if okf:
        added = {"type": default_type, "title": page.title}
        if updated is not None:
            added["timestamp"] = updated.replace(microsecond=0).isoformat().replace("+00:00", "Z")
        added = {k: v for k, v in added.items() if k not in page.frontmatter}
    kept = stored_text(page)
    if kept is not None:
        try:
            text = drop_keys(kept, drop) if drop else kept
            return set_keys(text, added) if added else text
        except BadInput:  # frontmatter that does not parse is never edited: render instead
            pass
    data: dict[str, Any] = {k: v for k, v in page.frontmatter.items() if k not in drop}
    data.update(added)
    if not data:
        return page.body
    try:
        return render_note(data, page.body)
    except ValueError as exc:
        raise BadInput(
            f"page {page.path or page.id!r}: frontmatter cannot be written: {exc}"
        ) from None


def check_target(directory: Path, force: bool) -> None:
    """Refuse a non-empty export folder without ``force``, or a path that is not a folder.

    :raises BadInput: naming the rule."""
    if directory.exists() and not directory.is_dir():
        raise BadInput(f"{directory} exists and is not a folder (rule export-target)")
    if directory.is_dir() and any(directory.iterdir()) and not force:
        raise BadInput(
            f"{directory} is not empty; export into an empty or new folder, or pass --force "
            "to write into it (files of the same path are replaced) (rule export-target)"
        )


def write_bundle(
    directory: Path, files: Sequence[tuple[str, str]], manifest: Mapping[str, Any]
) -> None:
    """Write ``files`` (``(bundle path, text)``) and the manifest into ``directory``, never
    outside it and never as a partial bundle.

    Every path is checked first (nothing is written while one is refused). The bundle is
    then written whole into a hidden staging folder inside ``directory`` (made first when
    absent), so staging and bundle share one filesystem even when ``directory`` is a mount
    point, and each file is moved into place, the manifest last (``--force`` replaces files
    of the same path). Where a move is refused (``EXDEV``, ``EBUSY``) the file is copied
    instead. A fault removes the staging folder, the files moved in that were new and the
    folders the export made, leaving ``directory`` as it was (a file ``--force`` already
    replaced stays replaced).

    :raises PathError: a path that would leave the folder.
    :raises StoreUnwritable: the disk is full or the folder read-only (naming the path).
    """
    import secrets
    import shutil

    from goat_core.filestore import atomic_write, contain

    for rel, _text in files:  # a refused path refuses the export before any write
        contain(directory, rel)
    data = json.dumps(manifest, indent=2, ensure_ascii=False, sort_keys=False) + "\n"
    made: list[Path] = []  # folders (and new files) the export created, undone on a fault
    staging: Path | None = None
    try:
        for folder in (*reversed(directory.parents), directory):
            if not folder.exists():
                folder.mkdir()
                made.append(folder)
        staging = directory / f".goat-export.{secrets.token_hex(6)}"
        staging.mkdir()  # the mode a new folder gets (0777 less the umask)
        for rel, text in files:
            target = contain(staging, rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, text.encode("utf-8"))
        atomic_write(staging / MANIFEST_NAME, data.encode("utf-8"))
        for rel in [*(rel for rel, _text in files), MANIFEST_NAME]:
            target = contain(directory, rel)
            for folder in (*reversed(target.parents), target.parent):
                if folder != directory and directory in folder.parents and not folder.exists():
                    folder.mkdir()
                    made.append(folder)
            if not target.exists():
                made.append(target)
            _move(contain(staging, rel), target)
        made.clear()
    except OSError as exc:
        where = getattr(exc, "filename", None) or directory
        typed = StoreUnwritable.from_os_error(
            exc, where, target="the export", outcome=f"{directory} was left as it was"
        )
        if typed is None:
            raise
        raise typed from None
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        for path in reversed(made):  # newest first: files, then their folders
            try:
                path.rmdir() if path.is_dir() else path.unlink()
            except OSError:
                pass


def _move(source: Path, target: Path) -> None:
    """Put ``source`` in place at ``target`` by renaming it, or, where the rename is refused
    (another filesystem: ``EXDEV``; a busy mount point: ``EBUSY``), by copying it."""
    import errno
    import shutil

    try:
        os.replace(source, target)
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EBUSY):
            raise
        shutil.copyfile(source, target)


def manifest_for(
    *,
    scope: str,
    provider: str,
    label: str,
    pages: Sequence[Mapping[str, Any]],
    complete: bool,
    degraded: Sequence[str],
) -> dict[str, Any]:
    """The manifest of an export: ``pages`` holds ``{"path", "id", "sha256"}`` and, for a
    page whose store keeps its text, ``source_sha256`` (the hash of the page as the store
    held it, so importing the bundle back into that store finds every page unchanged)."""
    return {
        "format": MANIFEST_FORMAT,
        "version": MANIFEST_VERSION,
        "exported_at": now_iso(),
        "source": {"scope": scope, "provider": provider, "label": label},
        "counts": {"pages": len(pages), "degraded": len(degraded)},
        "complete": complete,
        "degraded": list(degraded),
        "pages": [dict(p) for p in pages],
    }


# -- reading ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class BundleFile:
    """One page of a bundle, validated."""

    path: str
    text: str
    frontmatter: dict[str, Any]
    body: str
    sha256: str
    title: str
    source_id: str
    origin_sha256: str | None = None


@dataclass
class Bundle:
    """A validated bundle: its pages in path order, the manifest (``None`` for a plain
    folder of Markdown files) and what was not read (other files, catalog files)."""

    root: Path
    files: list[BundleFile] = field(default_factory=list)
    manifest: dict[str, Any] | None = None
    ignored: list[str] = field(default_factory=list)

    @property
    def source_scope(self) -> str:
        src = (self.manifest or {}).get("source") or {}
        return str(src.get("scope") or "folder")

    @property
    def source_provider(self) -> str:
        src = (self.manifest or {}).get("source") or {}
        return str(src.get("provider") or "files")


def _refuse(directory: Path, problems: list[str]) -> BadInput:
    shown = "; ".join(problems[:_SHOWN_PROBLEMS])
    more = len(problems) - _SHOWN_PROBLEMS
    tail = f"; and {more} more" if more > 0 else ""
    # each problem names its own rule (``bundle-hash``, ``bundle-file``...)
    return BadInput(f"bundle {directory} refused, nothing was imported: {shown}{tail}")


def _safe_rel(directory: Path, rel: str) -> str | None:
    """Why ``rel`` cannot be a page path under ``directory`` (the containment rules of
    :func:`goat_core.filestore.contain`: traversal, absolute, NUL, reserved names,
    symlink escape), or ``None``."""
    from goat_core.filestore import contain

    try:
        contain(directory, rel)
    except PathError as exc:
        return f"{exc} (rule {exc.rule})"
    return None


def _title(rel: str, data: Mapping[str, Any]) -> str:
    title = data.get("title")
    if isinstance(title, str) and title.strip():
        return unicodedata.normalize("NFC", title.strip())
    return unicodedata.normalize("NFC", PurePosixPath(rel).stem)


def _utf8(name: str) -> bool:
    """Whether a file name decoded from the file system is valid UTF-8 (``os.walk`` keeps
    undecodable bytes as lone surrogates, which no store can write or index)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _walk(directory: Path, problems: list[str], ignored: list[str]) -> list[str]:
    """Every ``.md`` file under ``directory`` (POSIX, relative), refusing symlinks and
    special files; dot folders and dot files are not part of a bundle."""
    found: list[str] = []
    for folder, dirs, names in os.walk(directory, followlinks=False):
        base = Path(folder)
        keep = []
        for d in sorted(dirs):
            rel = (base / d).relative_to(directory).as_posix()
            if not _utf8(rel):
                shown = rel.encode("utf-8", "backslashreplace").decode("ascii", "replace")
                problems.append(f"{shown}/: its name is not UTF-8 (rule bundle-name)")
                continue
            if d.startswith("."):
                ignored.append(rel + "/")
            elif (base / d).is_symlink():
                problems.append(f"{rel}: a symlink (rule bundle-symlink)")
            else:
                keep.append(d)
        dirs[:] = keep
        for name in sorted(names):
            path = base / name
            rel = path.relative_to(directory).as_posix()
            if not _utf8(rel):
                shown = rel.encode("utf-8", "backslashreplace").decode("ascii", "replace")
                problems.append(f"{shown}: its name is not UTF-8 (rule bundle-name)")
                continue
            if name.startswith("."):
                ignored.append(rel)
                continue
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                problems.append(f"{rel}: a symlink (rule bundle-symlink)")
            elif not stat.S_ISREG(st.st_mode):
                problems.append(f"{rel}: not a regular file (rule bundle-file)")
            elif not name.lower().endswith(".md"):
                if rel != MANIFEST_NAME:
                    ignored.append(rel)
            else:
                found.append(unicodedata.normalize("NFC", rel))
    return found


def _load_manifest(directory: Path, problems: list[str]) -> dict[str, Any] | None:
    path = directory / MANIFEST_NAME
    if not path.exists() and not path.is_symlink():
        return None
    if path.is_symlink() or not path.is_file():
        problems.append(f"{MANIFEST_NAME}: a symlink or not a file (rule bundle-manifest)")
        return None
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        problems.append(f"{MANIFEST_NAME}: not readable JSON ({exc}) (rule bundle-manifest)")
        return None
    pages = data.get("pages") if isinstance(data, dict) else None
    if (
        not isinstance(data, dict)
        or data.get("format") != MANIFEST_FORMAT
        or not isinstance(pages, list)
        or not all(
            isinstance(p, dict)
            and isinstance(p.get("path"), str)
            and isinstance(p.get("sha256"), str)
            and isinstance(p.get("source_sha256", ""), str)
            for p in pages
        )
    ):
        problems.append(
            f"{MANIFEST_NAME}: not a {MANIFEST_FORMAT} manifest with pages of path and "
            "sha256 (and optional source_sha256 text) (rule bundle-manifest)"
        )
        return None
    version = data.get("version")
    if not isinstance(version, int) or version > MANIFEST_VERSION:
        problems.append(
            f"{MANIFEST_NAME}: version {version!r} is newer than this GOAT reads "
            f"({MANIFEST_VERSION}) (rule bundle-manifest)"
        )
        return None
    return data


def read_bundle(directory: Path, *, max_bytes: int = MAX_FILE_BYTES) -> Bundle:
    """Read and validate a whole bundle (or any folder of Markdown files).

    :raises NotFound: ``directory`` does not exist.
    :raises BadInput: anything wrong with it, every problem named (up to ten): nothing
        is imported from a refused bundle.
    """
    from goat_core.filestore import parse_note

    directory = Path(os.path.abspath(directory))
    if not directory.exists():
        raise NotFound(f"no bundle at {directory}")
    if directory.is_symlink() or not directory.is_dir():
        raise BadInput(f"{directory} is not a folder (rule bundle)")
    problems: list[str] = []
    bundle = Bundle(root=directory)
    paths = _walk(directory, problems, bundle.ignored)
    manifest = _load_manifest(directory, problems)
    bundle.manifest = manifest
    listed: dict[str, Mapping[str, Any]] = {}
    if manifest is not None:
        for entry in manifest["pages"]:
            rel = unicodedata.normalize("NFC", entry["path"])
            why = _safe_rel(directory, rel)
            if why is not None:
                problems.append(f"manifest path {rel!r}: {why}")
                continue
            listed[rel] = entry
        for rel in sorted(set(listed) - set(paths)):
            problems.append(f"{rel}: listed in the manifest but missing (rule bundle-manifest)")
        for rel in sorted(set(paths) - set(listed)):
            problems.append(f"{rel}: not listed in the manifest (rule bundle-manifest)")
    else:
        catalog = [p for p in paths if p.casefold() in CATALOG_FILES]
        bundle.ignored.extend(catalog)
        paths = [p for p in paths if p not in catalog]
    folded: dict[str, str] = {}
    for rel in paths:
        why = _safe_rel(directory, rel)
        if why is not None:
            problems.append(f"{rel}: {why}")
            continue
        twin = folded.setdefault(rel.casefold(), rel)
        if twin != rel:
            problems.append(f"{rel}: differs only in case from {twin} (rule bundle-path)")
            continue
        path = directory / rel
        try:
            size = path.stat().st_size
            if size > max_bytes:
                problems.append(
                    f"{rel}: {size} bytes, over the size limit of {max_bytes} (rule bundle-size)"
                )
                continue
            raw = path.read_bytes()
        except OSError as exc:
            problems.append(f"{rel}: not readable: {exc.strerror} (rule bundle-file)")
            continue
        digest = sha256_hex(raw)
        entry = listed.get(rel)
        if entry is not None and entry["sha256"] != digest:
            problems.append(
                f"{rel}: sha256 {digest[:12]}… does not match the manifest's "
                f"{str(entry['sha256'])[:12]}… (rule bundle-hash)"
            )
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            problems.append(f"{rel}: not UTF-8 text (rule bundle-file)")
            continue
        parsed = parse_note(text)
        if parsed.error is not None:
            problems.append(f"{rel}: {parsed.error} (rule bundle-frontmatter)")
            continue
        data = {k: v for k, v in parsed.data.items()}
        for key in PROVENANCE_KEYS:
            value = data.get(key)
            if value is not None and not isinstance(value, dict):
                problems.append(f"{rel}: {key} is not a mapping (rule bundle-frontmatter)")
        source_id = str(entry.get("id") or rel) if entry is not None else rel
        origin = entry.get("source_sha256") if entry is not None else None
        bundle.files.append(
            BundleFile(
                path=rel,
                text=text,
                frontmatter=data,
                body=parsed.body,
                sha256=digest,
                title=_title(rel, data),
                source_id=source_id,
                origin_sha256=origin or None,
            )
        )
    if problems:
        raise _refuse(directory, problems)
    return bundle
