"""The policy path on a markdown store: a page the browse policy hides is not written
through by ``remember`` or ``feedback`` (docs/design.md, Policy path)."""

from __future__ import annotations

from pathlib import Path

import pytest

from goat_core.contract import Scope
from goat_core.errors import Conflict, NotFound
from goat_core.host import Chat, GoatHome, SyncMemoryHost
from goat_core.plugins import PluginSettings, Registry, register_plugin
from goat_core.testing import HideByName, HidePages


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_remember_and_feedback_leave_a_hidden_page_alone(tmp_path: Path) -> None:
    """With ``Secret plan.md`` hidden: ``remember`` titled as it (exact or in another case,
    which would otherwise be a Conflict naming its path) is ``rejected``; ``feedback`` on it
    is ``NotFound``, as for a missing page; no file changes or appears. A visible page still
    takes both."""
    home = GoatHome.at(tmp_path / "home")
    root = tmp_path / "notes"
    root.mkdir()
    with SyncMemoryHost(home=home, registry=Registry.load(PluginSettings(strict=True))) as host:
        host.bind(Scope.pen("m"), "markdown", {"root": str(root)})
        ctx = host.context_for(Chat("m"))
        assert ctx.remember("launch code 1234", title="Secret plan").status.value == "stored"
        assert ctx.remember("public notes", title="Visible").status.value == "stored"
    before = _files(root)

    registry = Registry.load(PluginSettings(strict=True))
    assert register_plugin(registry.pm, HidePages("Secret plan"), "policy")
    with SyncMemoryHost(home=home, registry=registry) as host:
        ctx = host.context_for(Chat("m"))
        for title in ("Secret plan", "secret plan"):
            receipt = ctx.remember("more secrets", title=title)
            assert receipt.status.value == "rejected"
            assert receipt.reason == (
                f"a page titled {title!r} is hidden by policy and cannot be written through; "
                "nothing was written"
            )
        with pytest.raises(NotFound, match=r"^no page 'Secret plan' in Pen `m` memory$"):
            ctx.feedback("it leaks", on="Secret plan")
        assert _files(root) == before
        assert ctx.remember("more public notes", title="Visible").status.value == "stored"
        assert ctx.feedback("fine", on="Visible").status.value == "stored"
    after = _files(root)
    assert sorted(after) == sorted(before)
    assert after["Secret plan.md"] == before["Secret plan.md"]
    assert b"more public notes" in after["Visible.md"] and b"fine" in after["Visible.md"]


def _hidden_store(tmp_path: Path) -> tuple[GoatHome, Path, Registry]:
    """A Global store holding ``Secret Plans.md`` and a registry whose policy hides it."""
    home = GoatHome.at(tmp_path / "home")
    with SyncMemoryHost(home=home, registry=Registry.load(PluginSettings(strict=True))) as host:
        receipt = host.context_for(Chat()).remember("launch code swordfish", title="Secret Plans")
        assert receipt.status.value == "stored"
    registry = Registry.load(PluginSettings(strict=True))
    assert register_plugin(registry.pm, HideByName("Secret Plans"), "policy")
    return home, home.default_store_dir(Scope.global_()), registry


def test_a_decoy_id_is_no_way_onto_a_hidden_note(tmp_path: Path) -> None:
    """A visible note with frontmatter ``id: Secret Plans`` does not let ``remember`` titled
    ``Secret Plans`` append to the hidden note: ``rejected``, no file changes."""
    home, root, registry = _hidden_store(tmp_path)
    (root / "decoy.md").write_text("---\nid: Secret Plans\ntitle: Decoy\n---\nd\n", "utf-8")
    before = _files(root)
    with SyncMemoryHost(home=home, registry=registry) as host:
        ctx = host.context_for(Chat())
        receipt = ctx.remember("INJECTED", title="Secret Plans")
        assert receipt.status.value == "rejected", receipt
        assert receipt.reason == (
            "a page titled 'Secret Plans' is hidden by policy and cannot be written through; "
            "nothing was written"
        )
        with pytest.raises(NotFound, match=r"^no page 'Secret Plans' in Global memory$"):
            ctx.feedback("INJECTED", on="Secret Plans")
    assert _files(root) == before


def test_a_near_twin_title_does_not_name_the_hidden_note(tmp_path: Path) -> None:
    """``remember`` titled ``Secret Plans?`` (its file name would be the hidden
    ``Secret Plans.md``) is ``rejected`` without naming the hidden note's file or title."""
    home, root, registry = _hidden_store(tmp_path)
    before = _files(root)
    with SyncMemoryHost(home=home, registry=registry) as host:
        receipt = host.context_for(Chat()).remember("x", title="Secret Plans?")
    assert receipt.status.value == "rejected", receipt
    assert receipt.reason == (
        "'Secret Plans?' clashes with a page hidden by policy; nothing was written"
    )
    assert _files(root) == before


def test_an_import_does_not_name_or_confirm_a_hidden_note(tmp_path: Path) -> None:
    """Importing a bundle holding ``Secret Plans.md`` over the hidden note: other content is
    a ``conflict`` without the note's path (and the batch's other page says "a page hidden
    by policy", not its name); a byte-identical copy is ``rejected``, never ``duplicate``
    of it. Nothing is written."""
    home, root, registry = _hidden_store(tmp_path)
    hidden = (root / "Secret Plans.md").read_bytes()
    before = _files(root)
    other = tmp_path / "other"
    other.mkdir()
    (other / "Secret Plans.md").write_text("other plans\n", "utf-8")
    (other / "Garden.md").write_text("tomatoes\n", "utf-8")
    same = tmp_path / "same"
    same.mkdir()
    (same / "Secret Plans.md").write_bytes(hidden)
    with SyncMemoryHost(home=home, registry=registry) as host:
        report = host.import_bundle(other, Scope.global_())
        assert [(i.source, i.target, i.outcome.value, i.reason) for i in report.items] == [
            ("Garden.md", "Garden.md", "planned",
             "not written: the batch has conflicts (a page hidden by policy)"),
            ("Secret Plans.md", None, "conflict",
             "a page hidden by policy holds this path; nothing was written"),
        ]  # fmt: skip
        report = host.import_bundle(same, Scope.global_())
        assert [(i.target, i.outcome.value, i.reason) for i in report.items] == [
            (None, "rejected", "a page hidden by policy is in the way; nothing was written")
        ]
    assert _files(root) == before


def test_a_conflict_over_a_visible_note_keeps_its_message(tmp_path: Path) -> None:
    """A conflict that names only visible notes goes on as it is, even when a hidden
    note's file name is the tail of the visible one's (``Old Secret Plans.md``)."""
    home, _root, registry = _hidden_store(tmp_path)
    with SyncMemoryHost(home=home, registry=registry) as host:
        ctx = host.context_for(Chat())
        assert ctx.remember("old", title="Old Secret Plans").status.value == "stored"
        with pytest.raises(Conflict) as taken:
            ctx.remember("x", title="Old Secret Plans?")
    assert str(taken.value) == (
        "file name 'Old Secret Plans.md' for title 'Old Secret Plans?' is taken by note "
        "'Old Secret Plans.md' (title 'Old Secret Plans'); choose another title"
    )
