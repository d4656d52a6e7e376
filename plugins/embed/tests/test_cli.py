"""``goat embedders`` with this plugin installed: the JSON shape, and ``fetch`` refusing what
it must refuse before any connection."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from goat_core.cli import cli


def _rows(home: Path) -> dict[str, dict[str, Any]]:
    result = CliRunner().invoke(cli, ["embedders", "--json", "--home", str(home)])
    assert result.exit_code == 0, result.output
    return {r["name"]: r for r in json.loads(result.output)["embedders"]}


def test_embedders_json_says_verified_once_fetched(tmp_path: Path, seed_home: Any) -> None:
    rows = _rows(seed_home(tmp_path))
    assert set(rows) >= {"minilm-en", "minilm-en-fp32", "use-multilingual"}
    for row in rows.values():
        keys = {"name", "dimensions", "languages", "weights", "detail", "offline", "source"}
        assert set(row) == keys
        assert row["weights"] == "verified" and row["offline"] is True, row
    assert rows["minilm-en"]["dimensions"] == 384
    assert "huggingface.co" in rows["minilm-en"]["source"]


def test_a_new_home_says_not_fetched_with_the_command(tmp_path: Path) -> None:
    """No weights come with the plugin: a new GOAT home lists MiniLM as not fetched and
    names the one command that fetches it; the table says the same."""
    rows = _rows(tmp_path)
    for name in ("minilm-en", "minilm-en-fp32"):
        assert rows[name]["weights"] == "not fetched" and rows[name]["offline"] is False
        assert f"`goat embedders fetch {name}`" in rows[name]["detail"]
    assert rows["use-multilingual"]["weights"] == "verified"  # in its package
    table = CliRunner().invoke(cli, ["embedders", "--home", str(tmp_path)])
    assert "WEIGHTS" in table.output and "not fetched: `goat embedders fetch minilm-en`" in (
        table.output
    )


def test_a_copy_failing_its_sha256_is_fetched_but_unverified(tmp_path: Path) -> None:
    cache = tmp_path / "data" / "embedders" / "minilm-en"
    cache.mkdir(parents=True)
    (cache / "model.safetensors").write_bytes(b"not the weights")
    row = _rows(tmp_path)["minilm-en"]
    assert row["weights"] == "fetched" and "unverified" in row["detail"], row
    assert "model.safetensors" in row["detail"] and row["offline"] is False


def test_fetch_refuses_without_url_and_non_https(tmp_path: Path, no_network: list[str]) -> None:
    runner = CliRunner()
    home = ["--home", str(tmp_path)]
    result = runner.invoke(cli, ["embedders", "fetch", "use-multilingual", *home])
    assert result.exit_code == 2 and "takes no download" in result.output
    result = runner.invoke(cli, ["embedders", "fetch", "minilm-en", "--mirror", "http://x/", *home])
    assert result.exit_code == 2 and "only https" in result.output
    result = runner.invoke(
        cli, ["embedders", "fetch", "minilm-en", "http://example.org/model.bin", *home]
    )
    assert result.exit_code == 2 and "only https" in result.output
    result = runner.invoke(cli, ["embedders", "fetch", "nope", *home])
    assert result.exit_code == 3
    assert no_network == []


# -- semantic recall through the CLI and the host API when the cached graph is damaged or the
# -- query holds what the tokenizer cannot take, and `goat embedders fetch` with hostile URLs


import pytest  # noqa: E402


def _semantic_pen(tmp_path: Path, seed_home: Any) -> tuple[list[str], Path]:
    """A pen bound with ``embedder=minilm-en-fp32`` over a four-note vault (the weights
    fetched into its GOAT home), recalled once (so the fp32 graph is built and cached);
    returns the ``--home`` option and the graph."""
    seed_home(tmp_path / "home")
    vault = tmp_path / "vault"
    vault.mkdir()
    for i in range(3):
        (vault / f"n{i}.md").write_text(
            f"# Note {i}\n\nSyncing notes between phone and desktop, item {i}.\n", "utf-8"
        )
    (vault / "cats.md").write_text("# Cats\n\nFelines sleep a lot.\n", "utf-8")
    home = ["--home", str(tmp_path / "home")]
    runner = CliRunner()
    bound = runner.invoke(
        cli,
        [
            "bind",
            "--pen",
            "docs",
            "markdown",
            "--set",
            f"root={vault}",
            "--set",
            "embedder=minilm-en-fp32",
            *home,
        ],
    )
    assert bound.exit_code == 0, bound.output
    first = runner.invoke(cli, ["recall", "kittens", "--pen", "docs", "--json", *home])
    assert first.exit_code == 0, first.output
    graphs = list((tmp_path / "home").rglob("minilm-fp32-*.onnx"))
    assert len(graphs) == 1, graphs
    return home, graphs[0]


@pytest.mark.parametrize("damage", ["non-ascii-record", "truncated-with-record", "wrong-width"])
def test_recall_with_a_damaged_cached_graph_answers_degraded(
    damage: str, tmp_path: Path, seed_home: Any
) -> None:
    """docs/design.md, Semantic recall: "when the embedder cannot be loaded, recall answers
    the keyword results with complete=false and the reason in degraded". A ``.sha256``
    record that is not ASCII, a damaged graph whose record (key and sha256) matches it, and a
    graph with MiniLM's names but another output width, under a matching record: each is
    rebuilt (the rebuild is a warning on stderr; the answer on stdout) or answered degraded,
    never "unexpected ..." (exit 1)."""
    from test_graph_cache import _fake_graph, _record_for

    home, graph = _semantic_pen(tmp_path, seed_home)
    record = graph.with_name(graph.name + ".sha256")
    if damage == "non-ascii-record":
        record.write_bytes(b"\xff\xfe")
    else:
        data = graph.read_bytes()[:1000] if damage == "truncated-with-record" else _fake_graph(3)
        graph.write_bytes(data)
        record.write_bytes(_record_for(data))
    result = CliRunner().invoke(cli, ["recall", "kittens", "--pen", "docs", "--json", *home])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    rebuilt = answer["complete"] and not answer["degraded"]
    said = any("minilm-en-fp32" in d for d in answer["degraded"]) and not answer["complete"]
    assert rebuilt or said, answer
    assert "unexpected" not in result.output


def test_semantic_recall_of_an_undecodable_argument_is_not_an_internal_error(
    tmp_path: Path, seed_home: Any
) -> None:
    """``goat recall $'kit\\xfftens'``: Python hands an undecodable argv byte over as a lone
    surrogate (``\\udcff``), which the tokenizer cannot take (``TypeError: TextInputSequence
    must be str``). The embedder replaces it (``?``) before tokenising: the recall answers
    complete, as the keyword index alone does."""
    home, _ = _semantic_pen(tmp_path, seed_home)
    result = CliRunner().invoke(cli, ["recall", "kit\udcfftens", "--pen", "docs", "--json", *home])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["complete"] and answer["degraded"] == [], answer


def test_fetch_never_echoes_a_password_in_the_url(tmp_path: Path, no_network: list[str]) -> None:
    """docs/design.md, Credentials and egress: secrets are never in exceptions or messages.
    ``goat embedders fetch minilm-en https://user:PW@host/model.safetensors`` is refused
    before any request (bad input, exit 2), and the message shows the URL with its user info
    replaced by ``***``."""
    result = CliRunner().invoke(
        cli,
        [
            "embedders",
            "fetch",
            "minilm-en",
            "https://user:s3cretPW@127.0.0.1:9/model.safetensors",
            "--home",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "s3cretPW" not in result.output
    assert "https://***@127.0.0.1:9/model.safetensors" in result.output
    assert no_network == []


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("https://[::1/model.safetensors", 2),  # not a URL: bad input
        ("https://127.0.0.1:9/model.safetensors", 6),  # nothing listens: unavailable
    ],
)
def test_fetch_faults_are_typed(url: str, code: int, tmp_path: Path) -> None:
    """docs/design.md: errors are typed. A URL that does not parse is bad input (exit 2); a
    refused connection is unavailable (exit 6); neither is an internal error (exit 1)."""
    result = CliRunner().invoke(
        cli, ["embedders", "fetch", "minilm-en", url, "--home", str(tmp_path)]
    )
    assert result.exit_code == code, result.output
    assert "unexpected" not in result.output


def test_fetch_refused_by_the_guard_is_not_reported_as_the_servers_answer(
    tmp_path: Path, no_network: list[str]
) -> None:
    """``https://127.0.0.1:9/..``: the client normalises the path to ``/``, which is not the
    URL the guard was told to allow, so the guard refuses it and nothing is sent. The
    message says the egress guard refused it, not that a server answered HTTP 403."""
    result = CliRunner().invoke(
        cli, ["embedders", "fetch", "minilm-en", "https://127.0.0.1:9/..", "--home", str(tmp_path)]
    )
    assert result.exit_code != 0
    assert result.exit_code == 6, result.output
    assert "answered HTTP" not in result.output, result.output
    assert "the egress guard refused fetching https://127.0.0.1:9/.." in result.output
    assert no_network == []


def test_host_recall_with_a_lone_surrogate_answers(tmp_path: Path, seed_home: Any) -> None:
    """The host API (what ``goat serve``'s tools and the hook's server use) recalling a query
    holding a lone surrogate (a hook's stdin JSON ``"\\ud800"``, which ``json.loads`` accepts
    and the hook passes on to the running server; an undecodable argv byte; a Python caller;
    the MCP transport's JSON parser refuses it before any tool runs): the embedder replaces
    it before tokenising, so the semantic binding answers ``complete``, as Global
    (keyword-only) does."""
    import anyio

    from goat_core.host import Chat, GoatHome, MemoryHost

    home, _ = _semantic_pen(tmp_path, seed_home)

    async def main() -> object:
        async with MemoryHost(home=GoatHome.at(Path(home[1]))) as host:
            context = host.context_for(Chat(project_id="docs"))
            return await context.recall("kit\ud800tens", limit=5)

    result: Any = anyio.run(main)
    assert result.complete and result.degraded == (), result


def test_first_use_says_it_is_embedding_before_the_graph_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed_home: Any
) -> None:
    """The first semantic recall of a store builds the ONNX graph (several seconds) and then
    embeds every note: the CLI's ``goat: embedding N notes…`` line comes before the build,
    so a first use is never silent while it prepares the model."""
    import sys

    from goat_embed import _minilm

    build = _minilm._build

    def announced(model_dir: Path, variant: str, out: Path) -> None:
        sys.stderr.write("<graph build starts>\n")
        build(model_dir, variant, out)

    monkeypatch.setattr(_minilm, "_build", announced)
    vault = tmp_path / "vault"
    vault.mkdir()
    for i in range(25):
        (vault / f"n{i}.md").write_text(f"# Note {i}\n\nPhone and desktop, item {i}.\n", "utf-8")
    home = ["--home", str(seed_home(tmp_path / "home"))]
    runner = CliRunner()
    bind = ["bind", "--pen", "docs", "markdown", "--set", f"root={vault}"]
    bound = runner.invoke(cli, [*bind, "--set", "embedder=minilm-en-fp32", *home])
    assert bound.exit_code == 0, bound.output
    result = runner.invoke(cli, ["recall", "kittens", "--pen", "docs", "--json", *home])
    assert result.exit_code == 0, result.output
    said = result.stderr.index("goat: embedding 25 notes for semantic recall")
    assert said < result.stderr.index("<graph build starts>"), result.stderr
    assert json.loads(result.stdout)["degraded"] == [], result.stdout  # ranked semantically


def test_binding_without_fetched_weights_names_the_fetch_command(tmp_path: Path) -> None:
    """The exact input: ``goat bind ... --set embedder=minilm-en`` before the weights are
    fetched. Refused (exit 2) with the one command that fetches them; nothing is saved."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "cats.md").write_text("# Cats\n\nFelines sleep a lot.\n", "utf-8")
    home = ["--home", str(tmp_path / "home")]
    runner = CliRunner()
    bind = ["bind", "--pen", "docs", "markdown", "--set", f"root={vault}"]
    bound = runner.invoke(cli, [*bind, "--set", "embedder=minilm-en", *home])
    assert bound.exit_code == 2, bound.output
    assert "`goat embedders fetch minilm-en`" in bound.output
    assert not (tmp_path / "home" / "memory.json").exists()
