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
Names compare in Unicode NFC (macOS tools write NFD): an NFD name reads under its NFC name,
and two files whose names are one name in NFC refuse the bundle. Every file that is not
read is named in :attr:`Bundle.skipped` with why.

:func:`write_bundle` stages the whole bundle in a folder beside DIR (``.goat-export.<DIR
name>.<pid>.<hex>``), the manifest last, and renames it into place: a kill leaves DIR
absent (or as it was) and only that staging folder, which :func:`read_bundle` refuses to
read as a bundle (and refuses a DIR beside it, or holding one) and the next export removes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
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
#: How an export's staging folder's name starts (beside DIR, or inside it where DIR's
#: parent takes no new folder).
STAGING_PREFIX = ".goat-export."
#: Characters of DIR's name a staging folder beside it repeats (a name stays short).
_STAGING_NAME_CHARS = 80
#: ``.goat-export.<DIR name>.<pid>.<hex>`` (beside DIR), ``.goat-export.<pid>.<hex>`` (inside
#: it) or ``.goat-export.<hex>`` (inside it, written by GOAT before 0.x recorded the pid).
_STAGING_RE = re.compile(
    r"\.goat-export\.(?:(?P<name>.+?)\.)??(?:(?P<pid>[0-9]+)\.)?(?P<hex>[0-9a-f]{12})"
)
#: Other extensions of Markdown files: page-shaped files a bundle does not read (``.md``).
_OTHER_MARKDOWN = (".markdown", ".mdown", ".mkd", ".mkdn", ".mdwn")
#: Staging folders this process is writing now (never stale, whatever their pid).
_LIVE: set[Path] = set()


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
    left = [p for p in staging_folders(directory) if p.parent == directory and p not in _LIVE]
    if left and not force:
        raise BadInput(
            f"{directory} holds {left[0].name}, left by an interrupted export: its pages may "
            "be partial; remove the folder and export again, or pass --force to write into "
            "it (rule export-target)"
        )
    if directory.is_dir() and any(p not in _LIVE for p in directory.iterdir()) and not force:
        raise BadInput(
            f"{directory} is not empty; export into an empty or new folder, or pass --force "
            "to write into it (files of the same path are replaced) (rule export-target)"
        )


def staging_folders(directory: Path) -> list[Path]:
    """The export staging folders of ``directory``: beside it (named for it) and inside it,
    live or left by an export that was killed (:func:`is_stale`)."""
    found: list[Path] = []
    name = directory.name[:_STAGING_NAME_CHARS]
    for folder, inside in ((directory.parent, False), (directory, True)):
        try:
            entries = sorted(os.listdir(folder)) if folder.is_dir() else []
        except OSError:
            continue
        for entry in entries:
            match = _STAGING_RE.fullmatch(entry)
            if match is None or (match["name"] is None) != inside:
                continue
            if inside or match["name"] == name:
                found.append(folder / entry)
    return found


def is_stale(staging: Path) -> bool:
    """Whether ``staging`` was left by an export no longer running: its pid is not a live
    process of this machine (a staging folder without a pid is an older GOAT's)."""
    match = _STAGING_RE.fullmatch(staging.name)
    if match is None:
        return False
    if staging in _LIVE:
        return False
    if match["pid"] is None:
        return True
    pid = int(match["pid"])
    if pid == os.getpid():
        return True  # not one of ours (_LIVE): a pid reused after a kill
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError, OSError):
        return False  # another user's live process, or a pid this system cannot have
    return False


def clear_stale_staging(directory: Path, *, force: bool) -> list[str]:
    """Remove the staging folders interrupted exports of ``directory`` left, and say so:
    those beside it always, one inside it when it is all ``directory`` holds or with
    ``force`` (a folder of partial pages keeps it, so an import still says "interrupted").
    A staging folder a running export writes stays."""
    import shutil

    notes: list[str] = []
    for staging in staging_folders(directory):
        if not is_stale(staging):
            continue
        if staging.parent == directory and not force:
            try:
                alone = [p.name for p in directory.iterdir()] == [staging.name]
            except OSError:
                alone = False
            if not alone:
                continue
        try:
            shutil.rmtree(staging)
        except OSError as exc:
            notes.append(
                f"{staging} is left by an interrupted export and could not be removed "
                f"({exc.strerror}); remove it"
            )
            continue
        notes.append(f"removed {staging}, left by an interrupted export")
    return notes


def _new_staging(directory: Path) -> Path:
    """A new staging folder beside ``directory`` (so the finished bundle is renamed into
    place whole), or inside it when its parent takes no new folder (read-only, not ours)."""
    import errno
    import secrets

    token = f"{os.getpid()}.{secrets.token_hex(6)}"
    beside = directory.parent / f"{STAGING_PREFIX}{directory.name[:_STAGING_NAME_CHARS]}.{token}"
    try:
        beside.mkdir()  # the mode a new folder gets (0777 less the umask)
        return beside
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS) or not directory.is_dir():
            raise
    inside = directory / f"{STAGING_PREFIX}{token}"
    inside.mkdir()
    return inside


def _rename_whole(staging: Path, directory: Path) -> bool:
    """Rename the finished ``staging`` folder to ``directory`` (absent, or an empty folder
    whose mode it takes): ``True`` once done, ``False`` where the rename cannot be made (a
    non-empty ``directory``, a mount point or another filesystem) and the files are moved
    in one by one instead."""
    import errno

    try:
        st = os.lstat(directory)
    except FileNotFoundError:
        st = None
    if st is not None:
        if not stat.S_ISDIR(st.st_mode) or any(directory.iterdir()):
            return False
        os.chmod(staging, stat.S_IMODE(st.st_mode))
    try:
        os.replace(staging, directory)
    except OSError as exc:
        if exc.errno in (errno.EXDEV, errno.EBUSY, errno.ENOTEMPTY, errno.EEXIST):
            return False
        raise
    return True


def write_bundle(
    directory: Path,
    files: Sequence[tuple[str, str]],
    manifest: Mapping[str, Any],
    *,
    force: bool = False,
) -> None:
    """Write ``files`` (``(bundle path, text)``) and the manifest into ``directory``, never
    outside it and never as a partial bundle.

    Every path is checked first (nothing is written while one is refused). The bundle is
    then written whole into a staging folder beside ``directory`` (:func:`_new_staging`),
    the manifest last, and that folder is renamed to ``directory`` (absent, or empty): a
    kill before leaves ``directory`` as it was, beside it only the staging folder. Where
    the rename cannot be made (``--force`` into a folder that is not empty, a mount point,
    another filesystem) each file is moved in, the manifest last, while the staging
    folder stays beside as the sign of an export under way; where a move is refused
    (``EXDEV``, ``EBUSY``) the file is copied instead. A fault removes the staging folder,
    the files moved in that were new and the folders the export made, leaving
    ``directory`` as it was (a file ``--force`` already replaced stays replaced).

    :raises PathError: a path that would leave the folder.
    :raises BadInput: ``directory`` was filled meanwhile (without ``force``).
    :raises StoreUnwritable: the disk is full or the folder read-only (naming the path).
    """
    import shutil

    from goat_core.fileio import atomic_write, contain

    for rel, _text in files:  # a refused path refuses the export before any write
        contain(directory, rel)
    data = json.dumps(manifest, indent=2, ensure_ascii=False, sort_keys=False) + "\n"
    made: list[Path] = []  # folders (and new files) the export created, undone on a fault
    staging: Path | None = None
    try:
        for folder in reversed(directory.parents):
            if not folder.exists():
                folder.mkdir()
                made.append(folder)
        staging = _new_staging(directory)
        _LIVE.add(staging)
        for rel, text in files:
            target = contain(staging, rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, text.encode("utf-8"))
        atomic_write(staging / MANIFEST_NAME, data.encode("utf-8"))
        if staging.parent != directory and _rename_whole(staging, directory):
            _LIVE.discard(staging)
            staging = None
            made.clear()
            return
        check_target(directory, force)  # filled meanwhile: never merged into without --force
        if not directory.exists():
            directory.mkdir()
            made.append(directory)
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
            _LIVE.discard(staging)
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


@dataclass(frozen=True)
class Skipped:
    """A file (or folder, ``path`` ending ``/``) of a bundle that is not read, and why.

    :param page: it is page-shaped (a Markdown file) and skipped for a reason the user can
        fix: the bundle is not imported whole (:attr:`Bundle.complete`)."""

    path: str
    reason: str
    page: bool = False


@dataclass
class Bundle:
    """A validated bundle: its pages in path order, the manifest (``None`` for a plain
    folder of Markdown files) and what was not read, each with why (:attr:`skipped`)."""

    root: Path
    files: list[BundleFile] = field(default_factory=list)
    manifest: dict[str, Any] | None = None
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def ignored(self) -> list[str]:
        """The paths of :attr:`skipped`."""
        return [s.path for s in self.skipped]

    @property
    def complete(self) -> bool:
        """No page-shaped file was skipped for a reason the user can fix."""
        return not any(s.page for s in self.skipped)

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
    :func:`goat_core.fileio.contain`: traversal, absolute, NUL, reserved names,
    symlink escape), or ``None``."""
    from goat_core.fileio import contain

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


def _plural(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _hidden_folder(path: Path, rel: str) -> Skipped:
    """A hidden folder, skipped whole: named with how many files (and ``.md`` files) it
    holds."""
    files = pages = 0
    for _folder, _dirs, names in os.walk(path, followlinks=False):
        files += len(names)
        pages += sum(1 for n in names if n.lower().endswith(".md"))
    held = f"{_plural(files, 'file')}, {_plural(pages, '.md file')}"
    return Skipped(f"{rel}/", f"a hidden folder, not imported ({held})")


def _walk(directory: Path, problems: list[str], skipped: list[Skipped]) -> dict[str, str]:
    """Every ``.md`` file under ``directory``: ``{NFC path: path as on disk}`` (POSIX,
    relative), refusing symlinks, special files and two names one in NFC; dot folders and
    dot files are not part of a bundle, nor other files (each named in ``skipped``)."""
    from goat_core.fileio import is_utf8, shown_name

    found: dict[str, str] = {}
    for folder, dirs, names in os.walk(directory, followlinks=False):
        base = Path(folder)
        keep = []
        for d in sorted(dirs):
            rel = (base / d).relative_to(directory).as_posix()
            if not is_utf8(rel):
                problems.append(f"{shown_name(rel)}/: its name is not UTF-8 (rule bundle-name)")
                continue
            if (base / d).is_symlink():
                problems.append(f"{rel}: a symlink (rule bundle-symlink)")
            elif d.startswith("."):
                skipped.append(_hidden_folder(base / d, rel))
            else:
                keep.append(d)
        dirs[:] = keep
        for name in sorted(names):
            path = base / name
            rel = path.relative_to(directory).as_posix()
            if not is_utf8(rel):
                problems.append(f"{shown_name(rel)}: its name is not UTF-8 (rule bundle-name)")
                continue
            st = os.lstat(path)
            lower = name.lower()
            if stat.S_ISLNK(st.st_mode):
                problems.append(f"{rel}: a symlink (rule bundle-symlink)")
            elif not stat.S_ISREG(st.st_mode):
                problems.append(f"{rel}: not a regular file (rule bundle-file)")
            elif name.startswith("."):
                skipped.append(Skipped(rel, "a hidden file, not imported"))
            elif lower.endswith(_OTHER_MARKDOWN):
                skipped.append(
                    Skipped(
                        rel,
                        "a Markdown file not named .md, not imported: rename it to .md to "
                        "import it",
                        page=True,
                    )
                )
            elif not lower.endswith(".md"):
                if rel != MANIFEST_NAME:
                    kind = PurePosixPath(name).suffix or "no extension"
                    skipped.append(Skipped(rel, f"not a Markdown page ({kind}), not imported"))
            else:
                nfc = unicodedata.normalize("NFC", rel)
                twin = found.setdefault(nfc, rel)
                if twin != rel:
                    problems.append(
                        f"{ascii(twin)[1:-1]} and {ascii(rel)[1:-1]}: one name in two "
                        "Unicode forms (NFC and NFD), so one page path; keep one "
                        "(rule bundle-path)"
                    )
    return found


def _json(path: Path, shown: str, problems: list[str]) -> Any:
    """The JSON in ``path``, or ``None`` with the problem named in one line: unreadable,
    not UTF-8, not JSON, nested too deeply (``RecursionError``) or a number too long."""
    try:
        return json.loads(path.read_text("utf-8"))
    except RecursionError:
        why = "nested too deeply"
    except (OSError, UnicodeDecodeError, ValueError, MemoryError) as exc:
        why = _one_line(str(exc) or type(exc).__name__)
    problems.append(f"{shown}: not readable JSON ({why}) (rule bundle-manifest)")
    return None


def _one_line(text: str, limit: int = 200) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _interrupted(directory: Path) -> str | None:
    """Why ``directory`` looks like an export that did not finish (it is a staging folder,
    or one is beside it or inside it), or ``None``."""
    if _STAGING_RE.fullmatch(directory.name) is not None:
        return (
            f"{directory.name} is the staging folder of an interrupted export (goat export "
            "writes the bundle there and renames it into place when whole): its pages may be "
            "partial; export again (rule bundle-interrupted)"
        )
    left = staging_folders(directory)
    if left:
        where = "beside" if left[0].parent != directory else "inside"
        return (
            f"{left[0].name} {where} it: an interrupted export (or one still running) left "
            "this folder, its pages may be partial; export again, or remove "
            f"{left[0]} to import the folder as it is (rule bundle-interrupted)"
        )
    return None


def _load_manifest(directory: Path, problems: list[str]) -> dict[str, Any] | None:
    path = directory / MANIFEST_NAME
    if not path.exists() and not path.is_symlink():
        return None
    if path.is_symlink() or not path.is_file():
        problems.append(f"{MANIFEST_NAME}: a symlink or not a file (rule bundle-manifest)")
        return None
    data = _json(path, MANIFEST_NAME, problems)
    if data is None:
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
    directory = Path(os.path.abspath(directory))
    if not directory.exists():
        raise NotFound(f"no bundle at {directory}")
    if directory.is_symlink() or not directory.is_dir():
        raise BadInput(f"{directory} is not a folder (rule bundle)")
    interrupted = _interrupted(directory)
    if interrupted is not None:
        raise _refuse(directory, [interrupted])
    problems: list[str] = []
    bundle = Bundle(root=directory)
    on_disk = _walk(directory, problems, bundle.skipped)
    paths = sorted(on_disk)
    manifest = _load_manifest(directory, problems)
    bundle.manifest = manifest
    listed: dict[str, Mapping[str, Any]] = {}
    if manifest is not None:
        listed = _listed_pages(directory, manifest, paths, problems)
    else:
        catalog = [p for p in paths if p.casefold() in CATALOG_FILES]
        bundle.skipped.extend(
            Skipped(
                p, "OKF's catalog file: without a manifest, a root index.md or log.md is not a page"
            )
            for p in catalog
        )
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
        # the name as written (NFD from macOS tools)
        file = _bundle_file(directory / on_disk[rel], rel, listed.get(rel), max_bytes, problems)
        if file is not None:
            bundle.files.append(file)
    if problems:
        raise _refuse(directory, problems)
    bundle.skipped.sort(key=lambda s: s.path)
    return bundle


def _listed_pages(
    directory: Path, manifest: Mapping[str, Any], paths: Sequence[str], problems: list[str]
) -> dict[str, Mapping[str, Any]]:
    """``{path: entry}`` of the manifest's pages; an unsafe or twice-listed path, a listed
    page that is missing and a page not listed are each added to ``problems``."""
    listed: dict[str, Mapping[str, Any]] = {}
    for entry in manifest["pages"]:
        rel = unicodedata.normalize("NFC", entry["path"])
        why = _safe_rel(directory, rel)
        if why is not None:
            problems.append(f"manifest path {rel!r}: {why}")
            continue
        if rel in listed:
            problems.append(f"{rel}: listed twice in the manifest (rule bundle-manifest)")
            continue
        listed[rel] = entry
    for rel in sorted(set(listed) - set(paths)):
        problems.append(f"{rel}: listed in the manifest but missing (rule bundle-manifest)")
    for rel in sorted(set(paths) - set(listed)):
        problems.append(f"{rel}: not listed in the manifest (rule bundle-manifest)")
    return listed


def _bundle_file(
    path: Path,
    rel: str,
    entry: Mapping[str, Any] | None,
    max_bytes: int,
    problems: list[str],
) -> BundleFile | None:
    """The page at ``path`` (bundle path ``rel``, its manifest ``entry`` if any), or
    ``None`` with the reason added to ``problems``: too large, unreadable, not the hash the
    manifest names, not UTF-8, or frontmatter that does not parse. A provenance key that is
    not a mapping is a problem too, though the page is still returned."""
    from goat_core.filestore import parse_note

    try:
        size = path.stat().st_size
        if size > max_bytes:
            problems.append(
                f"{rel}: {size} bytes, over the size limit of {max_bytes} (rule bundle-size)"
            )
            return None
        raw = path.read_bytes()
    except OSError as exc:
        problems.append(f"{rel}: not readable: {exc.strerror} (rule bundle-file)")
        return None
    digest = sha256_hex(raw)
    if entry is not None and entry["sha256"] != digest:
        problems.append(
            f"{rel}: sha256 {digest[:12]}… does not match the manifest's "
            f"{str(entry['sha256'])[:12]}… (rule bundle-hash)"
        )
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        problems.append(f"{rel}: not UTF-8 text (rule bundle-file)")
        return None
    parsed = parse_note(text)
    if parsed.error is not None:
        problems.append(f"{rel}: {parsed.error} (rule bundle-frontmatter)")
        return None
    data = {k: v for k, v in parsed.data.items()}
    for key in PROVENANCE_KEYS:
        value = data.get(key)
        if value is not None and not isinstance(value, dict):
            problems.append(f"{rel}: {key} is not a mapping (rule bundle-frontmatter)")
    source_id = str(entry.get("id") or rel) if entry is not None else rel
    origin = entry.get("source_sha256") if entry is not None else None
    return BundleFile(
        path=rel,
        text=text,
        frontmatter=data,
        body=parsed.body,
        sha256=digest,
        title=_title(rel, data),
        source_id=source_id,
        origin_sha256=origin or None,
    )
