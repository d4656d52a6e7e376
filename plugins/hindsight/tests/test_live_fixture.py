"""The live-server fixture's rule: with CI=true an unavailable server fails, else it skips."""

from __future__ import annotations

import live_server
import pytest


def test_unavailable_server_skips_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live_server, "IN_CI", False)
    with pytest.raises(pytest.skip.Exception, match="server unavailable: no venv"):
        live_server._unavailable("no venv")


def test_unavailable_server_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live_server, "IN_CI", True)
    with pytest.raises(pytest.fail.Exception, match="unavailable in CI: no venv"):
        live_server._unavailable("no venv")


def test_script_failure_is_reported_with_its_stderr() -> None:
    with pytest.raises(RuntimeError, match="usage"):
        live_server._run("no-such-command", timeout=30)


def test_ci_flag_is_read_from_the_environment() -> None:
    import os

    assert live_server.IN_CI == (os.environ.get("CI", "").lower() == "true")
