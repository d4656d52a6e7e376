"""Bad bundles are refused whole, before anything is imported: one test per row of the
table (docs/design.md, Copy, export and import). A good bundle reads back exactly."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from goat_core.contract import Page
from goat_core.errors import BadInput, NotFound
from goat_core.host._okf import MANIFEST_NAME, read_bundle, render_page, stored_text

GOOD = "---\ntype: note\ntitle: A\n---\nSee [[B]].\n"


def _manifest(root: Path, pages: dict[str, str]) -> None:
    (root / MANIFEST_NAME).write_text(
        json.dumps(
            {
                "format": "goat-export",
                "version": 1,
                "source": {"scope": "pen:x", "provider": "markdown"},
                "pages": [
                    {"path": p, "id": p, "sha256": hashlib.sha256(t.encode()).hexdigest()}
                    for p, t in pages.items()
                ],
            }
        )
    )


def bundle(root: Path, pages: dict[str, str], manifest: bool = True) -> Path:
    for rel, text in pages.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    if manifest:
        _manifest(root, pages)
    return root


def test_good_bundle_reads_back_exactly(tmp_path: Path) -> None:
    root = bundle(tmp_path, {"A.md": GOOD, "sub/B.md": "no frontmatter\n"})
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    read = read_bundle(root)
    assert [f.path for f in read.files] == ["A.md", "sub/B.md"]
    assert read.files[0].body == "See [[B]].\n" and read.files[0].title == "A"
    assert read.files[1].title == "B" and read.files[1].frontmatter == {}
    assert read.source_scope == "pen:x" and read.ignored == ["image.png"]


def test_folder_without_manifest_is_accepted_catalog_files_skipped(tmp_path: Path) -> None:
    root = bundle(tmp_path, {"A.md": GOOD, "index.md": "# Index\n", "log.md": "x"}, False)
    read = read_bundle(root)
    assert [f.path for f in read.files] == ["A.md"]
    assert read.source_scope == "folder" and {"index.md", "log.md"} <= set(read.ignored)


def _symlinked_file(root: Path) -> None:
    bundle(root, {"A.md": GOOD}, manifest=False)
    outside = root.parent / "outside.md"
    outside.write_text(GOOD)
    os.symlink(outside, root / "link.md")


def _symlinked_folder(root: Path) -> None:
    bundle(root, {"A.md": GOOD}, manifest=False)
    (root.parent / "elsewhere").mkdir()
    os.symlink(root.parent / "elsewhere", root / "linked")


def _climbing_manifest(root: Path) -> None:
    bundle(root, {"A.md": GOOD}, manifest=False)
    _manifest(root, {"A.md": GOOD, "../escape.md": GOOD})


def _oversize(root: Path) -> None:
    bundle(root, {"A.md": GOOD, "Big.md": "x" * (4 * 1024 * 1024 + 1)}, manifest=False)


def _bad_frontmatter(root: Path) -> None:
    bundle(root, {"A.md": GOOD, "Bad.md": "---\ntitle: [unclosed\n---\nbody\n"}, False)


def _hash_mismatch(root: Path) -> None:
    bundle(root, {"A.md": GOOD})
    (root / "A.md").write_text(GOOD + "tampered\n")


def _unlisted_file(root: Path) -> None:
    bundle(root, {"A.md": GOOD})
    (root / "Extra.md").write_text(GOOD)


def _listed_but_missing(root: Path) -> None:
    bundle(root, {"A.md": GOOD})
    (root / "A.md").unlink()


def _not_utf8(root: Path) -> None:
    bundle(root, {"A.md": GOOD}, manifest=False)
    (root / "Latin.md").write_bytes(b"caf\xe9\n")


def _broken_manifest(root: Path) -> None:
    bundle(root, {"A.md": GOOD}, manifest=False)
    (root / MANIFEST_NAME).write_text("{not json")


def _case_twins(root: Path) -> None:
    bundle(root, {"A.md": GOOD}, manifest=False)
    (root / "sub").mkdir()
    (root / "sub" / "x.md").write_text(GOOD)
    (root / "sub" / "X.md").write_text(GOOD)
    if len(list((root / "sub").iterdir())) < 2:
        pytest.skip("case-insensitive file system")


def _alias_bomb(root: Path) -> None:
    lines = ["---", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    bundle(root, {"A.md": GOOD, "Bomb.md": "\n".join([*lines, "---", "body", ""])}, False)


def _name_not_utf8(root: Path) -> None:
    bundle(root, {"A.md": GOOD}, manifest=False)
    with open(os.path.join(os.fsencode(root), b"bad\xff.md"), "wb") as f:
        f.write(GOOD.encode("utf-8"))


BAD: list[tuple[str, Callable[[Path], None], str]] = [
    ("symlinked-file", _symlinked_file, "link.md: a symlink"),
    ("symlinked-folder", _symlinked_folder, "linked: a symlink"),
    ("path-climbs-out", _climbing_manifest, "../escape.md"),
    ("over-size-limit", _oversize, "over the size limit"),
    ("frontmatter-does-not-parse", _bad_frontmatter, "Bad.md: frontmatter does not parse"),
    ("manifest-hash-mismatch", _hash_mismatch, "does not match the manifest"),
    ("file-not-in-manifest", _unlisted_file, "Extra.md: not listed in the manifest"),
    ("manifest-file-missing", _listed_but_missing, "listed in the manifest but missing"),
    ("not-utf8", _not_utf8, "Latin.md: not UTF-8"),
    ("manifest-not-json", _broken_manifest, "not readable JSON"),
    ("case-only-twins", _case_twins, "differs only in case"),
    ("yaml-alias-bomb", _alias_bomb, "Bomb.md: frontmatter does not parse: its YAML aliases"),
    ("name-not-utf8", _name_not_utf8, "its name is not UTF-8"),
]


@pytest.mark.parametrize(("name", "make", "message"), BAD, ids=[row[0] for row in BAD])
def test_bad_bundle_is_refused_whole(
    tmp_path: Path, name: str, make: Callable[[Path], None], message: str
) -> None:
    root = tmp_path / "bundle"
    root.mkdir()
    make(root)
    with pytest.raises(BadInput, match="nothing was imported") as info:
        read_bundle(root)
    assert message in str(info.value)
    assert info.value.exit_code == 2
    # each problem names its own rule once: never "(rule bundle-hash) (rule bundle)"
    assert str(info.value).count("(rule ") == str(info.value).count("; ") + 1
    assert not str(info.value).endswith(") (rule bundle)")


def test_missing_bundle_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        read_bundle(tmp_path / "absent")


TYPED = "---\n# as written\ndate: 2024-01-05\nn: 42\ncopied_from: {id: x}\n---\nbody\n"


def _typed_page(**update: object) -> Page:
    from goat_core.filestore import jsonable, parse_note

    note = parse_note(TYPED)
    page = Page(
        id="t.md",
        title="T",
        path="t.md",
        frontmatter=jsonable(note.data),
        body=note.body,
        frontmatter_text=TYPED[: len(TYPED) - len(note.body)],
    )
    return page.model_copy(update=update)


def test_a_page_kept_as_text_is_rendered_byte_for_byte() -> None:
    """Its frontmatter lines as written (a date stays a date, the comment stays), dropped
    keys lose only their lines, OKF fields are appended."""
    page = _typed_page()
    assert stored_text(page) == TYPED
    assert render_page(page, okf=False) == TYPED
    assert render_page(page, okf=False, drop=("copied_from",)) == (
        "---\n# as written\ndate: 2024-01-05\nn: 42\n---\nbody\n"
    )
    assert render_page(page, default_type="note") == (
        "---\n# as written\ndate: 2024-01-05\nn: 42\ncopied_from: {id: x}\n"
        "type: note\ntitle: T\n---\nbody\n"
    )


def test_a_page_a_policy_changed_is_rendered_from_what_is_shown() -> None:
    """The kept text never carries past ``goat_filter_browse`` what it hid or changed: a
    hidden frontmatter key is not in the text, a changed body is the body shown."""
    hidden = _typed_page(frontmatter={"date": "2024-01-05"})
    assert stored_text(hidden) is None
    assert render_page(hidden, okf=False) == "---\ndate: '2024-01-05'\n---\nbody\n"
    redacted = _typed_page(body="redacted\n")
    assert render_page(redacted, okf=False) == TYPED.replace("body\n", "redacted\n")


def test_a_page_without_kept_text_is_rendered_from_its_frontmatter() -> None:
    page = _typed_page(frontmatter_text=None)
    assert stored_text(page) is None
    assert render_page(page, okf=False) == (
        "---\ndate: '2024-01-05'\nn: 42\ncopied_from: {id: x}\n---\nbody\n"
    )


# -- adversarial findings: each with the exact input that was reproduced ----------------------
NFC, NFD = "caf\u00e9.md", "cafe\u0301.md"


def test_an_nfd_only_bundle_reads_under_its_nfc_name(tmp_path: Path) -> None:
    """The exact input: a bundle holding only ``café.md`` in NFD (as macOS tools write it)
    was refused "not readable: No such file or directory". It reads, under the NFC name
    a markdown store gives pages, with the file's own text."""
    (tmp_path / NFD).write_text("AAA\n", encoding="utf-8")
    read = read_bundle(tmp_path)
    assert [f.path for f in read.files] == [NFC]
    assert read.files[0].body == "AAA\n" and read.files[0].title == "caf\u00e9"


def test_an_nfd_only_bundle_with_a_manifest_reads(tmp_path: Path) -> None:
    (tmp_path / NFD).write_text("AAA\n", encoding="utf-8")
    _manifest(tmp_path, {NFC: "AAA\n"})
    assert [f.text for f in read_bundle(tmp_path).files] == ["AAA\n"]


def test_nfc_and_nfd_twins_are_refused_naming_both_forms(tmp_path: Path) -> None:
    """The exact input: ``café.md`` in NFC ("AAA") and in NFD ("BBB") imported as
    ``copied 1, duplicates 1`` and "BBB" was lost. Twins are refused, both forms named."""
    (tmp_path / NFC).write_text("AAA\n", encoding="utf-8")
    (tmp_path / NFD).write_text("BBB\n", encoding="utf-8")
    if len(list(tmp_path.iterdir())) < 2:
        pytest.skip("the file system normalises names")
    with pytest.raises(BadInput, match="nothing was imported") as info:
        read_bundle(tmp_path)
    message = str(info.value)
    assert info.value.exit_code == 2
    assert "caf\\xe9.md" in message and "cafe\\u0301.md" in message, message
    assert "(rule bundle-path)" in message


def test_a_manifest_nested_100000_deep_is_bad_input(tmp_path: Path) -> None:
    """The exact input: ``goat-export.json`` nested 100,000 deep exited 1 "unexpected
    RecursionError"; it is refused (exit 2) with a one-line reason."""
    bundle(tmp_path, {"A.md": GOOD}, manifest=False)
    (tmp_path / MANIFEST_NAME).write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(BadInput, match="nothing was imported") as info:
        read_bundle(tmp_path)
    assert info.value.exit_code == 2
    assert "nested too deeply" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("deep", ['{"a":' * 100_000 + "1" + "}" * 100_000, "[" * 100_000])
def test_malformed_json_of_any_depth_is_bad_input(tmp_path: Path, deep: str) -> None:
    bundle(tmp_path, {"A.md": GOOD}, manifest=False)
    (tmp_path / MANIFEST_NAME).write_text(deep)
    with pytest.raises(BadInput, match="rule bundle-manifest") as info:
        read_bundle(tmp_path)
    assert "\n" not in str(info.value)


def test_every_skipped_file_is_named_with_its_reason(tmp_path: Path) -> None:
    """The exact input: a folder import skipped ``.hidden/h.md`` and ``notes.txt`` without
    a word and said complete. Each is named with why; neither makes it incomplete (a
    hidden folder is a choice, a ``.txt`` is not a page)."""
    bundle(tmp_path, {"a.md": GOOD, ".hidden/h.md": GOOD, "notes.txt": "text\n"}, False)
    read = read_bundle(tmp_path)
    assert [f.path for f in read.files] == ["a.md"]
    skipped = {s.path: s for s in read.skipped}
    assert set(skipped) == {".hidden/", "notes.txt"}
    assert "hidden folder" in skipped[".hidden/"].reason
    assert "1 .md file" in skipped[".hidden/"].reason
    assert "not a Markdown page" in skipped["notes.txt"].reason
    assert not any(s.page for s in read.skipped) and read.complete


def test_a_skipped_markdown_file_makes_the_import_incomplete(tmp_path: Path) -> None:
    """A page-shaped file skipped for a reason the user can fix (``.markdown``, not
    ``.md``) is named and the bundle is not complete."""
    bundle(tmp_path, {"a.md": GOOD, "b.markdown": GOOD}, False)
    read = read_bundle(tmp_path)
    (skip,) = read.skipped
    assert skip.path == "b.markdown" and skip.page and "rename it" in skip.reason
    assert not read.complete


def _interrupted_inside(root: Path) -> Path:
    """What an export killed midway left before: pages, no manifest, and its staging
    folder inside DIR."""
    bundle(root, {f"p{n}.md": GOOD for n in range(5)}, manifest=False)
    (root / ".goat-export.0123456789ab" / "p9.md").parent.mkdir()
    (root / ".goat-export.0123456789ab" / "p9.md").write_text(GOOD)
    return root


def _interrupted_beside(root: Path) -> Path:
    bundle(root, {f"p{n}.md": GOOD for n in range(5)}, manifest=False)
    (root.parent / f".goat-export.{root.name}.4242.0123456789ab").mkdir()
    return root


def _staging_itself(root: Path) -> Path:
    staging = root.parent / f".goat-export.{root.name}.4242.0123456789ab"
    bundle(staging, {f"p{n}.md": GOOD for n in range(5)}, manifest=False)
    return staging


@pytest.mark.parametrize("make", [_interrupted_inside, _interrupted_beside, _staging_itself])
def test_an_interrupted_export_is_refused_as_such(
    tmp_path: Path, make: Callable[[Path], Path]
) -> None:
    root = tmp_path / "D"
    root.mkdir()
    folder = make(root)
    with pytest.raises(BadInput, match="interrupted export") as info:
        read_bundle(folder)
    assert info.value.exit_code == 2 and ".goat-export." in str(info.value)


def test_an_export_stages_beside_and_leaves_nothing_else(tmp_path: Path) -> None:
    from goat_core.host._okf import write_bundle

    target = tmp_path / "D"
    write_bundle(target, [("a.md", GOOD), ("sub/b.md", GOOD)], {"format": "goat-export"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["D"]
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*.md")) == [
        "a.md",
        "sub/b.md",
    ]
    assert (target / MANIFEST_NAME).is_file()


def test_a_parent_that_takes_no_folder_stages_inside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DIR exists but its parent refuses a new folder (read-only, another user's): the
    bundle is staged inside DIR and moved in, and no staging folder stays."""
    import errno

    from goat_core.host._okf import write_bundle

    target = tmp_path / "D"
    target.mkdir()
    real = Path.mkdir

    def mkdir(self: Path, *args: object, **kw: object) -> None:
        if self.parent == tmp_path and self.name.startswith(".goat-export."):
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        real(self, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "mkdir", mkdir)
    write_bundle(target, [("a.md", GOOD)], {"format": "goat-export"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["D"]
    assert sorted(p.name for p in target.iterdir()) == ["a.md", MANIFEST_NAME]
