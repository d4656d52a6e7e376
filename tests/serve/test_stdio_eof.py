"""The end of stdin on ``goat serve``: requests already read are answered first
(goat_core/serve/_stdio.py, ``answered_before_eof``)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import anyio
import pytest

from goat_core.serve._stdio import answered_before_eof

from .conftest import GOAT, HANDSHAKE, goat_env

pytestmark = pytest.mark.anyio


def _request(id_: int) -> SimpleNamespace:
    return SimpleNamespace(message=SimpleNamespace(method="tools/list", id=id_))


def _answer(id_: int) -> SimpleNamespace:
    return SimpleNamespace(message=SimpleNamespace(id=id_, result={}))


async def test_eof_waits_for_the_answer_of_a_slow_request() -> None:
    client_send, transport_reads = anyio.create_memory_object_stream[object](4)
    transport_writes, client_reads = anyio.create_memory_object_stream[object](4)
    seen: list[str] = []
    async with answered_before_eof(transport_reads, transport_writes, grace=5) as (reads, writes):
        await client_send.send(_request(7))
        await client_send.aclose()  # the client's EOF, with request 7 in flight
        async with writes:
            async for item in reads:
                seen.append(f"read {item.message.id}")
                await anyio.sleep(0.3)  # a slow handler
                await writes.send(_answer(item.message.id))
                seen.append(f"answered {item.message.id}")
            seen.append("eof")  # the server saw EOF only after its answer was relayed
    assert seen == ["read 7", "answered 7", "eof"]
    assert client_reads.receive_nowait().message.id == 7  # type: ignore[attr-defined]


async def test_eof_waits_no_longer_than_the_grace() -> None:
    from structlog.testing import capture_logs

    client_send, transport_reads = anyio.create_memory_object_stream[object](4)
    transport_writes, _client_reads = anyio.create_memory_object_stream[object](4)
    with anyio.fail_after(5), capture_logs() as logs:
        async with answered_before_eof(transport_reads, transport_writes, grace=0.2) as (
            reads,
            writes,
        ):
            await client_send.send(_request(1))
            await client_send.aclose()
            async with writes:
                assert (await reads.receive()).message.id == 1
                with pytest.raises(anyio.EndOfStream):
                    await reads.receive()  # never answered: EOF after the grace
    assert [(e["event"], e["requests"]) for e in logs] == [("serve.eof_unanswered", 1)]


_MESSAGES = [
    *HANDSHAKE,
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
    {"jsonrpc": "2.0", "id": 3, "method": "resources/list", "params": {}},
]


def test_piped_requests_are_all_answered(home: Path) -> None:
    """``printf ... | goat serve``: the pipe closes at once; every request gets its answer."""
    stdin = "".join(json.dumps(m) + "\n" for m in _MESSAGES)
    for _ in range(5):
        proc = subprocess.run(
            [GOAT, "serve", "--global"],
            input=stdin,
            env=goat_env(home),
            capture_output=True,
            text=True,
            timeout=60,
        )
        ids = [json.loads(line)["id"] for line in proc.stdout.splitlines() if line.strip()]
        assert sorted(ids) == [1, 2, 3], proc.stdout + proc.stderr
        assert proc.returncode == 0, proc.stderr


async def test_an_id_sent_twice_waits_for_two_answers() -> None:
    client_send, transport_reads = anyio.create_memory_object_stream[object](4)
    transport_writes, client_reads = anyio.create_memory_object_stream[object](4)
    async with answered_before_eof(transport_reads, transport_writes, grace=5) as (reads, writes):
        await client_send.send(_request(1))
        await client_send.send(_request(1))
        await client_send.aclose()
        async with writes:
            first, second = await reads.receive(), await reads.receive()
            await writes.send(_answer(first.message.id))
            await anyio.sleep(0.2)
            await writes.send(_answer(second.message.id))
    ids = [client_reads.receive_nowait().message.id for _ in range(2)]  # type: ignore[attr-defined]
    assert ids == [1, 1]


async def test_a_cancelled_request_is_not_waited_for() -> None:
    client_send, transport_reads = anyio.create_memory_object_stream[object](4)
    transport_writes, _client_reads = anyio.create_memory_object_stream[object](4)
    cancel = SimpleNamespace(
        message=SimpleNamespace(method="notifications/cancelled", params={"requestId": 5})
    )
    with anyio.fail_after(3):  # the grace is 30 s: only the cancellation ends it sooner
        async with answered_before_eof(transport_reads, transport_writes, grace=30) as (
            reads,
            writes,
        ):
            await client_send.send(_request(5))
            await client_send.send(cancel)
            await client_send.aclose()
            async with writes:
                assert (await reads.receive()).message.id == 5
                assert (await reads.receive()).message.method == "notifications/cancelled"
                with pytest.raises(anyio.EndOfStream):
                    await reads.receive()
