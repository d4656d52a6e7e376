"""The hostile remote server and secret checks of goat_core.testing (_remote.py)."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from goat_core.testing import assert_no_secret, remote_mcp_server, secret_forms

KEY = "k/+= !x"


def _post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    request = urllib.request.Request(
        url + "/mcp/bank/",
        data=json.dumps(body).encode(),
        headers={"authorization": f"Bearer {KEY}", "content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            data = response.read()
            return response.status, json.loads(data) if data else None
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def test_secret_forms_are_the_key_its_header_and_its_url_encodings() -> None:
    forms = secret_forms(KEY)
    assert forms[:4] == [KEY, f"Bearer {KEY}", "k%2F%2B%3D%20%21x", "k%2f%2b%3d%20%21x"]
    assert base64.b64encode(KEY.encode()).decode() in forms  # echoed in base64
    assert base64.b64encode(f"{KEY}:".encode()).decode() in forms  # as Basic credentials


def test_a_secret_echoed_in_base64_is_redacted() -> None:
    """The exact input: a server echoing the key base64-encoded, as Basic credentials."""
    from goat_core.logs import RedactSecrets

    key = "sk-live-4f8a9d2c61b7e035"
    echoed = base64.b64encode(f"{key}:".encode()).decode()
    redactor = RedactSecrets([key])
    text = redactor.scrub_text(f"401: the server rejected {echoed}, try again")
    assert echoed not in text and "[REDACTED]" in text


def test_assert_no_secret_names_the_form_that_leaked() -> None:
    assert_no_secret("nothing here [REDACTED]", KEY)
    with pytest.raises(AssertionError, match="k%2f%2b"):
        assert_no_secret("url ...?key=k%2f%2b%3d%20%21x", KEY)


@pytest.mark.parametrize(
    ("mode", "status"), [("auth", 401), ("down", 503), ("rpc", 200), ("tool", 200)]
)
def test_each_mode_answers_as_documented_and_counts_requests(mode: str, status: int) -> None:
    with remote_mcp_server(mode, tools=["retain", "recall"]) as server:
        code, body = _post(server.url, {"jsonrpc": "2.0", "id": 1, "method": "initialize"})
        assert code == status
        if mode in ("auth", "rpc"):  # the echo carries every form of the key
            text = json.dumps(body)
            assert all(form in text for form in secret_forms(KEY)[:3]), text
            with pytest.raises(AssertionError):
                assert_no_secret(text, KEY)
        if mode == "tool":
            assert body is not None and body["result"]["serverInfo"]["name"] == "hostile"
            _, tools = _post(server.url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            assert [t["name"] for t in tools["result"]["tools"]] == ["retain", "recall"]  # type: ignore[index]
            _, call = _post(server.url, {"jsonrpc": "2.0", "id": 3, "method": "tools/call"})
            assert call is not None and call["result"]["isError"] is True
            assert f"Bearer {KEY}" in call["result"]["content"][0]["text"]
    assert server.requests[0] == "initialize"


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown mode 'slow'"):
        with remote_mcp_server("slow"):
            pass


@pytest.mark.parametrize(
    "echo",
    ["aB3\\/dEf+GhIj\\/Wx==", "hk\\u002dTOPSECRET\\u002dkey"],
)
def test_a_secret_echoed_json_escaped_is_redacted(echo: str) -> None:
    """The exact inputs: a key with ``/`` as PHP's json_encode writes it, and one with its
    dashes as ``\\u002d``."""
    from goat_core.logs import RedactSecrets

    key = json.loads(f'"{echo}"')
    text = RedactSecrets([key]).scrub_text(f"invalid key {echo} for bank")
    assert echo not in text and "[REDACTED]" in text
