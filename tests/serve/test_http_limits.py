"""``goat serve --http`` against sockets that hold it open: idle and slow-header connections
time out, never lock out other clients, and a client that hangs up mid-body costs one short
log line. Each case uses its exact input against a real server on loopback."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from goat_core.serve._http import HEADER_TIMEOUT_SECONDS

from .test_http import HEADERS, INIT, _start


@pytest.fixture
def served(home: Path) -> Iterator[tuple[str, int, object]]:
    proc, port = _start(home, "127.0.0.1:PORT", "--global")
    yield f"http://127.0.0.1:{port}/mcp/global", port, proc
    proc.terminate()
    proc.wait(10)


def _open(port: int, count: int) -> list[socket.socket]:
    out = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        out.append(s)
    return out


def _closed_by_server(s: socket.socket, within: float) -> bool:
    s.settimeout(within)
    try:
        return s.recv(1024) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def test_seventy_idle_sockets_lock_no_one_out_and_are_closed(
    served: tuple[str, int, object],
) -> None:
    """The exact input: 70 TCP connections that send nothing (63 made every client 503)."""
    url, port, _ = served
    idle = _open(port, 70)
    try:
        with httpx2.Client(timeout=10) as http:
            for _ in range(5):
                r = http.post(url, json=INIT, headers=HEADERS)
                assert r.status_code == 200, r.text
        start = time.monotonic()
        assert all(_closed_by_server(s, 30) for s in idle), "an idle socket stayed open"
        assert time.monotonic() - start < HEADER_TIMEOUT_SECONDS + 10
    finally:
        for s in idle:
            s.close()


def test_slow_headers_starve_no_one(served: tuple[str, int, object]) -> None:
    """The exact input: 80 clients sending a request head one byte a second; a good client
    meanwhile makes 19 requests, and each is answered."""
    url, port, _ = served
    slow = _open(port, 80)
    head = b"POST /mcp/global HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    try:
        with httpx2.Client(timeout=10) as http:
            answered = 0
            for i in range(19):
                for s in slow:
                    try:
                        s.send(head[i : i + 1])
                    except OSError:
                        pass  # the server already closed it: fine
                r = http.post(url, json=INIT, headers=HEADERS)
                answered += r.status_code == 200
                time.sleep(0.2)
        assert answered == 19
        assert all(_closed_by_server(s, HEADER_TIMEOUT_SECONDS + 10) for s in slow)
    finally:
        for s in slow:
            s.close()


def test_a_client_that_hangs_up_mid_body_is_one_short_line(
    served: tuple[str, int, object],
) -> None:
    """The exact input: a POST declaring 1,000 body bytes that sends 10 and closes, 30 times."""
    url, port, proc = served
    for _ in range(30):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(
            b"POST /mcp/global HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n"
            b'{"jsonrpc"'
        )
        s.close()
    with httpx2.Client(timeout=10) as http:  # still serving
        assert http.post(url, json=INIT, headers=HEADERS).status_code == 200
    proc.terminate()  # type: ignore[attr-defined]
    _, err = proc.communicate(timeout=10)  # type: ignore[attr-defined]
    assert "Traceback" not in err, err[-3000:]
    lines = [line for line in err.splitlines() if "disconnect" in line.lower()]
    assert len(lines) <= 30 and all(len(line) < 200 for line in lines), lines[:3]


@pytest.mark.parametrize("ident", ['{"a": 1}', "NaN", "1.5", "true", "[1]"])
def test_a_request_id_the_spec_forbids_gets_an_answer(
    served: tuple[str, int, object], ident: str
) -> None:
    """The exact input: a JSON-RPC ``id`` that is an object or NaN (it got 202 and no
    answer), a float, a boolean or an array: 400 with JSON-RPC -32600."""
    url, _, _ = served
    body = '{"jsonrpc": "2.0", "id": ' + ident + ', "method": "ping"}'
    with httpx2.Client(timeout=10) as http:
        r = http.post(url, content=body, headers=HEADERS)
    assert r.status_code == 400, r.text
    error = r.json()
    assert error["id"] is None and error["error"]["code"] == -32600


def test_a_body_that_never_finishes_is_408_and_a_longer_one_413(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A body trickling past the deadline is answered 408 (it logged 'ASGI callable returned
    without starting response'); one longer than its Content-Length 413."""
    import anyio

    from goat_core.serve import _http

    monkeypatch.setattr(_http, "BODY_TIMEOUT_SECONDS", 0.2)

    async def trickle() -> dict[str, object]:
        await anyio.sleep(0.05)
        return {"type": "http.request", "body": b"x", "more_body": True}

    assert anyio.run(_http._read_body, trickle, 1000) is _http._TOO_SLOW

    async def flood() -> dict[str, object]:
        return {"type": "http.request", "body": b"y" * 600, "more_body": True}

    assert anyio.run(_http._read_body, flood, 1000) is _http._TOO_LONG


def test_sessions_past_the_cap_get_503_until_one_ends(served: tuple[str, int, object]) -> None:
    """The exact input: MAX_SESSIONS + 1 initialize requests that never close their sessions.
    The last gets 503 and opens nothing; after one session's DELETE, a new one opens."""
    from goat_core.serve._http import MAX_SESSIONS

    url, _port, _ = served
    with httpx2.Client(timeout=10) as http:
        ids = []
        for _ in range(MAX_SESSIONS):
            r = http.post(url, json=INIT, headers=HEADERS)
            assert r.status_code == 200, r.text
            ids.append(r.headers["mcp-session-id"])
        assert len(set(ids)) == MAX_SESSIONS
        refused = http.post(url, json=INIT, headers=HEADERS)
        assert refused.status_code == 503, refused.text
        assert "mcp-session-id" not in refused.headers
        assert "Too many open sessions" in refused.text
        # the sessions already open still answer
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        alive = http.post(
            url,
            json=ping,
            headers={**HEADERS, "mcp-session-id": ids[0], "mcp-protocol-version": "2025-11-25"},
        )
        assert alive.status_code == 200, alive.text
        closed = http.delete(url, headers={**HEADERS, "mcp-session-id": ids[-1]})
        assert closed.status_code == 200, closed.text
        again = http.post(url, json=INIT, headers=HEADERS)
        assert again.status_code == 200, again.text
