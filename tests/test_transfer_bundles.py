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
