"""The ``goat`` CLI at the boundary users touch: exit codes, JSON shapes, one-line errors.

Two kinds of runs:

- in-process with :class:`click.testing.CliRunner` (fast; each test gets a fresh GOAT home);
- real subprocesses of the installed ``goat`` console script with ``GOAT_HOME`` in a tmp dir.

Providers come from a throwaway distribution written to a tmp dir and put on ``sys.path``
(or ``PYTHONPATH`` for subprocesses), so the real entry-point loader finds it: provider
``fake`` declares pages and feedback but not map or reflect, and its text markers trigger
each outcome (``CONFLICT``, ``QUEUE-ME``, ``UNKNOWN-ME``, ``BOOM``). Tests marked
``needs_markdown`` run the same commands on the embedded default markdown store; they run
where goat-markdown is installed (tox envs ``plugins-all``) and skip elsewhere.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from goat_core.cli import cli
from goat_core.cli._options import _parse_sets

HAS_MARKDOWN = find_spec("goat_markdown") is not None
needs_markdown = pytest.mark.skipif(
    not HAS_MARKDOWN, reason="goat-markdown is not installed (it runs in tox -e plugins-all)"
)

FAKE_PLUGIN = '''
"""A throwaway GOAT provider for CLI tests: notes kept in one JSON file per store."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from goat_core import (
    Capability, Health, Page, PageList, PageSummary, Provider, ProviderSpec, RecallItem,
    RecallResult, Receipt, hookimpl,
)
from goat_core.errors import Ambiguous, Conflict, NotFound, ProviderUnavailable, Rejected


class FakeSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    root: str | None = None
    mode: Literal["ok", "down"] = "ok"


class FakeProvider(Provider):
    def __init__(self, context):
        super().__init__(context)
        self.spec = spec()
        settings = context.settings
        self.mode = settings.mode
        self.root = (
            Path(settings.root) if settings.root else context.home.default_store_dir(self.scope)
        )

    def _load(self):
        path = self.root / "notes.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def _save(self, notes):
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "notes.json").write_text(json.dumps(notes))

    def _up(self):
        if self.mode == "down":
            raise ProviderUnavailable("fake store is down (mode=down)")

    async def remember(self, write):
        self._up()
        if "CONFLICT" in write.text:
            raise Conflict("the note changed meanwhile; nothing was written")
        if "QUEUE-ME" in write.text:
            return Receipt(status="queued", operation_id="op-1", scope=self.scope.key)
        if "UNKNOWN-ME" in write.text:
            return Receipt(status="unknown", reason="timed out after sending", scope=self.scope.key)
        notes = self._load()
        title = write.title or " ".join(write.text.split()[:3])
        pid = title.lower().replace(" ", "-") + ".md"
        old = notes.get(pid, {"title": title, "body": ""})
        notes[pid] = {"title": old["title"], "body": old["body"] + write.text + "\\n"}
        self._save(notes)
        return Receipt(status="stored", id=pid, path=pid, scope=self.scope.key)

    async def refresh(self, receipt):
        if receipt.operation_id == "op-1":
            return receipt.model_copy(update={"status": "stored"})
        if receipt.operation_id == "op-bad":
            return receipt.model_copy(update={"status": "failed", "reason": "extraction failed"})
        return receipt

    async def feedback(self, write):
        if write.on is not None:
            await self.get_page(write.on)
        return await self.remember(write.model_copy(update={"title": "feedback"}))

    async def forget(self, ref):
        page = await self.get_page(ref)
        notes = self._load()
        del notes[page.id]
        self._save(notes)
        return Receipt(
            status="stored", id=page.id, path=page.id, scope=self.scope.key, removed=(page.id,)
        )

    async def recall(self, query, *, limit=10):
        self._up()
        if "BOOM" in query:
            raise RuntimeError("the fake index exploded")
        words = query.lower().split()
        hits = []
        for pid, note in sorted(self._load().items()):
            score = sum(note["body"].lower().count(w) for w in words)
            if score:
                hits.append(RecallItem(id=pid, title=note["title"], path=pid, score=float(score),
                                       snippet=note["body"].strip()[:80]))
        hits.sort(key=lambda h: -h.score)
        return RecallResult(scope=self.scope.key, items=tuple(hits[:limit]),
                            complete=len(hits) <= limit)

    async def list_pages(self, *, limit=50, cursor=None):
        self._up()
        ids = sorted(self._load(), key=str.lower)
        start = int(cursor or 0)
        chunk = ids[start:start + limit]
        notes = self._load()
        more = start + limit < len(ids)
        return PageList(
            items=tuple(PageSummary(id=i, title=notes[i]["title"], path=i) for i in chunk),
            next_cursor=str(start + limit) if more else None, complete=not more)

    async def get_page(self, ref):
        self._up()
        notes = self._load()
        if ref in notes or ref + ".md" in notes:
            pid = ref if ref in notes else ref + ".md"
        else:
            found = [i for i, n in notes.items() if n["title"].lower() == ref.lower()]
            if len(found) > 1:
                raise Ambiguous(f"{len(found)} pages match {ref!r}", candidates=sorted(found))
            if not found:
                raise NotFound(f"no page matches {ref!r}")
            pid = found[0]
        note = notes[pid]
        return Page(id=pid, title=note["title"], path=pid, body=note["body"],
                    frontmatter={"title": note["title"]}, etag="e-" + str(len(note["body"])))

    async def check(self):
        if self.mode == "down":
            return Health.broken("fake store is down (mode=down)")
        return Health.healthy("fake store ready")


def spec():
    return ProviderSpec(
        name="fake", display_name="Fake notes", version="0.1.0",
        capabilities=frozenset({Capability.PAGES, Capability.FEEDBACK, Capability.SCOPED_STORES}),
        settings_model=FakeSettings, factory=FakeProvider)


@hookimpl
def goat_register_providers():
    return [spec()]


@hookimpl
def goat_inspect_remember(scope, write):
    if "sk-live-" in write.text:
        raise Rejected("looks like an API key", reason="policy: no API keys in memory")
    return None


@hookimpl
def goat_register_commands(cli):
    import click

    @cli.command("fake-hello")
    def hello():
        """Say hello from the fake plugin."""
        click.echo("hello from fake")
'''


def _write_dist(root: Path, dist: str, module: str, ep_name: str, source: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{module}.py").write_text(source, encoding="utf-8")
    info = root / f"{module}-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1.0\nRequires-Dist: goat-core\n",
        encoding="utf-8",
    )
    (info / "entry_points.txt").write_text(
        f"[goat_core.plugins]\n{ep_name} = {module}\n", encoding="utf-8"
    )


@pytest.fixture
def fake_dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder holding distribution ``goat-fakecli`` (entry point ``fake``), on sys.path."""
    root = tmp_path / "site"
    _write_dist(root, "goat-fakecli", "goat_fakecli", "fake", textwrap.dedent(FAKE_PLUGIN))
    monkeypatch.syspath_prepend(str(root))
    yield root
    sys.modules.pop("goat_fakecli", None)


@pytest.fixture
def broken_dist(fake_dist: Path) -> Path:
    """Add distribution ``goat-broken`` whose import fails, beside the fake one."""
    _write_dist(
        fake_dist,
        "goat-broken",
        "goat_broken",
        "broken",
        "import goat_no_such_module_anywhere  # deliberately missing\n",
    )
    return fake_dist


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    monkeypatch.setenv("GOAT_HOME", str(path))
    for var in ("GOAT_LOAD_PLUGINS", "GOAT_DISABLE_PLUGINS", "GOAT_DEBUG"):
        monkeypatch.delenv(var, raising=False)
    return path


def run(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def ok_json(*args: str) -> Any:
    result = run(*args, "--json")
    assert result.exit_code == 0, (result.exit_code, result.stdout, result.stderr)
    return json.loads(result.stdout)


def one_error_line(result: Result) -> str:
    """The one ``goat: error:`` line on stderr (log warnings may precede it)."""
    lines = [line for line in result.stderr.splitlines() if line.startswith("goat: error: ")]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


@pytest.fixture
def bound(fake_dist: Path, home: Path, tmp_path: Path) -> Path:
    """Global bound to the fake provider on its own folder; returns that folder."""
    store = tmp_path / "global-store"
    result = run("bind", "--global", "fake", "--set", f"root={store}")
    assert result.exit_code == 0, result.output
    return store


RECEIPT_KEYS = ["status", "operation_id", "reason", "id", "path", "scope"]


# -- --set parsing ------------------------------------------------------------------------------
def test_parse_sets_keeps_values_verbatim() -> None:
    assert _parse_sets(["root=/a=b", "mode=", "x-y_z= spaced "]) == {
        "root": "/a=b",
        "mode": "",
        "x-y_z": " spaced ",
    }


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("root", "is not KEY=VALUE"),
        ("=x", "the key must be"),
        ("a b=x", "the key must be"),
    ],
)
def test_parse_sets_rejects_malformed_pairs(item: str, message: str) -> None:
    import click

    with pytest.raises(click.BadParameter, match=message):
        _parse_sets([item])


def test_parse_sets_rejects_a_repeated_key() -> None:
    import click

    with pytest.raises(click.BadParameter, match="given twice"):
        _parse_sets(["root=a", "root=b"])


# -- plugins and providers ------------------------------------------------------------------------
def test_plugins_json_lists_the_fake_plugin(fake_dist: Path, home: Path) -> None:
    data = ok_json("plugins")
    fake = next(p for p in data["plugins"] if p["plugin"] == "fake")
    assert fake["distribution"] == "goat-fakecli"
    assert fake["version"] == "0.1.0"
    assert fake["providers"] == ["fake"]
    assert fake["capabilities"] == {"fake": ["feedback", "pages", "scoped_stores"]}
    assert data["failures"] == []
    assert run("plugins", "--check").exit_code == 0


def test_plugins_check_names_a_broken_plugin_and_others_still_load(
    broken_dist: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOAT_STRICT_PLUGINS", "1")  # listing never aborts on a failure
    result = run("plugins", "--check")
    assert result.exit_code == 6
    assert "broken" in one_error_line(result)
    assert "goat_no_such_module_anywhere" in result.stderr
    assert "fake" in result.stdout  # the good plugin is still listed
    data = json.loads(run("plugins", "--json").stdout)
    assert [f["plugin"] for f in data["failures"]] == ["broken"]
    assert data["failures"][0]["kind"] == "import"
    monkeypatch.setenv("GOAT_DISABLE_PLUGINS", "broken")
    assert run("plugins", "--check").exit_code == 0


def test_strict_loading_failure_is_exit_6_for_other_commands(
    broken_dist: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOAT_STRICT_PLUGINS", "1")
    result = run("recall", "anything")
    assert result.exit_code == 6
    assert "broken" in one_error_line(result)


@pytest.fixture
def bad_hook_dist(fake_dist: Path) -> Iterator[Path]:
    """Add distribution ``goat-badhook``: it loads, but its providers hook raises."""
    _write_dist(
        fake_dist,
        "goat-badhook",
        "goat_badhook",
        "badhook",
        "from goat_core import hookimpl\n\n\n@hookimpl\ndef goat_register_providers():\n"
        "    raise RuntimeError('hook blew up')\n",
    )
    yield fake_dist
    sys.modules.pop("goat_badhook", None)


def test_strict_plugins_stop_a_command_on_a_failing_hook(
    bound: Path, bad_hook_dist: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/design.md, Plugins: the hook is listed as failed, and strict stops ``recall x``.

    ``bound`` binds before the failing plugin is installed (tox runs with strict plugins on,
    where that bind would stop too); the first half runs without strict."""
    monkeypatch.delenv("GOAT_STRICT_PLUGINS", raising=False)
    check = run("plugins", "--check")
    assert check.exit_code == 6
    assert "hook blew up" in check.stderr
    assert run("recall", "x").exit_code == 0  # not strict: reported, the command goes on
    monkeypatch.setenv("GOAT_STRICT_PLUGINS", "1")
    result = run("recall", "x")
    assert result.exit_code == 6, result.output
    line = one_error_line(result)
    assert "badhook" in line and "goat_register_providers" in line and "hook blew up" in line


def test_providers_json_has_settings_schema(fake_dist: Path, home: Path) -> None:
    data = ok_json("providers")
    fake = next(p for p in data["providers"] if p["name"] == "fake")
    assert fake["plugin"] == "fake"
    assert fake["capabilities"] == ["feedback", "pages", "scoped_stores"]
    assert fake["consistency"] == "immediate"
    assert fake["network"] is False
    assert set(fake["settings_schema"]["properties"]) == {"root", "mode"}
    human = run("providers").stdout
    assert "fake" in human and "mode, root" in human


def test_plugin_commands_are_added_through_the_hook(fake_dist: Path, home: Path) -> None:
    result = run("fake-hello")
    assert result.exit_code == 0
    assert result.stdout == "hello from fake\n"
    assert "fake-hello" in run("--help").stdout


def test_scope_json_resolves_the_current_directory(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "My Project"
    folder.mkdir()
    monkeypatch.chdir(folder)
    data = ok_json("scope")
    assert set(data) == {"scope", "pen_id", "derivation", "identity", "detail"}
    assert data["scope"].startswith("pen:my-project-")
    assert data["derivation"] in {"cwd", "git-root", "git-remote"}


def test_scope_shows_a_remote_url_holding_an_escape(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exact remote ``https://example.com/a\x1b]0;PWN\x07b.git`` (sets the window title):
    ``goat scope`` shows it, one row, never sends it to the terminal."""
    folder = tmp_path / "repo"
    folder.mkdir()
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (
        ["init", "-q"],
        ["config", "remote.origin.url", "https://example.com/a\x1b]0;PWN\x07b.git"],
    ):
        subprocess.run(["git", *args], cwd=folder, env=env, check=True)
    monkeypatch.chdir(folder)
    result = run("scope")
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output, repr(result.output)
    (identity,) = [line for line in result.output.splitlines() if line.startswith("identity")]
    assert "\u241b]0;" in identity, identity


# -- bind, check, status -------------------------------------------------------------------------
def test_bind_validation_error_is_exit_2_with_the_settings_message(
    fake_dist: Path, home: Path
) -> None:
    result = run("bind", "--global", "fake", "--set", "mode=sideways")
    assert result.exit_code == 2
    line = one_error_line(result)
    assert "mode" in line
    assert not (home / "memory.json").exists()  # nothing saved


@pytest.mark.parametrize(
    ("text", "found"),
    [
        (
            '{"bindings": {"main": {"provider": "fake", "settings": {}}},\n'
            ' "global": "main", "pens": {"Alpha": "main"}}\n',
            "has no schema_version",
        ),  # the pre-versioned (version 0) shape
        (
            '{"bindings": {"main": {"provider": "fake", "settings": {}}},\n'
            ' "selection": {"global": "main"}}\n',
            "has no schema_version",
        ),
        ('{"schema_version": 0, "bindings": {}, "selection": {}}\n', "has schema_version 0,"),
        ('{"schema_version": 2, "bindings": {}, "selection": {}}\n', "has schema_version 2,"),
    ],
)
@pytest.mark.parametrize(
    "args", [["status"], ["bind", "--global", "fake"], ["disable", "--global"]]
)
def test_a_memory_json_of_another_schema_is_exit_2_and_left_unchanged(
    fake_dist: Path, home: Path, text: str, found: str, args: list[str]
) -> None:
    home.mkdir(parents=True)
    path = home / "memory.json"
    path.write_text(text, encoding="utf-8")
    result = run(*args)
    assert result.exit_code == 2
    line = one_error_line(result)
    assert f"{path} {found}" in line and "schema_version 1 only" in line
    assert path.read_text(encoding="utf-8") == text


def test_bind_unknown_setting_is_exit_2(fake_dist: Path, home: Path) -> None:
    result = run("bind", "--pen", "docs", "fake", "--set", "colour=blue")
    assert result.exit_code == 2
    assert "colour" in one_error_line(result)


def test_bind_malformed_set_is_exit_2(fake_dist: Path, home: Path) -> None:
    result = run("bind", "--global", "fake", "--set", "root")
    assert result.exit_code == 2
    assert "KEY=VALUE" in one_error_line(result)


def test_bind_unknown_provider_is_exit_3(fake_dist: Path, home: Path) -> None:
    result = run("bind", "--global", "nosuch")
    assert result.exit_code == 3
    assert "nosuch" in one_error_line(result)


@pytest.mark.parametrize(
    "args",
    [
        ["bind", "fake"],  # no scope
        ["bind", "--global", "--pen", "x", "fake"],  # two scopes
        ["unbind"],
        ["disable", "--global", "--pen", "x"],
    ],
)
def test_scope_choice_is_required_and_exclusive(
    args: list[str], fake_dist: Path, home: Path
) -> None:
    result = run(*args)
    assert result.exit_code == 2
    assert "--global" in one_error_line(result)


def test_bind_invalid_pen_id_is_exit_2(fake_dist: Path, home: Path) -> None:
    result = run("bind", "--pen", "a/b", "fake")
    assert result.exit_code == 2
    assert "'/'" in one_error_line(result)


def test_rebind_says_which_settings_went_back_to_their_default(bound: Path, home: Path) -> None:
    """``bind`` replaces a binding whole: a re-bind that leaves out ``root`` says so, rather
    than quietly moving the scope to the default store folder."""
    result = run("bind", "--global", "fake")
    assert result.exit_code == 0, result.output
    assert "replaced the previous binding: root not given again" in result.output
    data = ok_json("bind", "--global", "fake", "--set", f"root={bound}")
    assert data["dropped_settings"] == []
    again = run("bind", "--global", "fake", "--set", f"root={bound}")
    assert "replaced the previous binding" not in again.output


def test_bind_saves_and_status_shows_it(bound: Path, home: Path) -> None:
    config = json.loads((home / "memory.json").read_text())
    assert "fake" in json.dumps(config)
    data = ok_json("status")
    assert list(data) == ["bindings"]
    glob = next(b for b in data["bindings"] if b["scope"] == "global")
    assert set(glob) == {"scope", "label", "provider", "tone", "reason", "last_checked"}
    assert glob["provider"] == "fake"
    assert glob["tone"] in {"quiet", "accent"}
    human = run("status")
    assert human.exit_code == 0
    assert "global" in human.stdout and "fake" in human.stdout


def test_status_watch_renders_repeatedly(bound: Path, home: Path) -> None:
    result = run("status", "--watch", "--json", "--interval", "0", "--times", "2")
    assert result.exit_code == 0
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(lines) == 2 and all("bindings" in x for x in lines)


def test_check_draft_is_tested_without_saving(bound: Path, home: Path) -> None:
    before = (home / "memory.json").read_bytes()
    result = run("check", "--global", "--set", "mode=down", "--json")
    assert result.exit_code == 6
    data = json.loads(result.stdout)
    assert data["ok"] is False and data["draft"] is True
    assert "down" in data["reason"]
    assert (home / "memory.json").read_bytes() == before
    result = run("check")  # Global by default, the saved (healthy) binding
    assert result.exit_code == 0, result.output
    assert "ok" in result.stdout


def test_check_of_a_broken_binding_is_exit_6(fake_dist: Path, home: Path) -> None:
    assert run("bind", "--pen", "down", "fake", "--set", "mode=down").exit_code == 0
    assert run("check", "--pen", "down").exit_code == 6


def test_disable_enable_unbind(bound: Path, home: Path) -> None:
    assert run("remember", "alpha beta gamma").exit_code == 0
    assert run("disable", "--global").exit_code == 0
    status = ok_json("status")["bindings"]
    assert next(b for b in status if b["scope"] == "global")["tone"] == "dim"
    result = run("recall", "alpha")
    assert result.exit_code != 0  # intentionally off: no memory, no fallback
    one_error_line(result)
    assert run("enable", "--global").exit_code == 0
    assert ok_json("recall", "alpha")["items"]
    assert run("unbind", "--global").exit_code == 0
    assert "fake" not in (home / "memory.json").read_text()


# -- memory commands: JSON shapes -----------------------------------------------------------------
def test_remember_json_shape(bound: Path) -> None:
    data = ok_json("remember", "The deploy key rotates every 90 days", "--title", "Deploy notes")
    assert list(data) == RECEIPT_KEYS
    assert data == {
        "status": "stored",
        "operation_id": None,
        "reason": None,
        "id": "deploy-notes.md",
        "path": "deploy-notes.md",
        "scope": "global",
    }
    human = run("remember", "more", "--title", "Deploy notes")
    assert human.exit_code == 0
    assert "deploy-notes.md" in human.stdout and "global" in human.stdout


def test_remember_reads_stdin_for_dash(bound: Path) -> None:
    result = run("remember", "-", "--title", "piped", "--json", input="from a pipe\n")
    assert result.exit_code == 0
    assert "from a pipe" in ok_json("show", "piped")["body"]


def test_recall_json_shape_and_ranking(bound: Path) -> None:
    run("remember", "deploy deploy deploy", "--title", "often")
    run("remember", "deploy once", "--title", "once")
    run("remember", "nothing related", "--title", "other")
    data = ok_json("recall", "deploy", "--limit", "5")
    assert list(data) == ["scope", "items", "complete", "degraded"]
    assert data["scope"] == "global"
    assert data["complete"] is True and data["degraded"] == []
    assert [i["id"] for i in data["items"]] == ["often.md", "once.md"]
    for item in data["items"]:
        assert list(item) == ["id", "title", "path", "score", "snippet", "snippet_spans"]
    assert data["items"][0]["score"] > data["items"][1]["score"]
    human = run("recall", "deploy").stdout
    assert human.splitlines()[0].split() == ["SCORE", "PAGE", "SNIPPET"]
    assert "often.md" in human


def test_recall_limit_is_validated(bound: Path) -> None:
    result = run("recall", "x", "--limit", "0")
    assert result.exit_code == 2
    one_error_line(result)


def test_feedback_json_shape(bound: Path) -> None:
    run("remember", "a page", "--title", "target")
    data = ok_json("feedback", "this was wrong", "--on", "target")
    assert list(data) == RECEIPT_KEYS and data["status"] == "stored"
    result = run("feedback", "about nothing", "--on", "missing-page")
    assert result.exit_code == 3


def test_pages_json_shape_and_cursor(bound: Path) -> None:
    for title in ("b note", "A note", "c note"):
        run("remember", "text", "--title", title)
    first = ok_json("pages", "--limit", "2")
    assert list(first) == ["items", "next_cursor", "complete", "degraded"]  # the truth too
    assert [i["id"] for i in first["items"]] == ["a-note.md", "b-note.md"]
    assert all(list(i) == ["id", "title", "path"] for i in first["items"])
    assert first["complete"] is False and first["next_cursor"]
    rest = ok_json("pages", "--limit", "2", "--cursor", first["next_cursor"])
    assert [i["id"] for i in rest["items"]] == ["c-note.md"]
    assert rest["complete"] is True and rest["next_cursor"] is None and rest["degraded"] == []
    human = run("pages", "--limit", "2")
    assert "more: goat pages --cursor" in human.stderr


def test_show_json_shape_and_body(bound: Path) -> None:
    run("remember", "first line", "--title", "Shown")
    data = ok_json("show", "Shown")
    assert list(data) == ["id", "title", "path", "frontmatter", "body", "etag", "provenance"]
    assert data["id"] == "shown.md"
    result = run("show", "shown.md")
    assert result.exit_code == 0 and result.stdout == "first line\n"


def test_show_ambiguous_lists_candidates_and_exits_3(bound: Path) -> None:
    run("remember", "one", "--title", "Twin")
    notes = json.loads((bound / "notes.json").read_text())
    notes["twin-2.md"] = {"title": "twin", "body": "two\n"}
    (bound / "notes.json").write_text(json.dumps(notes))
    result = run("show", "TWIN")
    assert result.exit_code == 3
    assert "2 pages match" in one_error_line(result)
    assert "  twin.md" in result.stderr and "  twin-2.md" in result.stderr
    assert result.stdout == ""


def test_show_missing_is_exit_3(bound: Path) -> None:
    result = run("show", "nope", "--json")
    assert result.exit_code == 3
    assert result.stdout == ""
    assert "nope" in one_error_line(result)


def test_forget_json_shape(bound: Path) -> None:
    run("remember", "gone soon", "--title", "Temp")
    data = ok_json("forget", "Temp")
    assert list(data) == RECEIPT_KEYS
    assert data["status"] == "stored" and data["id"] == "temp.md"
    assert run("show", "Temp").exit_code == 3
    assert run("forget", "Temp").exit_code == 3


# -- exit codes of every class ----------------------------------------------------------
def test_queued_receipt_is_exit_0(bound: Path) -> None:
    data = ok_json("remember", "QUEUE-ME please")
    assert data["status"] == "queued" and data["operation_id"] == "op-1"
    assert "queued as operation op-1" in run("remember", "QUEUE-ME").stdout


def test_refresh_tells_what_became_of_a_queued_write(bound: Path) -> None:
    assert ok_json("remember", "QUEUE-ME please")["operation_id"] == "op-1"
    done = run("refresh", "op-1")
    assert (done.exit_code, done.stdout) == (0, "operation op-1: stored (global)\n"), done.stderr
    still = ok_json("refresh", "op-2")
    assert (still["status"], still["operation_id"], still["scope"]) == ("queued", "op-2", "global")
    failed = run("refresh", "op-bad", "--json")
    assert failed.exit_code == 5 and json.loads(failed.stdout)["reason"] == "extraction failed"
    assert "the operation failed: extraction failed" in one_error_line(failed)
    assert run("refresh", " ").exit_code == 2


def test_unknown_receipt_is_exit_6_and_still_printed(bound: Path) -> None:
    result = run("remember", "UNKNOWN-ME", "--json")
    assert result.exit_code == 6
    assert json.loads(result.stdout)["status"] == "unknown"
    assert "may or may not" in one_error_line(result)


def test_rejected_by_policy_hook_is_exit_5_with_receipt(bound: Path) -> None:
    result = run("remember", "my key is sk-live-123", "--json")
    assert result.exit_code == 5
    data = json.loads(result.stdout)
    assert data["status"] == "rejected"
    assert "no API keys" in data["reason"]
    assert "rejected" in one_error_line(result)
    assert not (bound / "notes.json").exists()


def test_conflict_is_exit_5(bound: Path) -> None:
    result = run("remember", "CONFLICT here")
    assert result.exit_code == 5
    assert "changed meanwhile" in one_error_line(result)


@pytest.mark.parametrize("command", [["map"], ["reflect", "why"]])
def test_undeclared_capability_is_exit_4(command: list[str], bound: Path) -> None:
    result = run(*command)
    assert result.exit_code == 4
    line = one_error_line(result)
    assert "fake" in line


def test_unavailable_provider_is_exit_6(fake_dist: Path, home: Path) -> None:
    run("bind", "--global", "fake", "--set", "mode=down")
    result = run("recall", "x")
    assert result.exit_code == 6
    assert "down" in one_error_line(result)


def test_invalid_pen_id_is_exit_2(bound: Path) -> None:
    result = run("recall", "x", "--pen", "Bad Id")
    assert result.exit_code == 2
    assert "invalid Pen id" in one_error_line(result)


def test_usage_error_is_one_line_exit_2(bound: Path) -> None:
    result = run("recall", "x", "--bogus")
    assert result.exit_code == 2
    assert "--bogus" in one_error_line(result)
    assert len(result.stderr.strip().splitlines()) == 1


def test_unexpected_exception_is_one_line_with_a_debug_hint(
    bound: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run("recall", "BOOM")
    assert result.exit_code == 1
    line = one_error_line(result)
    assert "RuntimeError" in line and "GOAT_DEBUG=1" in line
    monkeypatch.setenv("GOAT_DEBUG", "1")
    result = run("recall", "BOOM")
    assert result.exit_code == 1
    assert "Traceback" in result.stderr


# -- scopes stay apart -----------------------------------------------------------------------------
def test_pen_memory_is_isolated_from_global_and_other_pens(bound: Path, home: Path) -> None:
    assert run("bind", "--pen", "alpha", "fake").exit_code == 0
    assert run("bind", "--pen", "beta", "fake").exit_code == 0
    alpha = ok_json("remember", "zebra crossing", "--pen", "alpha")
    assert alpha["scope"] == "pen:alpha"
    assert ok_json("recall", "zebra", "--pen", "Alpha")["items"]  # Pen ids are case-insensitive
    assert ok_json("recall", "zebra")["items"] == []
    assert ok_json("recall", "zebra", "--pen", "beta")["items"] == []
    assert ok_json("pages", "--pen", "beta")["items"] == []
    assert ok_json("recall", "zebra", "--pen", "alpha")["scope"] == "pen:alpha"


def test_unbound_pen_gets_no_memory_and_never_global(bound: Path) -> None:
    ok_json("remember", "only in global", "--title", "g")
    result = run("recall", "global", "--pen", "nowhere", "--json")
    if result.exit_code == 0:  # a Pen may get its own default store; never Global's notes
        data = json.loads(result.stdout)
        assert data["scope"] == "pen:nowhere" and data["items"] == []
    else:
        one_error_line(result)


# -- the embedded default markdown store (goat-markdown installed) ---------------------------
@needs_markdown
def test_markdown_default_global_main_job(home: Path, tmp_path: Path) -> None:
    data = ok_json("remember", "The deploy key rotates every 90 days", "--title", "Deploy notes")
    assert list(data) == RECEIPT_KEYS
    assert data["status"] == "stored" and data["scope"] == "global"
    assert data["path"] == "Deploy notes.md" and data["id"] == "Deploy notes.md"
    assert (home / "data" / "stores" / "global" / "Deploy notes.md").is_file()
    ok_json("remember", "See [[Deploy notes]] and [[Nowhere]]", "--title", "Index")

    recall = ok_json("recall", "deploy key")
    assert recall["items"][0]["path"] == "Deploy notes.md"
    assert "deploy" in recall["items"][0]["snippet"].lower()

    pages = ok_json("pages")
    assert [p["path"] for p in pages["items"]] == ["Deploy notes.md", "Index.md"]
    assert pages["complete"] is True and pages["next_cursor"] is None

    page = ok_json("show", "deploy notes")
    assert page["title"] == "Deploy notes" and "90 days" in page["body"]
    assert run("show", "Deploy notes").stdout.strip().endswith("every 90 days")

    link_map = ok_json("map")
    assert {n["id"] for n in link_map["nodes"]} == {"Deploy notes.md", "Index.md"}
    edges = {e["raw"]: e for e in link_map["edges"]}
    assert edges["[[Deploy notes]]"]["target"] == "Deploy notes.md"
    assert edges["[[Nowhere]]"]["target"] is None
    assert edges["[[Nowhere]]"]["resolution"] == "missing"
    outline = run("map").stdout
    assert re.search(r"!!\s+\(missing\)\s+\[\[Nowhere\]\]\s+\[missing\]", outline)

    html = tmp_path / "map.html"
    result = run("map", "--html", str(html))
    assert result.exit_code == 0 and html.is_file()
    assert "Deploy notes" in html.read_text(encoding="utf-8")

    reindexed = ok_json("reindex")
    assert reindexed["scope"] == "global"

    forgot = ok_json("forget", "Index")
    assert forgot["status"] == "stored" and forgot["path"] == "Index.md"
    assert run("show", "Index").exit_code == 3


@needs_markdown
def test_map_html_goes_through_the_shared_atomic_write(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from goat_core import fileio as files

    ok_json("remember", "See [[Elsewhere]]", "--title", "Index")
    out = tmp_path / "maps"
    out.mkdir()
    synced: list[Path] = []
    real_fsync_dir = files.fsync_dir

    def record(folder: Path) -> None:
        synced.append(Path(folder))
        real_fsync_dir(folder)

    monkeypatch.setattr(files, "fsync_dir", record)
    result = run("map", "--html", str(out / "map.html"))
    assert result.exit_code == 0, result.output
    assert out in synced  # the rename is made durable
    assert [p.name for p in out.iterdir()] == ["map.html"]  # no temp file left
    assert "Index" in (out / "map.html").read_text(encoding="utf-8")
    missing = run("map", "--html", str(tmp_path / "nowhere" / "map.html"))
    assert missing.exit_code == 2
    assert "folder" in one_error_line(missing) and "does not exist" in one_error_line(missing)


@needs_markdown
def test_markdown_bound_pen_folder(home: Path, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / "Sub").mkdir(parents=True)
    (vault / "Sub" / "Internal links.md").write_text(
        "---\ndescription: how to link notes\n---\nLink with [[Home]].\n", encoding="utf-8"
    )
    (vault / "Home.md").write_text("Welcome home.\n", encoding="utf-8")
    assert run("bind", "--pen", "docs", "markdown", "--set", f"root={vault}").exit_code == 0
    assert ok_json("recall", "link notes", "--pen", "docs")["items"][0]["path"] == (
        "Sub/Internal links.md"
    )
    assert ok_json("recall", "link notes")["items"] == []  # Global stays apart
    shown = run("show", "Internal links", "--pen", "docs")
    assert shown.exit_code == 0 and "[[Home]]" in shown.stdout
    assert ok_json("pages", "--pen", "docs")["items"][0]["path"] == "Home.md"


@needs_markdown
def test_map_outline_marks_missing_notes_apart_from_missing_attachments(
    home: Path, tmp_path: Path
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "b.md").write_text("See [[Nowhere]] and ![[pic.png]] and [[a]].\n", encoding="utf-8")
    (vault / "A.md").write_text("Back to [[b]], and [[nowhere.md]] again.\n", encoding="utf-8")
    assert run("bind", "--pen", "m", "markdown", "--set", f"root={vault}").exit_code == 0
    result = run("map", "--pen", "m")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("A.md") and any(line.startswith("b.md") for line in lines)
    missing_note = next(line for line in lines if "[[Nowhere]]" in line)
    missing_pic = next(line for line in lines if "![[pic.png]]" in line)
    assert missing_note.split()[0] == "!!" and "(missing)" in missing_note
    assert missing_pic.split()[0] == "!@" and "(missing attachment)" in missing_pic
    # two spellings of one missing note: two links, one missing note (as the HTML map counts)
    assert lines[-1] == "2 pages, 5 links: 2 to 1 missing note, 1 to 1 missing attachment"


# -- real subprocesses of the installed console script ---------------------------------------
def _goat_script() -> str:
    script = Path(sys.executable).with_name("goat")
    if not script.exists():
        pytest.fail(f"the goat console script is not installed beside {sys.executable}")
    return str(script)


def _env(home: Path, extra_path: Path | None = None, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOAT_")}
    env["GOAT_HOME"] = str(home)
    if extra_path is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            [str(extra_path), *filter(None, [os.environ.get("PYTHONPATH")])]
        )
    env.update(more)
    return env


def goat(
    env: dict[str, str], *args: str, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_goat_script(), *args],
        env=env,
        input=input,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_console_script_exit_codes_and_json(fake_dist: Path, tmp_path: Path) -> None:
    env = _env(tmp_path / "h", fake_dist)
    store = tmp_path / "store"
    done = goat(env, "bind", "--global", "fake", "--set", f"root={store}")
    assert done.returncode == 0, done.stderr
    done = goat(env, "remember", "subprocess memory", "--title", "proc", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["path"] == "proc.md"
    done = goat(env, "recall", "subprocess", "--json")
    assert done.returncode == 0
    assert json.loads(done.stdout)["items"][0]["id"] == "proc.md"
    assert done.stderr == ""  # --json: nothing but JSON, and no log noise
    for args, code in [
        (["recall", "x", "--pen", "a:b"], 2),
        (["show", "absent"], 3),
        (["map"], 4),
        (["remember", "CONFLICT"], 5),
        (["check", "--set", "mode=down"], 6),
        (["recall", "BOOM"], 1),
    ]:
        done = goat(env, *args)
        assert done.returncode == code, (args, done.returncode, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("goat: error: "), (args, done.stderr)


def test_console_script_plugins_check(broken_dist: Path, tmp_path: Path) -> None:
    env = _env(tmp_path / "h", broken_dist)
    done = goat(env, "plugins", "--check")
    assert done.returncode == 6
    assert "broken" in done.stderr and "fake" in done.stdout
    env["GOAT_DISABLE_PLUGINS"] = "broken"
    assert goat(env, "plugins", "--check").returncode == 0


LIGHT_PROBE = """
import json, sys
from goat_core.cli import cli
try:
    cli.main(sys.argv[2:], prog_name="goat")
except SystemExit as exc:
    code = exc.code
heavy = sorted(m for m in ("keyring", "mcp", "rich", "httpx2") if m in sys.modules)
open(sys.argv[1], "w").write(json.dumps({"code": code, "heavy": heavy}))
"""


def _probe(env: dict[str, str], out: Path, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", LIGHT_PROBE, str(out), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.exists(), done.stderr
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def test_recall_path_stays_light(fake_dist: Path, tmp_path: Path) -> None:
    env = _env(tmp_path / "h", fake_dist)
    assert goat(env, "bind", "--global", "fake").returncode == 0
    assert goat(env, "remember", "light path").returncode == 0
    probe = _probe(env, tmp_path / "probe.json", "recall", "light")
    assert probe == {"code": 0, "heavy": []}


@needs_markdown
def test_markdown_recall_path_stays_light(tmp_path: Path) -> None:
    env = _env(tmp_path / "h")
    assert goat(env, "remember", "light markdown path").returncode == 0
    probe = _probe(env, tmp_path / "probe.json", "recall", "light")
    assert probe == {"code": 0, "heavy": []}


def test_api_key_for_a_provider_without_credentials_is_exit_2(fake_dist: Path, home: Path) -> None:
    result = run("bind", "--global", "fake", "--api-key-stdin", input="sk-test-value\n")
    assert result.exit_code == 2
    line = one_error_line(result)
    assert "declares no credential" in line
    assert "sk-test-value" not in result.output
    assert not (home / "memory.json").exists()


def test_empty_api_key_on_stdin_is_exit_2(fake_dist: Path, home: Path) -> None:
    result = run("bind", "--global", "fake", "--api-key-stdin", input="\n")
    assert result.exit_code == 2
    assert "no credential" in one_error_line(result)


def test_unknown_log_level_is_exit_2(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOAT_LOG_LEVEL", "chatty")
    result = run("scope")
    assert result.exit_code == 2
    assert "chatty" in one_error_line(result)


@needs_markdown
def test_markdown_reindex_shows_progress_only_without_json(home: Path, tmp_path: Path) -> None:
    vault = tmp_path / "big"
    vault.mkdir()
    for i in range(250):
        (vault / f"note {i:03}.md").write_text(f"entry {i} about topic{i % 7}\n")
    assert run("bind", "--pen", "big", "markdown", "--set", f"root={vault}").exit_code == 0
    quiet = run("reindex", "--pen", "big", "--json")
    assert quiet.exit_code == 0 and quiet.stderr == ""
    counts = json.loads(quiet.stdout)
    assert counts["scope"] == "pen:big" and counts["notes"] == 250
    (vault / "note 000.md").write_text("changed\n")
    for i in range(250, 500):
        (vault / f"note {i:03}.md").write_text(f"entry {i}\n")
    shown = run("reindex", "--pen", "big")
    assert shown.exit_code == 0
    assert "indexing" in shown.stderr  # click draws the bar on a terminal, the label elsewhere
    assert shown.stdout.startswith("reindexed pen:big:")


def _in_a_terminal(
    args: list[str], timeout: float = 120, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """Run the installed ``goat`` script as a user does in a terminal: stderr is a pseudo
    terminal (so the progress bar is drawn), stdout a pipe. Returns (exit, stdout, stderr)."""
    import pty

    script = Path(sys.executable).with_name("goat")
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [str(script), *args],
            stdout=subprocess.PIPE,
            stderr=follower,
            text=True,
            env={**os.environ, **(env or {})},
        )
        os.close(follower)
        follower = -1
        chunks: list[bytes] = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        out, _ = proc.communicate(timeout=timeout)
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    return proc.returncode, out, b"".join(chunks).decode("utf-8", "replace")


@needs_markdown
@pytest.mark.skipif(sys.platform == "win32", reason="pseudo terminals are POSIX")
def test_recall_in_a_terminal_draws_the_first_indexing_once(home: Path, tmp_path: Path) -> None:
    """``goat recall`` on a large, never indexed store shows the bar of its own change scan;
    it does not index first and then scan again (nor start a file watcher)."""
    vault = tmp_path / "big"
    vault.mkdir()
    for i in range(260):
        (vault / f"note {i:03}.md").write_text(f"zqterminal entry {i}\n", encoding="utf-8")
    assert run("bind", "--pen", "big", "markdown", "--set", f"root={vault}").exit_code == 0
    code, out, err = _in_a_terminal(
        ["recall", "zqterminal", "--pen", "big", "--limit", "3", "--home", str(home)],
        env={"GOAT_LOG_LEVEL": "debug"},
    )
    assert code == 0, (out, err)
    assert out.count("note ") == 3 and "SCORE" in out
    assert err.count("indexing") >= 1 and "260/260" in err.replace(" ", "")
    assert err.count("markdown.scan") == 1, err  # the store was walked once
    assert "markdown.watch_started" not in err  # a one-shot command starts no watcher
    code, out, err = _in_a_terminal(
        ["recall", "zqterminal", "--pen", "big", "--limit", "3", "--home", str(home)]
    )
    assert code == 0 and "indexing" not in err  # nothing changed: nothing to draw


@needs_markdown
def test_the_readme_host_example_runs(home: Path, tmp_path: Path) -> None:
    """The README's "Use it from a host" example, as written, on a bound Pen."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Use it from a host", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    vault = tmp_path / "docs"
    vault.mkdir()
    assert run("bind", "--pen", "docs", "markdown", "--set", f"root={vault}").exit_code == 0
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "GOAT_HOME": str(home)},
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("ok Recalled from Pen `docs` memory")
    assert "We ship on Thursdays" in proc.stdout and "'recall'" in proc.stdout
    assert (vault / "Release rhythm.md").is_file()


# -- remote bindings: live status tones and drafts ----------------------------------------------
# (docs/design.md, Remote providers and the supervisor)
REMOTE_PLUGIN = '''
"""A throwaway remote provider: its "server" is a log file; the bank name picks the answer."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from goat_core import (
    Capability, Health, Provider, ProviderSpec, RecallResult, Receipt, ReceiptStatus, hookimpl,
)
from goat_core.errors import AuthError, ProviderUnavailable


class RemoteSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    server: str
    bank: str


class FakeRemote(Provider):
    def __init__(self, context):
        super().__init__(context)
        self.spec = spec()
        self.bank = context.settings.bank
        self.log = context.home.data_dir / "contacts.log"

    def label(self):
        return f"shared bank `{self.bank}` on `{self.context.settings.server}`"

    def transport_fingerprint(self):
        return f"{self.context.settings.server}|{self.bank}"

    async def check(self):
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("a") as f:
            f.write(self.bank + "\\n")
        if self.bank == "down":
            raise ProviderUnavailable("cannot reach the server: connection refused")
        if self.bank == "locked":
            raise AuthError("the server refused the API key (HTTP 401)")
        if self.bank == "gone":
            return Health.broken("bank `gone` not found", cause="bank_not_found")
        return Health.healthy(f"{self.label()} reached")

    async def recall(self, query, *, limit=10):
        return RecallResult(scope=self.scope.key)

    async def remember(self, write):
        return Receipt(status=ReceiptStatus.QUEUED, operation_id="op-bank-1", scope=self.scope.key)


def spec():
    return ProviderSpec(
        name="fakeremote", display_name="Fake remote", version="0.1.0",
        capabilities=frozenset({Capability.SHARED_BANK}), settings_model=RemoteSettings,
        network=True, factory=FakeRemote, egress_urls=lambda s: [s.server])


@hookimpl
def goat_register_providers():
    return [spec()]
'''


@pytest.fixture
def remote_dist(fake_dist: Path) -> Iterator[Path]:
    _write_dist(
        fake_dist, "goat-fakeremote", "goat_fakeremote", "fakeremote", REMOTE_PLUGIN.strip() + "\n"
    )
    yield fake_dist
    sys.modules.pop("goat_fakeremote", None)


def contacts(home: Path) -> list[str]:
    from goat_core.host import GoatHome

    log = GoatHome.at(home).data_dir / "contacts.log"
    return log.read_text().split() if log.exists() else []


def bind_remote(pen: str, bank: str) -> None:
    result = run(
        "bind", "--pen", pen, "fakeremote", "--set", "server=https://hs.example",
        "--set", f"bank={bank}", "--no-connect",
    )  # fmt: skip
    assert result.exit_code == 0, result.output


def test_status_shows_truthful_tones_for_healthy_broken_and_disabled(
    remote_dist: Path, home: Path
) -> None:
    for pen, bank in [("ok", "main"), ("down", "down"), ("locked", "locked"), ("gone", "gone")]:
        bind_remote(pen, bank)
    bind_remote("off", "quiet")
    assert run("disable", "--pen", "off").exit_code == 0
    assert contacts(home) == []  # bound with --no-connect: nothing contacted yet

    rows = {r["scope"]: r for r in ok_json("status")["bindings"]}
    got = {k: (r["tone"], r.get("cause")) for k, r in rows.items() if k.startswith("pen:")}
    got.pop(ok_json("scope")["scope"], None)  # the current directory's own (unbound) Pen
    assert got == {
        "pen:ok": ("accent", None),
        "pen:down": ("warn", "unreachable"),
        "pen:locked": ("warn", "auth"),
        "pen:gone": ("warn", "not_found"),
        "pen:off": ("dim", None),
    }
    assert rows["pen:ok"]["last_checked"] and "`main`" in rows["pen:ok"]["reason"]
    assert "connection refused" in rows["pen:down"]["reason"]
    assert "goat check" in rows["pen:locked"]["reason"]
    assert rows["pen:off"]["last_checked"] is None
    # one short live check per enabled remote binding; a disabled one is never contacted
    assert sorted(contacts(home)) == ["down", "gone", "locked", "main"]
    human = run("status")
    assert human.exit_code == 0
    lines = {line.split()[0]: line for line in human.stdout.splitlines() if line.strip()}
    assert "CAUSE" in lines["SCOPE"]
    assert "unreachable" in lines["pen:down"] and "auth" in lines["pen:locked"]
    assert "dim" in lines["pen:off"]


def test_a_write_to_a_shared_bank_names_the_bank_not_just_the_scope(
    remote_dist: Path, home: Path
) -> None:
    """Whatever scope selected it, a shared bank is named as itself (docs/design.md, Bindings
    and providers)."""
    result = run(
        "bind", "--global", "fakeremote", "--set", "server=https://hs.example",
        "--set", "bank=main", "--no-connect",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == (
        "not checked (--no-connect): `goat check --global` connects and reports"
    )
    wrote = run("remember", "We ship on Thursdays")
    assert wrote.exit_code == 0, wrote.output
    assert wrote.stdout == (
        "queued as operation op-bank-1 (shared bank `main` on `https://hs.example`, "
        "selected by global)\n"
    )
    assert json.loads(run("remember", "again", "--json").stdout)["scope"] == "global"


def test_status_watch_rechecks_every_render(remote_dist: Path, home: Path) -> None:
    from goat_core.cli._admin import WATCH_SECONDS

    assert WATCH_SECONDS == 15.0
    bind_remote("ok", "main")
    result = run("status", "--watch", "--json", "--interval", "0", "--times", "3")
    assert result.exit_code == 0
    assert len(result.stdout.splitlines()) == 3
    assert contacts(home) == ["main", "main", "main"]


def test_check_set_draft_semantics_for_a_remote_binding(remote_dist: Path, home: Path) -> None:
    bind_remote("team", "down")
    saved = (home / "memory.json").read_bytes()
    # an edited draft: tested on its own, exit 0, nothing saved touched
    result = run(
        "check", "--pen", "team", "--set", "server=https://hs.example", "--set", "bank=main",
        "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["draft"] is True
    assert (home / "memory.json").read_bytes() == saved
    # the unchanged draft is a check of the saved connection: its failure, with its cause
    result = run(
        "check", "--pen", "team", "--set", "server=https://hs.example", "--set", "bank=down",
        "--json",
    )  # fmt: skip
    assert result.exit_code == 6
    data = json.loads(result.stdout)
    assert (data["ok"], data["cause"]) == (False, "unreachable")
    assert "(unreachable)" in one_error_line(result)
    assert contacts(home) == ["main", "down"]
    locked = run(
        "check", "--pen", "team", "--set", "server=https://hs.example", "--set", "bank=locked"
    )
    assert locked.exit_code == 6 and "(auth)" in one_error_line(locked)


def test_check_set_changes_only_the_named_settings(remote_dist: Path, home: Path) -> None:
    """``--set bank=...`` tests another bank on the saved server (the other settings are
    the saved ones); a key for a test needs --set, and is never stored."""
    bind_remote("team", "down")
    saved = (home / "memory.json").read_bytes()
    result = run("check", "--pen", "team", "--set", "bank=main", "--json")
    assert result.exit_code == 0, result.output
    assert contacts(home) == ["main"]
    assert (home / "memory.json").read_bytes() == saved
    lone = run("check", "--pen", "team", "--api-key-stdin", input="k-test\n")
    assert lone.exit_code == 2 and "only taken to test --set draft settings" in lone.stderr
    keyed = run("check", "--pen", "team", "--set", "bank=main", "--api-key-stdin", input="k\n")
    assert keyed.exit_code == 2  # this provider declares no credential: no key taken
    assert "declares no credential" in one_error_line(keyed)
    assert (home / "memory.json").read_bytes() == saved


def test_status_table_reason_does_not_repeat_the_label() -> None:
    from goat_core.cli._admin import _short_reason

    label = "shared bank `team` on `https://hs.example`"
    assert _short_reason(label, f"{label}: cannot reach `https://hs.example`") == (
        "cannot reach `https://hs.example`"
    )
    assert _short_reason(label, "configured; not checked yet") == "configured; not checked yet"
    assert _short_reason(None, None) == ""


# -- the public helpers for plugin commands -------------------------------------------------
def test_plugin_command_helpers_open_memory_as_the_core_commands_do(
    bound: Path, home: Path, tmp_path: Path
) -> None:
    import click

    from goat_core.cli import emit_json, memory_options, open_memory
    from goat_core.errors import ScopeError

    @click.command("titles")
    @memory_options
    def titles(pen: str | None, as_json: bool, home: Path | None) -> None:
        with open_memory(home, pen) as memory:
            listing = memory.list_pages(limit=10)
            scope = memory.scope.key
        names = [item.title for item in listing.items]
        if as_json:
            emit_json({"scope": scope, "titles": names})
        else:
            click.echo(", ".join(names))

    assert run("remember", "first", "--title", "Alpha").exit_code == 0
    help_text = CliRunner().invoke(titles, ["--help"]).stdout
    assert "--pen ID" in help_text and "--json" in help_text and "--home DIRECTORY" in help_text
    result = CliRunner().invoke(titles, ["--json", "--home", str(home)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"scope": "global", "titles": ["Alpha"]}
    assert result.stdout == json.dumps(json.loads(result.stdout), indent=2) + "\n"
    bad = CliRunner().invoke(titles, ["--pen", "Not a pen!", "--home", str(tmp_path / "none")])
    assert isinstance(bad.exception, ScopeError)  # before any I/O: no home was created
    assert not (tmp_path / "none").exists()
