"""The MCP client against a scripted Hindsight, through httpx2.MockTransport."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import pytest
from conftest import SENTINEL_KEY, FakeClock, make_client
from fake_hindsight import ALL_TOOLS, FakeHindsight, error_result, wire_result

from goat_core.errors import NotFound, ProviderUnavailable, Rejected
from goat_hindsight.client import ALLOWED_TOOLS, REQUIRED_TOOLS, Deadlines, Limits
from goat_hindsight.errors import (
    BankNotFound,
    ForbiddenTool,
    HindsightAuthError,
    IncompatibleServer,
    MemoryNotFound,
    ProtocolViolation,
    RequestTooLarge,
    ServerUnavailable,
    ToolRejected,
    WriteOutcomeUnknown,
)

pytestmark = pytest.mark.anyio


# -- connect ---------------------------------------------------------------------------------


async def test_connect_initializes_lists_all_tool_pages_then_get_bank(clock: FakeClock) -> None:
    fake = FakeHindsight("team", page_size=4)  # 37 tools over 10 pages
    client = make_client(fake, clock)
    try:
        bank = await client.check()
        assert bank["bank_id"] == "team"
        assert fake.initializes == 1
        assert client.offered_tools == ALLOWED_TOOLS
        assert [name for name, _ in fake.calls] == ["get_bank"]
        assert (await client.call("recall", {"query": "x"}))["results"] == []
        assert fake.initializes == 1  # the connection is reused
    finally:
        await client.close()
    assert fake.sessions == set()  # the session was ended with DELETE


@pytest.mark.parametrize(
    "missing", [("reflect",), ("get_bank", "get_memory"), tuple(REQUIRED_TOOLS)]
)
async def test_server_lacking_a_required_tool_is_refused_naming_it(
    clock: FakeClock, missing: tuple[str, ...]
) -> None:
    fake = FakeHindsight("team", tools=tuple(t for t in ALL_TOOLS if t not in missing), page_size=7)
    client = make_client(fake, clock)
    try:
        with pytest.raises(IncompatibleServer) as info:
            await client.call("recall", {"query": "x"})
        for name in missing:
            assert name in str(info.value)
        assert info.value.missing == sorted(missing)
        assert info.value.exit_code == 6
        assert fake.calls == []  # nothing was called on an incompatible server
    finally:
        await client.close()


async def test_unknown_bank_is_reported_and_never_created(clock: FakeClock) -> None:
    fake = FakeHindsight("ghost", bank_exists=False)
    client = make_client(fake, clock)
    try:
        for tool, args in [
            ("retain", {"content": "x"}),
            ("reflect", {"query": "q"}),
            ("recall", {"query": "q"}),
        ]:
            with pytest.raises(BankNotFound) as info:
                await client.call(tool, args)
            assert str(info.value) == (
                "bank `ghost` not found on `https://hindsight.example` (GOAT never creates a "
                "bank: create it on the Hindsight server first, then check again)"
            )
            assert isinstance(info.value, NotFound) and info.value.exit_code == 3
        assert {name for name, _ in fake.calls} == {"get_bank"}
        assert fake.bank_exists is False
    finally:
        await client.close()


async def test_bank_deleted_after_connect_blocks_bank_creating_tools(clock: FakeClock) -> None:
    fake = FakeHindsight("team")
    client = make_client(fake, clock)
    try:
        await client.check()
        fake.bank_exists = False
        with pytest.raises(BankNotFound):
            await client.call("list_memories", {})
        with pytest.raises(BankNotFound, match="not confirmed"):
            await client.call("retain", {"content": "x"})
        assert fake.tool_calls("retain") == []
    finally:
        await client.close()


# -- the allow-list ---------------------------------------------------------------------------


@pytest.mark.parametrize("tool", [*sorted(set(ALL_TOOLS) - ALLOWED_TOOLS), "list_banks", "x"])
async def test_tools_outside_the_allow_list_are_never_sent(clock: FakeClock, tool: str) -> None:
    fake = FakeHindsight("team")
    client = make_client(fake, clock)
    try:
        with pytest.raises(ForbiddenTool) as info:
            await client.call(tool, {})
        assert info.value.exit_code == 4
        assert fake.requests == []
    finally:
        await client.close()


def test_allow_list_is_exactly_six_plus_get_operation() -> None:
    assert REQUIRED_TOOLS == {
        "retain",
        "recall",
        "reflect",
        "list_memories",
        "get_memory",
        "get_bank",
    }
    assert ALLOWED_TOOLS == REQUIRED_TOOLS | {"get_operation"}


async def test_get_operation_only_when_offered(clock: FakeClock) -> None:
    fake = FakeHindsight("team", tools=tuple(t for t in ALL_TOOLS if t != "get_operation"))
    client = make_client(fake, clock)
    try:
        with pytest.raises(ForbiddenTool):
            await client.call("get_operation", {"operation_id": "x"})
        assert fake.tool_calls("get_operation") == []
    finally:
        await client.close()


# -- results ---------------------------------------------------------------------------------


def _raw(result: dict[str, Any]) -> dict[str, Any]:
    return {"__result__": result}


BAD_RESULTS: list[tuple[str, Any, type[Exception], str]] = [
    (
        "isError",
        _raw(error_result("1 validation error for call[recall]")),
        ToolRejected,
        "Hindsight rejected `recall`: 1 validation error",
    ),
    (
        "error payload",
        {"error": "'tags' and 'tag_groups' are mutually exclusive", "results": []},
        ToolRejected,
        "mutually exclusive",
    ),
    (
        "status error",
        {"status": "error", "message": "Invalid timestamp format"},
        ToolRejected,
        "Invalid timestamp format",
    ),
    (
        "no structured content",
        _raw({"content": [{"type": "text", "text": "{}"}], "isError": False}),
        ProtocolViolation,
        "structured content",
    ),
    (
        "structured content not an object",
        _raw({"content": [], "structuredContent": [1, 2], "isError": False}),
        ProtocolViolation,
        "invalid",
    ),
    (
        "truncated text block",
        _raw(
            {
                "content": [{"type": "text", "text": '{"results":['}],
                "structuredContent": {"results": []},
                "isError": False,
            }
        ),
        ProtocolViolation,
        "not JSON (malformed or truncated)",
    ),
    (
        "text disagrees",
        _raw(
            {
                "content": [{"type": "text", "text": '{"results":[{"id":"1","text":"a"}]}'}],
                "structuredContent": {"results": []},
                "isError": False,
            }
        ),
        ProtocolViolation,
        "disagrees",
    ),
    ("wrong shape", {"results": "nope"}, ProtocolViolation, "wrong shape (results"),
    ("item without text", {"results": [{"id": "1"}]}, ProtocolViolation, "results.0.text"),
    (
        "non-text block",
        _raw(
            {
                "content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}],
                "structuredContent": {"results": []},
                "isError": False,
            }
        ),
        ProtocolViolation,
        "non-text content",
    ),
]


@pytest.mark.parametrize(
    ("case", "answer", "error", "message"), BAD_RESULTS, ids=[c[0] for c in BAD_RESULTS]
)
async def test_bad_results_are_typed_errors(
    clock: FakeClock, case: str, answer: Any, error: type[Exception], message: str
) -> None:
    fake = FakeHindsight("team")
    fake.script["recall"] = lambda args: answer
    client = make_client(fake, clock)
    try:
        with pytest.raises(error) as info:
            await client.call("recall", {"query": "q"})
        assert message in str(info.value)
        del fake.script["recall"]
        await client.call("recall", {"query": "q"})
        # a tool rejection keeps the session; a protocol failure closed it
        assert fake.initializes == (1 if error is ToolRejected else 2)
    finally:
        await client.close()


@pytest.mark.parametrize("sse", [True, False])
async def test_malformed_or_truncated_body_is_a_protocol_error(clock: FakeClock, sse: bool) -> None:
    fake = FakeHindsight("team", sse=sse)
    fake.script["recall"] = lambda args: b'{"jsonrpc": "2.0", "id": 3, "result": {"con'
    client = make_client(fake, clock)
    try:
        with pytest.raises(ProtocolViolation, match="malformed or truncated"):
            await client.call("recall", {"query": "q"})
    finally:
        await client.close()


async def test_tool_rejection_is_a_request_error_not_a_disconnect(clock: FakeClock) -> None:
    fake = FakeHindsight("team")
    fake.script["retain"] = lambda args: {"status": "error", "message": "Invalid timestamp"}
    client = make_client(fake, clock)
    try:
        with pytest.raises(ToolRejected) as info:
            await client.call("retain", {"content": "x"})
        assert isinstance(info.value, Rejected) and info.value.exit_code == 5
        assert (await client.call("get_bank"))["bank_id"] == "team"
        assert fake.initializes == 1 and clock.sleeps == []
    finally:
        await client.close()


async def test_an_unknown_memory_is_a_request_error_not_a_disconnect(clock: FakeClock) -> None:
    """``get_memory`` of an unknown id is NotFound for that request: the session stays up,
    no backoff is counted, nothing is logged as a disconnect."""
    from structlog.testing import capture_logs

    fake = FakeHindsight("team")
    fake.script["get_memory"] = lambda args: {"error": "Memory 'nope' not found"}
    client = make_client(fake, clock)
    try:
        await client.call("get_bank")
        with capture_logs() as logs, pytest.raises(MemoryNotFound) as info:
            await client.call("get_memory", {"memory_id": "nope"})
        assert info.value.exit_code == 3
        assert not [e for e in logs if e["event"] == "hindsight.disconnected"]
        assert (await client.call("get_bank"))["bank_id"] == "team"
        assert fake.initializes == 1 and client.backoff.failures == 0 and clock.sleeps == []
    finally:
        await client.close()


# -- sizes and deadlines ---------------------------------------------------------------------


async def test_request_size_is_checked_before_sending(clock: FakeClock) -> None:
    fake = FakeHindsight("team")
    client = make_client(fake, clock, limits=Limits(max_request_bytes=1000))
    try:
        with pytest.raises(RequestTooLarge, match="over the request limit of 1000 bytes"):
            await client.call("retain", {"content": "é" * 600})  # 1200 bytes in UTF-8
        assert fake.requests == []
        await client.call("retain", {"content": "é" * 400})
    finally:
        await client.close()


@pytest.mark.parametrize("sse", [True, False])
async def test_response_bodies_are_capped(clock: FakeClock, sse: bool) -> None:
    fake = FakeHindsight("team", sse=sse)
    big = [{"id": str(i), "text": "x" * 1000} for i in range(40)]
    fake.script["recall"] = lambda args: {"results": big}
    client = make_client(fake, clock, limits=Limits(max_response_bytes=20_000))
    try:
        with pytest.raises(ProtocolViolation, match="over the cap of 20000 bytes"):
            await client.call("recall", {"query": "q"})
        del fake.script["recall"]
        assert (await client.call("recall", {"query": "q"}))["results"] == []
    finally:
        await client.close()
    assert all(r.headers["accept-encoding"] == "identity" for r in fake.requests)


def _slow(fake: FakeHindsight, tool: str, seconds: float) -> httpx2.MockTransport:
    async def handler(request: httpx2.Request) -> httpx2.Response:
        if request.method == "POST":
            body = json.loads(request.content)
            if body.get("method") == "tools/call" and body["params"]["name"] == tool:
                await anyio.sleep(seconds)
        return fake(request)

    return httpx2.MockTransport(handler)


async def test_per_operation_deadline(clock: FakeClock) -> None:
    fake = FakeHindsight("team")
    deadlines = Deadlines(recall=0.2, reflect=5.0)
    client = make_client(fake, clock, deadlines=deadlines, transport=_slow(fake, "recall", 1.0))
    try:
        with pytest.raises(ServerUnavailable, match=r"deadline of 0\.2 s"):
            await client.call("recall", {"query": "q"})
        assert (await client.call("reflect", {"query": "q"}))["text"] == "mock response"
        assert fake.initializes == 1  # a deadline is a request error, the session stays
    finally:
        await client.close()
    assert deadlines.reflect > deadlines.recall


async def test_write_past_its_deadline_is_unknown_and_not_replayed(clock: FakeClock) -> None:
    fake = FakeHindsight("team")
    client = make_client(
        fake, clock, deadlines=Deadlines(retain=0.2), transport=_slow(fake, "retain", 1.0)
    )
    try:
        with pytest.raises(WriteOutcomeUnknown, match="may or may not have reached"):
            await client.call("retain", {"content": "once"})
        await client.call("recall", {"query": "q"})
        await anyio.sleep(1.0)
        assert len(fake.tool_calls("retain")) == 1
    finally:
        await client.close()


# -- auth ------------------------------------------------------------------------------------


async def test_401_is_an_auth_error_with_no_retry_until_checked(clock: FakeClock) -> None:
    fake = FakeHindsight("team", token="the-right-key")
    client = make_client(fake, clock, key="a-wrong-key")
    try:
        with pytest.raises(HindsightAuthError, match=r"refused the API key \(HTTP 401\)"):
            await client.call("recall", {"query": "q"})
        sent = len(fake.requests)
        for _ in range(3):
            with pytest.raises(HindsightAuthError):
                await client.call("recall", {"query": "q"})
        assert len(fake.requests) == sent  # blocked without contacting the server
        assert clock.sleeps == []
        with pytest.raises(HindsightAuthError):
            await client.check()  # the user checks again: one more attempt
        assert len(fake.requests) > sent
    finally:
        await client.close()


async def test_no_key_against_an_auth_server_says_a_key_is_required(clock: FakeClock) -> None:
    fake = FakeHindsight("team", token="the-right-key")
    client = make_client(fake, clock, key=None)
    try:
        with pytest.raises(HindsightAuthError, match="requires an API key"):
            await client.check()
        assert all("authorization" not in r.headers for r in fake.requests)
    finally:
        await client.close()


async def test_right_key_is_sent_as_bearer(clock: FakeClock) -> None:
    fake = FakeHindsight("team", token=SENTINEL_KEY)
    client = make_client(fake, clock)
    try:
        await client.call("recall", {"query": "q"})
        assert {r.headers["authorization"] for r in fake.requests} == {f"Bearer {SENTINEL_KEY}"}
    finally:
        await client.close()


async def test_401_mid_session_on_a_write_is_auth_not_unknown(clock: FakeClock) -> None:
    fake = FakeHindsight("team")
    client = make_client(fake, clock)
    try:
        await client.check()
        fake.script["retain"] = lambda args: httpx2.Response(
            401, json={"error": "Invalid authentication token"}
        )
        with pytest.raises(HindsightAuthError):
            await client.call("retain", {"content": "x"})
    finally:
        await client.close()


# -- session loss, transport failure, backoff ------------------------------------------------


@pytest.mark.parametrize("tool", ["recall", "retain"])
async def test_session_lost_reinitializes_once_and_resends(clock: FakeClock, tool: str) -> None:
    fake = FakeHindsight("team")
    client = make_client(fake, clock)
    args = {"query": "q"} if tool == "recall" else {"content": "after restart"}
    try:
        await client.check()
        fake.restart()
        await client.call(tool, args)
        assert fake.initializes == 2
        assert len(fake.tool_calls(tool)) == 1  # the lost request was never executed
        assert clock.sleeps == []
    finally:
        await client.close()


async def test_transport_failure_reconnects_with_jittered_exponential_backoff(
    clock: FakeClock,
) -> None:
    fake = FakeHindsight("team")
    client = make_client(fake, clock)
    try:
        await client.check()
        fake.down = True
        for _ in range(4):
            with pytest.raises(ServerUnavailable, match="cannot reach"):
                await client.call("recall", {"query": "q"})
        # no wait before the first reconnect attempt after a live failure's backoff of 0.25
        assert len(clock.sleeps) == 3
        for sleep, base in zip(clock.sleeps, (0.25, 0.5, 1.0), strict=True):
            assert base * 0.8 <= sleep <= base * 1.2
        assert (
            len({round(s / b, 6) for s, b in zip(clock.sleeps, (0.25, 0.5, 1.0), strict=True)}) > 1
        )
        fake.down = False
        banks_before = len(fake.tool_calls("get_bank"))
        await client.call("recall", {"query": "q"})
        assert len(fake.tool_calls("get_bank")) == banks_before + 1  # revalidated
        assert client.backoff.failures == 0
    finally:
        await client.close()


async def test_a_write_that_may_have_reached_the_tool_is_never_replayed(clock: FakeClock) -> None:
    fake = FakeHindsight("team")

    def reached_then_broke(args: dict[str, Any]) -> Any:
        fake.add_memory(args["content"])
        return httpx2.RemoteProtocolError("peer closed connection without a full response")

    fake.script["retain"] = reached_then_broke
    client = make_client(fake, clock)
    try:
        with pytest.raises(WriteOutcomeUnknown) as info:
            await client.call("retain", {"content": "maybe stored"})
        assert isinstance(info.value, ProviderUnavailable)
        del fake.script["retain"]
        await client.call("recall", {"query": "q"})
        assert len(fake.tool_calls("retain")) == 1
        assert fake.initializes == 2
    finally:
        await client.close()


async def test_transport_crash_is_an_error_for_the_caller_not_a_cancellation(
    clock: FakeClock,
) -> None:
    fake = FakeHindsight("team")
    fake.script["recall"] = lambda args: httpx2.ReadError("connection reset")
    client = make_client(fake, clock)
    try:
        with pytest.raises(ServerUnavailable):
            await client.call("recall", {"query": "q"})
    finally:
        await client.close()


async def test_a_cancelled_caller_does_not_tear_down_the_session(clock: FakeClock) -> None:
    fake = FakeHindsight("team")
    client = make_client(fake, clock, transport=_slow(fake, "reflect", 0.5))
    try:
        await client.check()
        with anyio.move_on_after(0.1):
            await client.call("reflect", {"query": "slow"})
        assert (await client.call("recall", {"query": "q"}))["results"] == []
        assert fake.initializes == 1
    finally:
        await client.close()


async def test_concurrent_calls_share_one_connection(clock: FakeClock) -> None:
    fake = FakeHindsight("team")
    client = make_client(fake, clock)
    results: list[dict[str, Any]] = []

    async def one(i: int) -> None:
        results.append(await client.call("retain", {"content": f"note {i}"}))

    try:
        async with anyio.create_task_group() as tg:
            for i in range(10):
                tg.start_soon(one, i)
        assert len(results) == 10 and fake.initializes == 1
        assert len(fake.memories) == 10
    finally:
        await client.close()


async def test_closed_client_refuses_calls(clock: FakeClock) -> None:
    fake = FakeHindsight("team")
    client = make_client(fake, clock)
    await client.check()
    await client.close()
    await client.close()
    with pytest.raises(ServerUnavailable, match="closed"):
        await client.call("recall", {"query": "q"})


def test_wire_result_matches_the_recorded_shape() -> None:
    # probe-out-chunks/calls.json: compact JSON text + the same object as structuredContent
    assert wire_result({"a": 1}) == {
        "content": [{"type": "text", "text": '{"a":1}'}],
        "structuredContent": {"a": 1},
        "isError": False,
    }
