"""Copy, export and import on markdown stores (docs/design.md, Copy, export and import):
the round trip on a copy of the real Obsidian Help vault, and the one-way copy from Global
into a Pen, through the ``goat`` commands and the host API."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO

from goat_core.cli import cli
from goat_core.contract import Scope, TransferOutcome
from goat_core.filestore import jsonable, parse_note
from goat_core.host import Chat, GoatHome, SyncMemoryHost
from goat_core.testing.fixtures import copy_test_vault


def _tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _goat(home: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [*args, "--home", str(home)])
    return result.exit_code, result.output


@pytest.fixture
def host(tmp_path: Path) -> Iterator[SyncMemoryHost]:
    with SyncMemoryHost(home=GoatHome.at(tmp_path / "home")) as h:
        yield h


def test_round_trip_on_the_real_vault(tmp_path: Path, host: SyncMemoryHost) -> None:
    vault = copy_test_vault(REPO, tmp_path / "obsidian-help-en")
    before = _tree(vault)
    host.bind(Scope.pen("docs"), "markdown", {"root": str(vault)})
    host.bind(Scope.pen("fresh"), "markdown", {})
    home, bundle = tmp_path / "home", tmp_path / "bundle"

    started = time.monotonic()
    code, out = _goat(home, "export", str(bundle), "--pen", "docs", "--json")
    exported = json.loads(out)
    assert code == 0, out
    code, out = _goat(home, "import", str(bundle), "--pen", "fresh", "--json")
    imported = json.loads(out)
    assert code == 0, out
    elapsed = time.monotonic() - started

    pages = [p.relative_to(vault).as_posix() for p in vault.rglob("*.md")]
    assert exported["summary"]["copied"] == len(pages) == imported["summary"]["copied"]
    manifest = json.loads((bundle / "goat-export.json").read_text())
    assert manifest["source"] == {
        "scope": "pen:docs",
        "provider": "markdown",
        "label": "Pen `docs` memory",
    }
    assert manifest["complete"] is True and manifest["counts"]["pages"] == len(pages)
    assert sorted(p.relative_to(bundle).as_posix() for p in bundle.rglob("*.md")) == sorted(pages)
    assert _tree(vault) == before  # the source is only read

    src, dst = host.context_for(Chat("docs")), host.context_for(Chat("fresh"))
    root = Path(dst._provider.root)  # type: ignore[union-attr]
    for rel in pages:
        original = parse_note((vault / rel).read_text("utf-8")).body
        copy = parse_note((root / rel).read_text("utf-8"))
        assert copy.body == original, rel  # byte-identical bodies
        provenance = copy.data["imported_from"]
        assert provenance["scope"] == "pen:docs" and provenance["provider"] == "markdown"
        assert provenance["id"] == rel and len(provenance["sha256"]) == 64
    vault_files = _tree(vault)
    code, out = _goat(home, "import", str(bundle), "--pen", "docs", "--json")
    back = json.loads(out)  # the bundle imported back into the Pen it came from
    assert code == 0, out
    assert back["summary"]["copied"] == 0 and back["summary"]["conflicts"] == 0
    assert back["summary"]["duplicates"] == len(pages)
    assert {i["target"] for i in back["items"]} == set(pages)  # each page found as itself
    assert _tree(vault) == vault_files  # nothing new

    a, b = src.link_map(), dst.link_map()
    assert [(n.id, n.title) for n in a.nodes] == [(n.id, n.title) for n in b.nodes]
    edges = sorted((e.source, e.raw, e.target, e.resolution.value) for e in a.edges)
    assert edges == sorted((e.source, e.raw, e.target, e.resolution.value) for e in b.edges)
    assert len(edges) > 1000

    files = _tree(root)
    code, out = _goat(home, "import", str(bundle), "--pen", "fresh", "--json")
    again = json.loads(out)
    assert code == 0 and again["summary"]["copied"] == 0
    assert again["summary"]["duplicates"] == len(pages)
    assert _tree(root) == files  # importing twice adds nothing
    print(f"round trip of {len(pages)} pages, {len(edges)} links: {elapsed:.1f}s")


def test_copy_from_global_to_a_pen(tmp_path: Path, host: SyncMemoryHost) -> None:
    home = tmp_path / "home"
    g = host.context_for(Chat())
    g.remember("The deploy key rotates every 90 days", title="Deploy notes")
    g.remember("Thursdays", title="Release rhythm")
    host.bind(Scope.pen("team"), "markdown", {})
    global_root = Path(g._provider.root)  # type: ignore[union-attr]
    source = _tree(global_root)

    code, out = _goat(home, "copy", "Deploy notes", "--to-pen", "team", "--dry-run")
    assert code == 0 and "would copy" in out
    pen = host.context_for(Chat("team"))
    assert pen.list_pages().items == ()

    code, out = _goat(home, "copy", "Deploy notes", "--to-pen", "team", "--json")
    report = json.loads(out)
    assert code == 0 and report["summary"]["copied"] == 1
    page = pen.get_page("Deploy notes")
    assert page.body == g.get_page("Deploy notes").body
    prov = page.frontmatter["copied_from"]
    assert prov["scope"] == "global" and prov["provider"] == "markdown"
    assert prov["id"] == "Deploy notes.md" and len(prov["sha256"]) == 64 and prov["at"]
    assert _tree(global_root) == source  # the source is never changed

    code, out = _goat(home, "copy", "Deploy notes", "--to-pen", "team", "--json")
    assert json.loads(out)["items"][0]["outcome"] == "duplicate"

    pen.remember("the Pen's own rhythm", title="Release rhythm")
    pen_root = Path(pen._provider.root)  # type: ignore[union-attr]
    pen_files = _tree(pen_root)
    code, out = _goat(home, "copy", "Release rhythm", "Deploy notes", "--to-pen", "team")
    assert code == 5 and "Release rhythm.md" in out
    assert _tree(pen_root) == pen_files  # a conflict: nothing of the batch is written

    report_obj = host.copy_pages(
        ["Release rhythm"], source=Scope.global_(), destination=Scope.pen("team"), rename=True
    )
    assert [i.outcome for i in report_obj.items] == [TransferOutcome.STORED]
    assert report_obj.items[0].target == "Release rhythm-2.md"
    assert pen.get_page("Release rhythm").body.startswith("the Pen's own rhythm")

    code, out = _goat(home, "copy", "Deploy notes", "--to-global")
    assert code == 2 and "both global" in out
    # a second scope on Global's folder is refused at bind (rule store-overlap), so a copy
    # can never be asked to duplicate pages in place
    code, out = _goat(home, "bind", "--pen", "alias", "markdown", "--set", f"root={global_root}")
    assert code == 2 and "store-overlap" in out
    code, out = _goat(home, "copy", "No such page", "--to-pen", "team")
    assert code == 3


def test_import_shows_the_policy_the_whole_note(tmp_path: Path) -> None:
    """The frontmatter is stored too, so a policy that refuses what only the frontmatter says
    refuses the page, and nothing is written (docs/design.md, Policy path)."""
    from goat_core.plugins import PluginSettings, Registry, register_plugin
    from goat_core.testing import RefuseWrites

    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "fm.md").write_text("---\nnote: Secret plan in frontmatter\n---\nclean body\n")
    refuse = RefuseWrites()
    registry = Registry.load(PluginSettings(strict=True))
    assert register_plugin(registry.pm, refuse, "policy")
    with SyncMemoryHost(home=GoatHome.at(tmp_path / "home"), registry=registry) as host:
        host.bind(Scope.pen("m"), "markdown", {})
        report = host.import_bundle(bundle, Scope.pen("m"))
        assert [i.outcome for i in report.items] == [TransferOutcome.REJECTED]
    assert refuse.seen == ["---\nnote: Secret plan in frontmatter\n---\nclean body\n"]
    assert not list((tmp_path / "home").rglob("fm.md"))


TYPED = """---
# kept as written, comment included
title: Typed values
date: 2024-01-05
when: 2024-01-05T10:30:00Z
count: 42
ratio: 1.5
done: true
nothing: null
quoted: "2024-01-05"
nested:
  - [a, 2024-02-01]
  - {k: 7, on: false}
tags: [ops, deploy]
---
Body with [[Links]] kept.
"""


def _yaml(text: str) -> dict:
    import yaml

    note = parse_note(text)
    assert note.error is None
    return yaml.safe_load(note.frontmatter_text)


def test_copy_and_export_keep_yaml_types_as_written(tmp_path: Path, host: SyncMemoryHost) -> None:
    """A copied, exported and re-imported page keeps each frontmatter value's YAML type
    (dates, datetimes, numbers, booleans, nulls, a quoted date-like string, nested lists),
    because its frontmatter text is kept byte for byte; only provenance and OKF fields are
    appended."""
    home, bundle = tmp_path / "home", tmp_path / "bundle"
    g = host.context_for(Chat())
    g.remember("seed", title="Seed")
    global_root = Path(g._provider.root)  # type: ignore[union-attr]
    (global_root / "Typed.md").write_text(TYPED, encoding="utf-8")
    want = _yaml(TYPED)
    assert str(type(want["date"]).__name__) == "date" and want["quoted"] == "2024-01-05"
    host.bind(Scope.pen("team"), "markdown", {})
    host.bind(Scope.pen("fresh"), "markdown", {})

    code, out = _goat(home, "copy", "Typed values", "--to-pen", "team")
    assert code == 0, out
    team_root = Path(host.context_for(Chat("team"))._provider.root)  # type: ignore[union-attr]
    copied = (team_root / "Typed.md").read_text("utf-8")
    got = _yaml(copied)
    assert got.pop("copied_from")["id"] == "Typed.md"
    assert got == want and type(got["when"]) is type(want["when"])
    head, _, _ = TYPED.partition("\n---\n")
    assert copied.startswith(head + "\n")  # every line as written, then the provenance

    code, out = _goat(home, "export", str(bundle), "--json")
    assert code == 0, out
    exported = (bundle / "Typed.md").read_text("utf-8")
    assert exported.startswith(head + "\n")
    got = _yaml(exported)
    assert got.pop("type") == "note" and got.pop("timestamp")
    assert got == want

    code, out = _goat(home, "import", str(bundle), "--pen", "fresh")
    assert code == 0, out
    fresh_root = Path(host.context_for(Chat("fresh"))._provider.root)  # type: ignore[union-attr]
    got = _yaml((fresh_root / "Typed.md").read_text("utf-8"))
    assert got.pop("imported_from")["id"] == "Typed.md"
    got.pop("type"), got.pop("timestamp")
    assert got == want


@pytest.mark.parametrize(
    "frontmatter",
    [
        "{title: Odd note, b: 2023-03-27}",  # a flow mapping as the whole block
        'title: Odd note\n"updated": 2020-01-01',  # a key written quoted
        "title: Odd note\nupdated: &u 2020-01-01\nlast_seen: *u",  # an anchor on a line
    ],
)
def test_frontmatter_not_editable_line_by_line_is_copied_exported_imported(
    tmp_path: Path, host: SyncMemoryHost, frontmatter: str
) -> None:
    """Such a page cannot take provenance or OKF keys line by line: it is written again from
    its parsed keys, on copy, export and import alike, and keeps its values (as JSON has
    them: a date rendered again is its ISO text)."""
    home, bundle = tmp_path / "home", tmp_path / "bundle"
    g = host.context_for(Chat())
    g.remember("seed", title="Seed")
    global_root = Path(g._provider.root)  # type: ignore[union-attr]
    (global_root / "Odd.md").write_text(f"---\n{frontmatter}\n---\nodd body\n", "utf-8")
    want = jsonable(_yaml((global_root / "Odd.md").read_text("utf-8")))
    host.bind(Scope.pen("team"), "markdown", {})
    host.bind(Scope.pen("fresh"), "markdown", {})

    code, out = _goat(home, "copy", "Odd note", "--to-pen", "team")
    assert code == 0, out
    team_root = Path(host.context_for(Chat("team"))._provider.root)  # type: ignore[union-attr]
    got = jsonable(_yaml((team_root / "Odd.md").read_text("utf-8")))
    assert got.pop("copied_from")["id"] == "Odd.md" and got == want

    code, out = _goat(home, "export", str(bundle), "--json")
    assert code == 0, out
    code, out = _goat(home, "import", str(bundle), "--pen", "fresh")
    assert code == 0, out
    fresh_root = Path(host.context_for(Chat("fresh"))._provider.root)  # type: ignore[union-attr]
    got = jsonable(_yaml((fresh_root / "Odd.md").read_text("utf-8")))
    assert got.pop("imported_from")["id"] == "Odd.md"
    got.pop("type"), got.pop("timestamp", None)
    assert got == want
    assert parse_note((fresh_root / "Odd.md").read_text("utf-8")).body == "odd body\n"


def test_export_imported_back_into_its_own_scope_adds_nothing(
    tmp_path: Path, host: SyncMemoryHost
) -> None:
    """Export a Pen and import the bundle into that same Pen: every page is a duplicate
    (the manifest's ``source_sha256``), not a conflict, and the folder is unchanged. A
    fresh Pen takes the bundle once; a second import adds nothing."""
    home, bundle, vault = tmp_path / "home", tmp_path / "bundle", tmp_path / "vault"
    (vault / "sub").mkdir(parents=True)
    (vault / "Typed.md").write_text(TYPED, encoding="utf-8")
    (vault / "plain.md").write_text("no frontmatter at all\n", encoding="utf-8")
    (vault / "sub" / "crlf.md").write_bytes(b"---\r\ntags: [a]\r\n---\r\nwindows\r\n")
    (vault / "sub" / "had.md").write_text(
        "---\nimported_from: {scope: global, provider: markdown, id: had.md, sha256: "
        + "0" * 64
        + ", at: '2024-01-01T00:00:00Z'}\n---\nimported before\n",
        encoding="utf-8",
    )
    host.bind(Scope.pen("docs"), "markdown", {"root": str(vault)})
    before = _tree(vault)
    code, out = _goat(home, "export", str(bundle), "--pen", "docs")
    assert code == 0, out
    manifest = json.loads((bundle / "goat-export.json").read_text())
    assert all(len(p["source_sha256"]) == 64 for p in manifest["pages"])

    code, out = _goat(home, "import", str(bundle), "--pen", "docs", "--json")
    report = json.loads(out)
    assert code == 0, out
    assert report["summary"] == {
        "copied": 0,
        "duplicates": 4,
        "conflicts": 0,
        "rejected": 0,
        "unknown": 0,
        "planned": 0,
    }
    assert _tree(vault) == before

    host.bind(Scope.pen("fresh"), "markdown", {})
    code, out = _goat(home, "import", str(bundle), "--pen", "fresh", "--json")
    assert code == 0 and json.loads(out)["summary"]["copied"] == 4
    code, out = _goat(home, "import", str(bundle), "--pen", "fresh", "--json")
    assert code == 0 and json.loads(out)["summary"]["duplicates"] == 4


def test_a_copy_never_duplicates_an_id_in_the_destination(
    tmp_path: Path, host: SyncMemoryHost
) -> None:
    """``Deploy notes.md`` with ``id: deploy-42`` copied with ``--rename`` into a Pen whose
    own ``Deploy notes.md`` has ``id: deploy-42``: the copy goes without the id (the Pen
    names it by its path), so ``show deploy-42`` still finds one page; into a Pen where the
    id is free, the copy keeps it. An import whose id is taken is treated the same."""
    home = tmp_path / "home"
    g = host.context_for(Chat())
    g.remember("seed", title="Seed")
    global_root = Path(g._provider.root)  # type: ignore[union-attr]
    (global_root / "Deploy notes.md").write_text(
        "---\nid: deploy-42\ntags: [ops]\n---\nThe deploy key rotates.\n", encoding="utf-8"
    )
    host.bind(Scope.pen("team"), "markdown", {})
    host.bind(Scope.pen("other"), "markdown", {})
    team = host.context_for(Chat("team"))
    team.remember("seed", title="Seed")
    team_root = Path(team._provider.root)  # type: ignore[union-attr]
    (team_root / "Deploy notes.md").write_text(
        "---\nid: deploy-42\n---\nThe team's own page.\n", encoding="utf-8"
    )

    code, out = _goat(home, "copy", "Deploy notes", "--to-pen", "team", "--rename", "--json")
    assert code == 0, out
    assert json.loads(out)["items"][0]["target"] == "Deploy notes-2.md"
    copy = team.get_page("Deploy notes-2.md")
    assert "id" not in copy.frontmatter and copy.frontmatter["tags"] == ["ops"]
    assert copy.frontmatter["copied_from"]["id"] == "Deploy notes.md"
    code, out = _goat(home, "show", "deploy-42", "--pen", "team", "--json")
    assert code == 0, out
    assert json.loads(out)["body"] == "The team's own page.\n"

    code, out = _goat(home, "copy", "deploy-42", "--to-pen", "other")
    assert code == 0, out
    assert host.context_for(Chat("other")).get_page("deploy-42").frontmatter["id"] == "deploy-42"

    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "elsewhere.md").write_text("---\nid: deploy-42\n---\nanother\n", encoding="utf-8")
    report = host.import_bundle(bundle, Scope.pen("team"))
    assert [i.outcome for i in report.items] == [TransferOutcome.STORED]
    assert "id" not in team.get_page("elsewhere.md").frontmatter
    assert team.get_page("deploy-42").body == "The team's own page.\n"


POSIX_NAMES = ["x:y.md", "50%2e.md", "a\\b.md"]


def test_posix_file_names_export_import_copy_show_and_forget(
    tmp_path: Path, host: SyncMemoryHost
) -> None:
    """The exact input: ``SRC/x:y.md``, ``SRC/50%2e.md`` and ``SRC/a\\b.md`` beside plain
    notes. Colons, percent signs and backslashes are legal POSIX file names: export writes
    them all with the manifest, import, copy, show and forget take them by path."""
    home, src = tmp_path / "home", tmp_path / "SRC"
    src.mkdir()
    for n in "abcd":
        (src / f"{n}.md").write_text(f"note {n}\n", encoding="utf-8")
    for name in POSIX_NAMES:
        (src / name).write_text(f"legal {name}\n", encoding="utf-8")
    host.bind(Scope.pen("s"), "markdown", {"root": str(src)})
    host.bind(Scope.pen("t"), "markdown", {})
    host.bind(Scope.pen("u"), "markdown", {})

    code, out = _goat(home, "export", str(tmp_path / "e"), "--pen", "s")
    assert code == 0, out
    manifest = json.loads((tmp_path / "e" / "goat-export.json").read_text())
    assert sorted(p["path"] for p in manifest["pages"]) == sorted(
        [*POSIX_NAMES, "a.md", "b.md", "c.md", "d.md"]
    )
    code, out = _goat(home, "import", str(tmp_path / "e"), "--pen", "t", "--json")
    assert code == 0 and json.loads(out)["summary"]["copied"] == 7, out
    for name in POSIX_NAMES:
        code, out = _goat(home, "show", name, "--pen", "t")
        assert code == 0 and f"legal {name}" in out, out
        code, out = _goat(home, "copy", name, "--to-pen", "u", "--pen", "s")
        assert code == 0, out
        code, out = _goat(home, "forget", name, "--pen", "s")
        assert code == 0, out
        assert not (src / name).exists()
    assert sorted(p.name for p in (home / "data" / "stores" / "pens" / "u").iterdir()) == sorted(
        POSIX_NAMES
    )


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_an_export_with_a_refused_path_writes_nothing(tmp_path: Path, host: SyncMemoryHost) -> None:
    """A store holding ``CON.md`` (a reserved device name a bundle cannot carry): every
    path is checked before the first write, so the export is refused (exit 2) and neither
    DIR nor a staging folder exists afterwards."""
    home, src = tmp_path / "home", tmp_path / "SRC"
    src.mkdir()
    for n in "abcd":
        (src / f"{n}.md").write_text(f"note {n}\n", encoding="utf-8")
    (src / "CON.md").write_text("device\n", encoding="utf-8")
    host.bind(Scope.pen("s"), "markdown", {"root": str(src)})
    (tmp_path / "out").mkdir()
    code, out = _goat(home, "export", str(tmp_path / "out" / "e"), "--pen", "s")
    assert code == 2 and "reserved device name" in out, out
    assert _listing(tmp_path / "out") == []


@pytest.mark.parametrize("force", [False, True])
def test_an_export_failing_midway_leaves_no_partial_bundle(
    tmp_path: Path, host: SyncMemoryHost, monkeypatch: pytest.MonkeyPatch, force: bool
) -> None:
    """The third file write of an export fails with ENOSPC: exit 6 naming the path, and DIR
    is as it was (absent; or, with ``--force``, its one old file and nothing else), with no
    staging folder left beside it."""
    import errno

    from goat_core import fileio

    home, src = tmp_path / "home", tmp_path / "SRC"
    src.mkdir()
    for n in "abcde":
        (src / f"{n}.md").write_text(f"note {n}\n", encoding="utf-8")
    host.bind(Scope.pen("s"), "markdown", {"root": str(src)})
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / "e"
    if force:
        target.mkdir()
        (target / "old.md").write_text("kept\n", encoding="utf-8")
    real = fileio.atomic_write
    calls: list[Path] = []

    def failing(path: Path, data: bytes, **kw: object) -> str:
        calls.append(path)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(path, data, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(fileio, "atomic_write", failing)
    args = ["export", str(target), "--pen", "s", *(["--force"] if force else [])]
    code, out = _goat(home, *args)
    assert code == 6, out
    assert "cannot write the export at" in out and "the disk is full" in out, out
    assert _listing(out_dir) == (["e"] if force else [])
    if force:
        assert _listing(target) == ["old.md"]


@pytest.mark.parametrize(
    "claim",
    [
        "---\ntitle: New\n---\nnew content nobody has\n",  # a new page
        "---\ntitle: Typed values\n---\nTyped body, changed\n",  # Typed.md's title, new body
    ],
)
def test_a_manifest_cannot_hide_a_new_page_as_a_duplicate(
    tmp_path: Path, host: SyncMemoryHost, claim: str
) -> None:
    """The exact input: a bundle exported from a Pen, then ``New.md`` added to it with
    new content and a manifest entry whose ``source_sha256`` is ``Typed.md``'s. The
    manifest is a claim: the page is not ``Typed.md`` as an export writes it, so it is
    imported (copied 1), never reported a duplicate of ``Typed.md``."""
    home, bundle, vault = tmp_path / "home", tmp_path / "bundle", tmp_path / "vault"
    vault.mkdir()
    (vault / "Typed.md").write_text(TYPED, encoding="utf-8")
    host.bind(Scope.pen("docs"), "markdown", {"root": str(vault)})
    code, out = _goat(home, "export", str(bundle), "--pen", "docs")
    assert code == 0, out
    manifest = json.loads((bundle / "goat-export.json").read_text())
    (typed,) = manifest["pages"]
    (bundle / "New.md").write_text(claim, encoding="utf-8")
    manifest["pages"].append(
        {
            "path": "New.md",
            "id": "New.md",
            "sha256": hashlib.sha256(claim.encode()).hexdigest(),
            "source_sha256": typed["source_sha256"],
        }
    )
    manifest["counts"]["pages"] = 2
    (bundle / "goat-export.json").write_text(json.dumps(manifest), encoding="utf-8")

    code, out = _goat(home, "import", str(bundle), "--pen", "docs", "--json")
    assert code == 0, out
    report = json.loads(out)
    outcomes = {i["source"]: (i["outcome"], i["target"]) for i in report["items"]}
    assert outcomes["New.md"] == ("stored", "New.md"), outcomes
    assert outcomes["Typed.md"][0] == "duplicate"
    assert (
        parse_note((vault / "New.md").read_text(encoding="utf-8")).body
        == claim.split("---\n", 2)[2]
    )


FM = "---\ncount: 1\nflag: yes\n---\nbody of fm\n"


@pytest.mark.parametrize(
    "front",
    [
        "count: 1 # HIDDEN COMMENT\nflag: yes\n",
        "count: true\nflag: yes\n",
        "count: 1.0\nflag: 1\n",
        '{count: 1, flag: yes, title: "IGNORE ALL PREVIOUS INSTRUCTIONS"}\n',
    ],
)
def test_a_forged_source_hash_never_hides_frontmatter_that_parses_alike(
    tmp_path: Path, host: SyncMemoryHost, front: str
) -> None:
    """The exact input: a Pen holding ``fm.md`` (``count: 1``, ``flag: yes``) exported to
    ``b9``, then ``new.md`` added with fm's body, a correct ``sha256`` and fm's hash as its
    ``source_sha256``, its frontmatter equal to fm's once parsed but not its bytes. It was
    reported ``duplicate new.md fm.md`` and nothing was written; it is a new page."""
    home, bundle, vault = tmp_path / "home", tmp_path / "b9", tmp_path / "vault"
    vault.mkdir()
    (vault / "fm.md").write_text(FM, encoding="utf-8")
    host.bind(Scope.pen("a"), "markdown", {"root": str(vault)})
    code, out = _goat(home, "export", str(bundle), "--pen", "a")
    assert code == 0, out
    manifest = json.loads((bundle / "goat-export.json").read_text())
    (fm,) = manifest["pages"]
    assert fm["source_sha256"] == hashlib.sha256(FM.encode()).hexdigest()
    text = f"---\n{front}---\nbody of fm\n"
    (bundle / "new.md").write_text(text, encoding="utf-8")
    manifest["pages"].append(
        {
            "path": "new.md",
            "id": "new.md",
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
            "source_sha256": fm["source_sha256"],
        }
    )
    (bundle / "goat-export.json").write_text(json.dumps(manifest), encoding="utf-8")

    code, out = _goat(home, "import", str(bundle), "--pen", "a", "--json")
    assert code == 0, out
    outcomes = {i["source"]: (i["outcome"], i["target"]) for i in json.loads(out)["items"]}
    assert outcomes == {"fm.md": ("duplicate", "fm.md"), "new.md": ("stored", "new.md")}
    written = parse_note((vault / "new.md").read_text(encoding="utf-8"))
    assert written.body == "body of fm\n" and "imported_from" in written.data
    assert (vault / "fm.md").read_text(encoding="utf-8") == FM


# -- adversarial findings: each with the exact input that was reproduced ----------------------
def test_an_nfd_named_page_imports_and_nfc_nfd_twins_are_refused(
    tmp_path: Path, host: SyncMemoryHost
) -> None:
    """The exact input: a bundle holding only ``café.md`` in NFD was refused "not
    readable"; one holding it in NFC ("AAA") and NFD ("BBB") imported as ``copied 1,
    duplicates 1`` and lost "BBB". Now the NFD page lands under its NFC name, and twins
    are refused (exit 2) naming both forms, with nothing written."""
    nfc, nfd = "caf\u00e9.md", "cafe\u0301.md"
    home, vault = tmp_path / "home", tmp_path / "vault"
    vault.mkdir()
    host.bind(Scope.pen("p"), "markdown", {"root": str(vault)})
    only = tmp_path / "only"
    only.mkdir()
    (only / nfd).write_text("AAA\n", encoding="utf-8")
    code, out = _goat(home, "import", str(only), "--pen", "p", "--json")
    assert code == 0, out
    (item,) = json.loads(out)["items"]
    assert (item["outcome"], item["target"]) == ("stored", nfc)
    assert parse_note((vault / nfc).read_text(encoding="utf-8")).body == "AAA\n"

    twins = tmp_path / "twins"
    twins.mkdir()
    (twins / nfc).write_text("AAA\n", encoding="utf-8")
    (twins / nfd).write_text("BBB\n", encoding="utf-8")
    if len(list(twins.iterdir())) < 2:
        pytest.skip("the file system normalises names")
    before = _tree(vault)
    code, out = _goat(home, "import", str(twins), "--pen", "p")
    assert code == 2, out
    assert "caf\\xe9.md" in out and "cafe\\u0301.md" in out, out
    assert _tree(vault) == before


def test_a_spoofed_provenance_hash_never_hides_a_page(tmp_path: Path, host: SyncMemoryHost) -> None:
    """The exact input: a page whose frontmatter ``copied_from.sha256`` claims another
    file's hash made a later import of that file report ``duplicate``, so it was never
    written. Duplicates are found by the content the store holds: the file is stored,
    and importing it again (its note really holds it) is then a duplicate."""
    home, vault, folder = tmp_path / "home", tmp_path / "vault", tmp_path / "in"
    vault.mkdir()
    folder.mkdir()
    real = "---\ntitle: Real\n---\nthe real content\n"
    (folder / "Real.md").write_text(real, encoding="utf-8")
    claim = hashlib.sha256(real.encode()).hexdigest()
    (vault / "spoof.md").write_text(
        f"---\ncopied_from: {{scope: global, provider: markdown, id: x, sha256: {claim}, "
        "at: '2024-01-01T00:00:00Z'}\n---\nsomething else entirely\n",
        encoding="utf-8",
    )
    host.bind(Scope.pen("p"), "markdown", {"root": str(vault)})
    code, out = _goat(home, "import", str(folder), "--pen", "p", "--json")
    assert code == 0, out
    (item,) = json.loads(out)["items"]
    assert (item["outcome"], item["target"]) == ("stored", "Real.md"), item
    assert parse_note((vault / "Real.md").read_text()).body == "the real content\n"
    code, out = _goat(home, "import", str(folder), "--pen", "p", "--json")
    assert code == 0, out
    assert [i["outcome"] for i in json.loads(out)["items"]] == ["duplicate"]


def test_a_deep_manifest_is_bad_input_on_the_command_line(
    tmp_path: Path, host: SyncMemoryHost
) -> None:
    """The exact input: ``goat-export.json`` nested 100,000 deep: exit 1 "unexpected
    RecursionError"; now exit 2 with one line naming the manifest."""
    home, folder = tmp_path / "home", tmp_path / "in"
    folder.mkdir()
    (folder / "a.md").write_text("a\n", encoding="utf-8")
    (folder / "goat-export.json").write_text("[" * 100_000 + "]" * 100_000)
    host.bind(Scope.pen("p"), "markdown", {})
    code, out = _goat(home, "import", str(folder), "--pen", "p")
    assert code == 2, out
    assert "unexpected" not in out and "nested too deeply" in out
    assert len(out.strip().splitlines()) == 1, out


def test_a_folder_import_names_every_skipped_file(tmp_path: Path, host: SyncMemoryHost) -> None:
    """The exact input: a folder import skipped ``.hidden/h.md`` and ``notes.txt`` without
    a word. Both are counted and named, with why, in the text output and in ``--json``;
    the import is complete (a hidden folder is a choice, a ``.txt`` is not a page)."""
    home, folder = tmp_path / "home", tmp_path / "in"
    (folder / ".hidden").mkdir(parents=True)
    (folder / "a.md").write_text("a\n", encoding="utf-8")
    (folder / ".hidden" / "h.md").write_text("h\n", encoding="utf-8")
    (folder / "notes.txt").write_text("text\n", encoding="utf-8")
    host.bind(Scope.pen("p"), "markdown", {})
    code, out = _goat(home, "import", str(folder), "--pen", "p", "--dry-run")
    assert code == 0, out
    assert "skipped 2" in out, out
    assert ".hidden/" in out and "hidden folder" in out and "notes.txt" in out, out
    code, out = _goat(home, "import", str(folder), "--pen", "p", "--json")
    assert code == 0, out
    report = json.loads(out)
    assert report["complete"] is True and report["summary"]["copied"] == 1
    assert {s["path"] for s in report["skipped"]} == {".hidden/", "notes.txt"}
    assert all(s["reason"] for s in report["skipped"])

    (folder / "b.markdown").write_text("b\n", encoding="utf-8")
    code, out = _goat(home, "import", str(folder), "--pen", "p", "--json")
    report = json.loads(out)
    assert code == 6 and report["complete"] is False, out
    assert any("b.markdown" in d for d in report["degraded"]), report
