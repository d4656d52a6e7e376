"""goat_core.fileio and goat_core.filestore: containment, store roots, walking, atomic writes,
locking, file names."""

from __future__ import annotations

import os
import stat
import sys
import threading
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from goat_core.errors import Conflict, PathError
from goat_core.filestore import (
    MISSING_ETAG,
    NoteFile,
    StoreLock,
    atomic_write,
    contain,
    current_etag,
    etag,
    safe_title_filename,
    validate_store_root,
    walk_notes,
)

# -- contain --------------------------------------------------------------------------------

BAD_REFS = [
    ("", "empty-path"),
    ("../secret.md", "parent-traversal"),
    ("notes/../../etc/passwd", "parent-traversal"),
    ("a/..", "parent-traversal"),
    ("..", "parent-traversal"),
    ("/etc/passwd", "absolute-path"),
    ("a\x00.md", "nul-byte"),
    ("CON", "reserved-name"),
    ("con.md", "reserved-name"),
    ("notes/NUL.txt", "reserved-name"),
    ("Lpt1.md", "reserved-name"),
    ("COM9.tar.gz", "reserved-name"),
    ("aux .md", "reserved-name"),
    ("a//b.md", "empty-segment"),
    ("a/", "empty-segment"),
    ("./a.md", "dot-segment"),
]


@pytest.mark.parametrize(("ref", "rule"), BAD_REFS)
def test_contain_refuses_with_rule(tmp_path: Path, ref: str, rule: str) -> None:
    with pytest.raises(PathError) as info:
        contain(tmp_path, ref)
    assert info.value.rule == rule
    assert info.value.exit_code == 2


@pytest.mark.parametrize(
    "ref",
    [
        "a.md",
        "Folder/Note.md",
        "café.md",
        "..hidden-ish.md",
        "a..b.md",
        "COM10.md",
        "console.md",
        "100%.md",
        "%41.md",
        # POSIX file names: ':' '\\' and '%' are characters, never a drive, a separator or
        # an encoding (each stays a file inside the root)
        "x:y.md",
        "C:notes.md",
        "50%2e.md",
        "%2e%2e/secret.md",
        "notes%2fsecret.md",
        "a%00.md",
        "a\\b.md",
        "..\\secret.md",
    ],
)
def test_contain_accepts_plain_paths(tmp_path: Path, ref: str) -> None:
    assert contain(tmp_path, ref) == Path(os.path.realpath(tmp_path)) / ref


def test_contain_refuses_symlink_escape(tmp_path: Path) -> None:
    root = tmp_path / "store"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "link").symlink_to(outside)
    (root / "file-link.md").symlink_to(outside / "x.md")
    for ref in ("link/x.md", "file-link.md", "link"):
        with pytest.raises(PathError) as info:
            contain(root, ref)
        assert info.value.rule == "symlink-escape"


def test_contain_follows_symlink_inside(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    assert contain(tmp_path, "alias/n.md") == Path(os.path.realpath(tmp_path)) / "real" / "n.md"


@given(
    st.lists(
        st.sampled_from(["a", "b", "..", ".", "", "%2e", "c.md", "\\", "/"]), min_size=1, max_size=6
    )
)
def test_contain_never_escapes(parts: list[str]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        ref = "/".join(parts)
        try:
            resolved = contain(Path(d), ref)
        except PathError:
            return
        real = os.path.realpath(d)
        assert str(resolved) == real or str(resolved).startswith(real + os.sep)


# -- store roots ------------------------------------------------------------------------------


def test_root_slash_refused() -> None:
    with pytest.raises(PathError) as info:
        validate_store_root(Path("/"))
    assert info.value.rule == "root-is-filesystem-root"


@pytest.mark.parametrize("home", [str(Path.home()), "/root", "/home/someone", "~"])
def test_root_home_refused(home: str) -> None:
    with pytest.raises(PathError) as info:
        validate_store_root(Path(home))
    assert info.value.rule == "root-is-home"


def test_root_missing_or_file_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    for bad in (tmp_path / "missing", tmp_path / "f"):
        with pytest.raises(PathError) as info:
            validate_store_root(bad)
        assert info.value.rule == "root-not-directory"


def test_root_inside_home_and_symlinked_root_ok(tmp_path: Path) -> None:
    (tmp_path / "vault").mkdir()
    (tmp_path / "via").symlink_to(tmp_path / "vault")
    assert validate_store_root(tmp_path / "via") == Path(os.path.realpath(tmp_path / "vault"))


# -- walking ----------------------------------------------------------------------------------


def _touch(p: Path, text: str = "x") -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def test_walk_lists_notes_sorted_and_skips_dot_entries(tmp_path: Path) -> None:
    for rel in [
        "b.md",
        "A.md",
        "sub/c.MD",
        ".obsidian/app.md",
        ".git/x.md",
        ".trash/t.md",
        ".hidden.md",
        "sub/.n.md.1.goat-tmp",
        "img.png",
        "sub/doc.pdf",
    ]:
        _touch(tmp_path / rel)
    res = walk_notes(tmp_path)
    assert [f.path for f in res.files] == ["A.md", "b.md", "sub/c.MD"]
    assert res.attachments == ["img.png", "sub/doc.pdf"]
    assert res.skipped == []
    f = res.files[0]
    assert f.size == 1 and f.mtime_ns == os.stat(tmp_path / "A.md").st_mtime_ns


_REL_NAMES = st.lists(
    st.tuples(
        st.sampled_from(["", "a/", "A/", "a b/", "a/b/", "z/", "ü/"]),
        st.text(alphabet="abAB é_-1", min_size=1, max_size=6),
        st.sampled_from([".md", ".MD", ".txt"]),
    ),
    max_size=25,
)


@given(names=_REL_NAMES)
def test_walk_folders_hold_exactly_the_files_grouped_by_their_folder(
    tmp_path_factory: pytest.TempPathFactory, names: list[tuple[str, str, str]]
) -> None:
    """``folders`` is what SearchIndex.sync groups by (the path before its last ``/``), each
    folder's notes sorted by path, no empty folder; ``files`` is the same notes in page
    order. Any mix of names, folders, cases and extensions."""
    root = tmp_path_factory.mktemp("walk")
    for folder, stem, ext in names:
        if stem.strip(" .") and not stem.startswith("."):
            _touch(root / f"{folder}{stem}{ext}")
    res = walk_notes(root)
    grouped: dict[str, list[str]] = {}
    for f in res.files:
        grouped.setdefault(f.path.rpartition("/")[0], []).append(f.path)
    assert {k: sorted(v) for k, v in grouped.items()} == {
        k: [f.path for f in v] for k, v in res.folders.items()
    }
    assert all(res.folders.values())
    flat = [f for group in res.folders.values() for f in group]
    assert sorted(flat) == sorted(res.files) and len(res.files) == len(set(res.files))
    keys = [(f.path.casefold(), f.path) for f in res.files]
    assert keys == sorted(keys)
    assert res.files is res.files  # sorted once, then kept
    assert repr(res).startswith(f"WalkResult(notes={len(flat)}, folders={len(res.folders)}")


def test_walk_symlinks_outside_skipped_and_reported(tmp_path: Path) -> None:
    root, outside = tmp_path / "store", tmp_path / "outside"
    _touch(outside / "secret.md")
    _touch(root / "in.md")
    (root / "out-dir").symlink_to(outside)
    (root / "out-file.md").symlink_to(outside / "secret.md")
    (root / "broken.md").symlink_to(root / "nowhere.md")
    (root / "inside-link.md").symlink_to(root / "in.md")
    res = walk_notes(root)
    assert [f.path for f in res.files] == ["in.md", "inside-link.md"]
    assert dict(res.skipped) == {
        "broken.md": "broken symlink",
        "out-dir": "symlink points outside the store",
        "out-file.md": "symlink points outside the store",
    }


def test_walk_symlink_cycle_terminates(tmp_path: Path) -> None:
    _touch(tmp_path / "a" / "n.md")
    (tmp_path / "a" / "loop").symlink_to(tmp_path / "a")
    (tmp_path / "a" / "up").symlink_to(tmp_path)
    res = walk_notes(tmp_path)
    assert [f.path for f in res.files] == ["a/n.md"]
    assert {p for p, _ in res.skipped} == {"a/loop", "a/up"}
    assert all("cycle" in reason for _, reason in res.skipped)


def test_walk_reports_followed_symlinks_and_sorts_case_insensitively(tmp_path: Path) -> None:
    root = tmp_path / "store"
    for rel in ["b.md", "B.md", "a b.md", "a/z.md", "A/y.md", "real/n.md", "x.txt", "sub/x.MD"]:
        _touch(root / rel)
    (root / "link-dir").symlink_to(root / "real")
    (root / "link.md").symlink_to(root / "b.md")
    (root / "link.png").symlink_to(root / "x.txt")
    res = walk_notes(str(root))  # a str root works as a Path does
    paths = [f.path for f in res.files]
    # casefold order, ties by exact path; '/' sorts after ' ' as in any string comparison
    assert paths == sorted(paths, key=lambda p: (p.casefold(), p))
    assert paths[:4] == ["a b.md", "A/y.md", "a/z.md", "B.md"]
    # a folder is listed under its own path; a link to it is an alias, reported, not a cycle
    assert res.symlinks == ["link.md", "link.png"]
    assert "real/n.md" in paths and "link-dir/n.md" not in paths
    assert res.skipped == [("link-dir", "symlink to folder 'real', already listed there")]
    assert res.attachments == ["link.png", "x.txt"]
    note = res.files[paths.index("link.md")]
    st = os.stat(root / "b.md")
    assert (note.mtime_ns, note.size) == (st.st_mtime_ns, st.st_size)  # the target's
    assert note == NoteFile("link.md", st.st_mtime_ns, st.st_size)
    assert walk_notes(tmp_path / "empty-missing").skipped[0][0] == "."


# -- atomic writes ----------------------------------------------------------------------------


def test_atomic_write_creates_with_umask_mode(tmp_path: Path) -> None:
    p = tmp_path / "n.md"
    tag = atomic_write(p, b"hello", expected_etag=MISSING_ETAG)
    assert p.read_bytes() == b"hello" and tag == etag(b"hello")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(p.stat().st_mode) == 0o644 & ~umask
    assert sorted(os.listdir(tmp_path)) == ["n.md"]


def test_atomic_write_keeps_existing_permissions(tmp_path: Path) -> None:
    p = tmp_path / "n.md"
    p.write_bytes(b"old")
    p.chmod(0o600)
    atomic_write(p, b"new", expected_etag=etag(b"old"))
    assert p.read_bytes() == b"new"
    assert stat.S_IMODE(p.stat().st_mode) == 0o600


def test_atomic_write_conflict_leaves_no_partial_file(tmp_path: Path) -> None:
    p = tmp_path / "n.md"
    p.write_bytes(b"edited by an editor")
    with pytest.raises(Conflict):
        atomic_write(p, b"mine", expected_etag=etag(b"what I read"))
    assert p.read_bytes() == b"edited by an editor"
    assert os.listdir(tmp_path) == ["n.md"]
    with pytest.raises(Conflict, match="was created"):
        atomic_write(p, b"mine", expected_etag=MISSING_ETAG)
    q = tmp_path / "gone.md"
    with pytest.raises(Conflict, match="was deleted"):
        atomic_write(q, b"mine", expected_etag=etag(b"x"))
    assert os.listdir(tmp_path) == ["n.md"]


def test_atomic_write_failure_removes_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "n.md"
    p.write_bytes(b"old")

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        atomic_write(p, b"new")
    assert os.listdir(tmp_path) == ["n.md"] and p.read_bytes() == b"old"


def test_atomic_write_through_symlink_keeps_link(tmp_path: Path) -> None:
    (tmp_path / "real.md").write_bytes(b"a")
    (tmp_path / "link.md").symlink_to(tmp_path / "real.md")
    atomic_write(tmp_path / "link.md", b"b", expected_etag=etag(b"a"))
    assert (tmp_path / "link.md").is_symlink()
    assert (tmp_path / "real.md").read_bytes() == b"b"


def test_current_etag(tmp_path: Path) -> None:
    assert current_etag(tmp_path / "none") == MISSING_ETAG
    (tmp_path / "x").write_bytes(b"abc")
    assert current_etag(tmp_path / "x") == etag(b"abc") and len(etag(b"abc")) == 32


# -- lock -------------------------------------------------------------------------------------


def test_store_lock_times_out_with_conflict(tmp_path: Path) -> None:
    path = tmp_path / "locks" / "k-store.lock"
    held = threading.Event()
    release = threading.Event()

    def holder() -> None:
        with StoreLock(path):
            held.set()
            release.wait(5)

    t = threading.Thread(target=holder)
    t.start()
    assert held.wait(5)
    try:
        with pytest.raises(Conflict, match="store is busy"), StoreLock(path, timeout_s=0.2):
            pass
    finally:
        release.set()
        t.join()
    with StoreLock(path, timeout_s=1):
        pass
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


# -- safe titles ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("title", "name"),
    [
        ("A/B testing", "A-B testing"),
        ("back\\slash", "back-slash"),
        ("Plan: Q3?", "Plan Q3"),
        ('say "hi" <now> | *', "say hi now"),
        ("tabs\tand\nnewlines", "tabs and newlines"),
        ("trailing dots...", "trailing dots"),
        ("  spaced  ", "spaced"),
        ("...dotfile", "dotfile"),
        ("cafe\u0301", "café"),
        ("con-artist", "con-artist"),
    ],
)
def test_safe_title_filename(title: str, name: str) -> None:
    assert safe_title_filename(title) == name


@pytest.mark.parametrize(
    ("title", "rule"),
    [
        ("", "empty-title"),
        ("???", "empty-title"),
        ("...", "empty-title"),
        ("CON", "reserved-name"),
        ("nul.txt", "reserved-name"),
        ("lpt3", "reserved-name"),
    ],
)
def test_safe_title_filename_refuses(title: str, rule: str) -> None:
    with pytest.raises(PathError) as info:
        safe_title_filename(title)
    assert info.value.rule == rule


@given(st.text(min_size=1, max_size=300))
def test_safe_title_filename_is_one_safe_name(title: str) -> None:
    try:
        name = safe_title_filename(title)
    except PathError as exc:
        assert exc.rule in {"empty-title", "reserved-name"}
        return
    assert "/" not in name and "\\" not in name and "\x00" not in name
    assert not any(c in name for c in ':*?"<>|')
    assert not name.startswith(".") and not name.endswith((".", " "))
    assert len(name.encode("utf-8")) <= 200
    assert unicodedata.is_normalized("NFC", name) or name == unicodedata.normalize("NFC", name)
    assert safe_title_filename(name) == name  # idempotent


# -- an editor's save racing atomic_write (docs/design.md, Known gaps) ---------------------

needs_exchange = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="renameat2(RENAME_EXCHANGE) is Linux only"
)


def _editor_save(note: Path, data: bytes) -> None:
    """What an editor does: its own temp file, fsync, rename over the note; no lock."""
    tmp = note.with_name(f".{note.name}.swp")
    tmp.write_bytes(data)
    os.rename(tmp, note)


@needs_exchange
def test_an_editor_save_inside_the_write_window_survives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The editor's rename lands after the note was read and just before GOAT's own rename:
    GOAT reports Conflict and the editor's bytes are the note."""
    from goat_core import fileio

    assert fileio.rename_exchange_supported(tmp_path)
    note = tmp_path / "n.md"
    note.write_bytes(b"v1\n")
    read = etag(note.read_bytes())
    real = fileio._renameat2

    def racing(old: Path, new: Path, flags: int) -> bool:
        if new == note and not racing.fired:  # type: ignore[attr-defined]
            racing.fired = True  # type: ignore[attr-defined]
            _editor_save(note, b"v1\nthe editor's line\n")
        return real(old, new, flags)

    racing.fired = False  # type: ignore[attr-defined]
    monkeypatch.setattr(fileio, "_renameat2", racing)
    with pytest.raises(Conflict, match="changed since it was read"):
        atomic_write(note, b"v1\nGOAT's entry\n", expected_etag=read)
    assert note.read_bytes() == b"v1\nthe editor's line\n"
    assert os.listdir(tmp_path) == ["n.md"]


@needs_exchange
def test_an_editor_save_after_the_swap_replaces_the_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The editor's rename lands after GOAT swapped its file in, before GOAT verified what it
    swapped out: the editor's later save is the note, as with any later save, and GOAT's
    write is a Conflict, never answered as stored (the file no longer holds it)."""
    from goat_core import fileio

    note = tmp_path / "n.md"
    note.write_bytes(b"v1\n")
    real_etag = fileio.current_etag

    def late_editor(path: Path) -> str:
        if path != note and not late_editor.fired:  # type: ignore[attr-defined]
            late_editor.fired = True  # type: ignore[attr-defined]
            _editor_save(note, b"v1\nthe editor's line\n")
        return real_etag(path)

    late_editor.fired = False  # type: ignore[attr-defined]
    monkeypatch.setattr(fileio, "current_etag", late_editor)
    with pytest.raises(Conflict, match="changed right after this write"):
        atomic_write(note, b"v1\nGOAT's entry\n", expected_etag=etag(b"v1\n"))
    assert note.read_bytes() == b"v1\nthe editor's line\n"
    assert os.listdir(tmp_path) == ["n.md"]


@needs_exchange
def test_a_note_an_editor_creates_meanwhile_is_never_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from goat_core import fileio

    note = tmp_path / "n.md"
    real = fileio._renameat2

    def racing(old: Path, new: Path, flags: int) -> bool:
        if new == note and not note.exists():
            _editor_save(note, b"the editor's new note\n")
        return real(old, new, flags)

    monkeypatch.setattr(fileio, "_renameat2", racing)
    with pytest.raises(Conflict, match="was created"):
        atomic_write(note, b"GOAT's note\n", expected_etag=MISSING_ETAG)
    assert note.read_bytes() == b"the editor's new note\n"
    assert os.listdir(tmp_path) == ["n.md"]


def test_without_renameat2_the_checked_write_still_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The path other platforms take: hash check, then os.replace (and link for create)."""
    from goat_core import fileio

    monkeypatch.setattr(fileio, "_renameat2_fn", False)
    note = tmp_path / "n.md"
    atomic_write(note, b"a", expected_etag=MISSING_ETAG)
    with pytest.raises(Conflict, match="was created"):
        atomic_write(note, b"b", expected_etag=MISSING_ETAG)
    atomic_write(note, b"b", expected_etag=etag(b"a"))
    with pytest.raises(Conflict, match="changed"):
        atomic_write(note, b"c", expected_etag=etag(b"a"))
    assert note.read_bytes() == b"b"
    assert os.listdir(tmp_path) == ["n.md"]


# -- sweep_temp_files (docs/design.md, Known gaps) -----------------------------------------


def test_sweep_removes_only_temp_files_of_dead_writers(tmp_path: Path) -> None:
    import subprocess
    import time

    from goat_core.filestore import sweep_temp_files

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / "sub").mkdir()
    names = {
        f"sub/.n.md.{dead.pid}-0123456789ab.goat-tmp": False,  # dead writer: removed
        f".n.md.{os.getpid()}-0123456789ab.goat-tmp": True,  # live writer: kept
        ".n.md.0123456789ab.goat-tmp": True,  # older version, recent: kept
        ".old.md.0123456789ab.goat-tmp": False,  # older version, an hour old: removed
        ".n.md.swp": True,  # not GOAT's
    }
    for rel in names:
        (tmp_path / rel).write_bytes(b"partial")
    past = time.time() - 3600
    os.utime(tmp_path / ".old.md.0123456789ab.goat-tmp", (past, past))
    walk = walk_notes(tmp_path)
    assert sorted(walk.temp_files) == sorted(n for n in names if n.endswith(".goat-tmp"))
    removed = sweep_temp_files(tmp_path, [*walk.temp_files, ".n.md.swp"])
    assert sorted(removed) == sorted(n for n, keep in names.items() if not keep)
    for rel, keep in names.items():
        assert (tmp_path / rel).exists() == keep, rel


def test_atomic_write_names_its_temp_file_with_its_pid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    real = os.fsync

    def spy(fd: int) -> None:
        seen.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc")
    monkeypatch.setattr(os, "fsync", spy)
    atomic_write(tmp_path / "n.md", b"x")
    assert any(f".n.md.{os.getpid()}-" in s and s.endswith(".goat-tmp") for s in seen)


def test_a_write_replaced_right_after_its_rename_is_a_conflict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exact case: an editor's save landing between GOAT's rename and its answer (one
    append in 4,345 was answered ``stored`` while the file already held the editor's bytes)."""
    from goat_core import fileio
    from goat_core.errors import Conflict

    note = tmp_path / "n.md"
    note.write_bytes(b"before\n")
    real = fileio.fsync_dir

    def editor_saves(folder: Path) -> None:
        real(folder)
        note.write_bytes(b"the editor's bytes\n")

    monkeypatch.setattr(fileio, "fsync_dir", editor_saves)
    with pytest.raises(Conflict, match="changed right after this write"):
        fileio.atomic_write(note, b"before\nappended\n", expected_etag=fileio.etag(b"before\n"))
    assert note.read_bytes() == b"the editor's bytes\n"  # the editor's save is kept
