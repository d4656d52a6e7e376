"""``goat embedders`` with this plugin installed: the JSON shape, and ``fetch`` refusing what
it must refuse before any connection."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from goat_core.cli import cli


def test_embedders_json_lists_both_offline(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["embedders", "--json", "--home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.output)["embedders"]}
    assert set(rows) >= {"minilm-en", "use-multilingual"}
    for row in rows.values():
        assert set(row) == {"name", "dimensions", "languages", "offline", "source"}
        assert row["offline"] is True
    assert rows["minilm-en"]["dimensions"] == 384


def test_fetch_refuses_without_url_and_non_https(tmp_path: Path, no_network: list[str]) -> None:
    runner = CliRunner()
    home = ["--home", str(tmp_path)]
    result = runner.invoke(cli, ["embedders", "fetch", "minilm-en", *home])
    assert result.exit_code == 2 and "takes no download" in result.output
    result = runner.invoke(
        cli, ["embedders", "fetch", "minilm-en", "http://example.org/model.bin", *home]
    )
    assert result.exit_code == 2 and "only https" in result.output
    result = runner.invoke(cli, ["embedders", "fetch", "nope", *home])
    assert result.exit_code == 3
    assert no_network == []
