"""GOAT operations mapped onto Hindsight tools, against the scripted server."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import SENTINEL_KEY, SERVER, make_context
from fake_hindsight import ALL_TOOLS, FakeHindsight

from goat_core.contract import MemoryWrite, Receipt, ReceiptStatus, Scope, ScopeKind, Tone
from goat_core.errors import BadInput, NotFound, NotSupported, ProviderUnavailable, TooLarge
from goat_core.host import GoatHome
from goat_hindsight.errors import BankNotFound, HindsightAuthError
from goat_hindsight.plugin import spec
from goat_hindsight.provider import DEFAULT_MAX_TOKENS, RECALL_EFFORT, HindsightProvider

pytestmark = pytest.mark.anyio
Make = Callable[..., HindsightProvider]


async def test_remember_is_a_queued_retain_with_content_and_context_only(
    make_provider: Make, fake: FakeHindsight
) -> None:
    provider = make_provider(fake)
    receipt = await provider.remember(
        MemoryWrite(text="Alice likes tea", title="Tea", source="cli", tags=("pen-x", "x"))
    )
    assert receipt.status is ReceiptStatus.QUEUED and receipt.operation_id
    assert receipt.scope == "global"
    ((_, args),) = fake.tool_calls("retain")
    assert args == {"content": "Alice likes tea", "context": "remember; title: Tea"}
    feedback = await provider.feedback(MemoryWrite(kind="feedback", text="good", on="page-1"))
    assert feedback.status is ReceiptStatus.QUEUED
    assert fake.tool_calls("retain")[1][1] == {"content": "good", "context": "feedback; on: page-1"}


async def test_remember_normalises_to_nfc(make_provider: Make, fake: FakeHindsight) -> None:
    provider = make_provider(fake)
    await provider.remember(MemoryWrite(text="cafe\u0301"))
    assert fake.tool_calls("retain")[0][1]["content"] == "caf\u00e9"


async def test_oversized_text_is_refused_before_sending(
    make_provider: Make, fake: FakeHindsight
) -> None:
    provider = make_provider(fake)
    with pytest.raises(TooLarge, match="over the limit of 100000"):
        await provider.remember(MemoryWrite(text="x" * 100_001))
    assert fake.requests == []


async def test_rejected_retain_is_a_rejected_receipt(
    make_provider: Make, fake: FakeHindsight
) -> None:
    fake.script["retain"] = lambda args: {"status": "error", "message": "Invalid content"}
    receipt = await make_provider(fake).remember(MemoryWrite(text="x"))
    assert receipt.status is ReceiptStatus.REJECTED
    assert receipt.reason == "Invalid content"


async def test_uncertain_write_is_an_unknown_receipt(
    make_provider: Make, fake: FakeHindsight
) -> None:
    import httpx2

    fake.script["retain"] = lambda args: httpx2.RemoteProtocolError("cut short")
    receipt = await make_provider(fake).remember(MemoryWrite(text="x"))
    assert receipt.status is ReceiptStatus.UNKNOWN
    assert "may or may not have reached" in (receipt.reason or "")


async def test_remember_on_unknown_bank_raises_and_creates_nothing(make_provider: Make) -> None:
    fake = FakeHindsight("ghost", bank_exists=False)
    with pytest.raises(
        BankNotFound, match=r"bank `ghost` not found on `https://hindsight\.example`"
    ):
        await make_provider(fake).remember(MemoryWrite(text="x"))
    assert fake.bank_exists is False and fake.tool_calls("retain") == []


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("completed", ReceiptStatus.STORED),
        ("failed", ReceiptStatus.FAILED),
        ("pending", ReceiptStatus.QUEUED),
    ],
)
async def test_refresh_uses_get_operation(
    make_provider: Make, fake: FakeHindsight, status: str, expected: ReceiptStatus
) -> None:
    provider = make_provider(fake)
    receipt = await provider.remember(MemoryWrite(text="x"))
    assert receipt.operation_id is not None
    fake.operations[receipt.operation_id] = status
    refreshed = await provider.refresh(receipt)
    assert refreshed.status is expected and refreshed.operation_id == receipt.operation_id
    if expected is ReceiptStatus.FAILED:
        assert refreshed.reason


async def test_refresh_of_an_unknown_operation_is_not_found(
    make_provider: Make, fake: FakeHindsight
) -> None:
    """A mistyped or foreign operation id is NotFound (exit 3), never "still queued"."""
    provider = make_provider(fake)
    await provider.remember(MemoryWrite(text="x"))
    unknown = Receipt(
        status=ReceiptStatus.QUEUED,
        operation_id="00000000-0000-4000-8000-000000000000",
        scope="global",
    )
    with pytest.raises(NotFound, match="operation `00000000-0000-4000-8000-000000000000` not"):
        await provider.refresh(unknown)
    fake.script["get_operation"] = lambda args: {"error": "Operation not found"}
    with pytest.raises(NotFound):
        await provider.refresh(unknown)


async def test_refresh_without_get_operation_leaves_the_receipt(make_provider: Make) -> None:
    fake = FakeHindsight("team", tools=tuple(t for t in ALL_TOOLS if t != "get_operation"))
    provider = make_provider(fake)
    receipt = await provider.remember(MemoryWrite(text="x"))
    assert await provider.refresh(receipt) == receipt
    assert fake.tool_calls("get_operation") == []


async def test_recall_maps_budget_effort_scores_and_floor(
    make_provider: Make, fake: FakeHindsight
) -> None:
    for i in range(5):
        fake.add_memory(f"tea note {i}\nsecond line")
    provider = make_provider(fake, min_score=0.75)
    result = await provider.recall("tea", limit=2)
    assert fake.tool_calls("recall")[0][1] == {
        "query": "tea",
        "max_tokens": DEFAULT_MAX_TOKENS,
        "budget": RECALL_EFFORT,
    }
    assert [i.score for i in result.items] == [1.0, 0.9]
    assert (
        result.items[0].title == "tea note 4" and result.items[0].text == "tea note 4\nsecond line"
    )
    assert result.complete and result.scope == "global"
    floored = await provider.recall("tea", limit=10, max_tokens=512)
    assert fake.tool_calls("recall")[1][1]["max_tokens"] == 512
    assert [round(i.score, 2) for i in floored.items] == [1.0, 0.9, 0.8]  # 0.7 and 0.6 < floor


@pytest.mark.parametrize(
    ("query", "kwargs"),
    [("", {}), ("q", {"limit": 0}), ("q", {"limit": 101}), ("q", {"max_tokens": 0})],
)
async def test_recall_bad_input(
    make_provider: Make, fake: FakeHindsight, query: str, kwargs: dict[str, Any]
) -> None:
    with pytest.raises(BadInput):
        await make_provider(fake).recall(query, **kwargs)
    assert fake.requests == []


async def test_reflect(make_provider: Make, fake: FakeHindsight) -> None:
    reflection = await make_provider(fake, scope=Scope.pen("proj")).reflect("what?")
    assert reflection.text == "mock response" and reflection.scope == "pen:proj"
    assert fake.tool_calls("reflect")[0][1] == {"query": "what?", "budget": "low"}


async def test_pages_walk_all_memories_deduplicated(
    make_provider: Make, fake: FakeHindsight
) -> None:
    ids = [fake.add_memory(f"memory {i}") for i in range(7)]
    provider = make_provider(fake)
    first = await provider.list_pages(limit=3)
    assert len(first.items) == 3 and first.next_cursor and not first.complete
    fake.add_memory("a new memory shifts every offset by one")
    second = await provider.list_pages(limit=3, cursor=first.next_cursor)
    # the item pushed from page one onto page two is not listed twice
    assert not {p.id for p in first.items} & {p.id for p in second.items}
    assert second.degraded and "total 7 -> 8" in second.degraded[0]
    seen = [p.id for p in first.items + second.items]
    cursor = second.next_cursor
    while cursor:
        page = await provider.list_pages(limit=3, cursor=cursor)
        seen += [p.id for p in page.items]
        cursor = page.next_cursor
    assert len(seen) == len(set(seen))
    assert set(ids) <= set(seen)
    assert not page.complete and page.degraded  # the walk saw the bank change


async def test_pages_complete_when_the_bank_is_stable(
    make_provider: Make, fake: FakeHindsight
) -> None:
    for i in range(4):
        fake.add_memory(f"m {i}")
    provider = make_provider(fake)
    page = await provider.list_pages(limit=2)
    last = await provider.list_pages(limit=2, cursor=page.next_cursor)
    assert last.next_cursor is None and last.complete and not last.degraded
    assert fake.tool_calls("list_memories")[1][1] == {"offset": 2, "limit": 2}


@pytest.mark.parametrize("cursor", ["", "!!!", "eyJvIjotMX0", "bm90IGpzb24"])
async def test_bad_cursor(make_provider: Make, fake: FakeHindsight, cursor: str) -> None:
    with pytest.raises(BadInput, match="invalid page cursor"):
        await make_provider(fake).list_pages(cursor=cursor)


async def test_get_page_and_not_found(make_provider: Make, fake: FakeHindsight) -> None:
    mid = fake.add_memory("Bob works on Apollo.\nIn Berlin.", context="probe")
    provider = make_provider(fake)
    page = await provider.get_page(mid)
    assert page.id == mid and page.title == "Bob works on Apollo." and page.body.endswith("Berlin.")
    assert page.frontmatter["context"] == "probe"
    summary = (await provider.list_pages()).items[0]
    assert summary.title == page.title
    for ref in ["94597dce-431f-4867-80aa-ad1db097df16", "not-a-uuid", "Bob works on Apollo."]:
        with pytest.raises(NotFound, match="shown by its id, as `goat pages` lists them"):
            await provider.get_page(ref)


async def test_map_is_not_supported(make_provider: Make, fake: FakeHindsight) -> None:
    provider = make_provider(fake)
    for call in (provider.link_map(), provider.connections("x"), provider.forget("x")):
        with pytest.raises(NotSupported) as info:
            await call
        assert info.value.exit_code == 4


async def test_labels_are_the_shared_bank_whatever_the_scope(
    make_provider: Make, fake: FakeHindsight
) -> None:
    labels = {make_provider(fake, scope=s).label() for s in (Scope.global_(), Scope.pen("a"))}
    assert labels == {"shared bank `team` on `https://hindsight.example`"}


async def test_check_health(make_provider: Make, fake: FakeHindsight) -> None:
    health = await make_provider(fake).check()
    assert health.ok and health.tone is Tone.QUIET
    assert health.reason == "shared bank `team` on `https://hindsight.example` reached"
    anonymous = await make_provider(fake, key=None).check()
    assert anonymous.reason.endswith("reached without authentication")
    missing = await make_provider(FakeHindsight("ghost", bank_exists=False)).check()
    assert not missing.ok and "bank `ghost` not found" in missing.reason
    assert missing.cause == "not_found"


async def test_check_names_the_cause_for_the_supervisor(make_provider: Make) -> None:
    """The connection supervisor retries ``unreachable`` but waits on ``auth`` for a
    configuration change or an explicit check, so each failure must say which it is."""
    auth = await make_provider(FakeHindsight("team", token="right"), key="wrong").check()
    assert (auth.ok, auth.cause) == (False, "auth")
    few = FakeHindsight("team", tools=("retain", "recall", "get_bank"))
    tools = await make_provider(few).check()
    assert (tools.ok, tools.cause) == (False, "incompatible")
    down = FakeHindsight("team")
    down.down = True
    unreachable = await make_provider(down).check()
    assert (unreachable.ok, unreachable.cause) == (False, "unreachable")


async def test_check_reports_auth_failure_and_requests_after_it_are_blocked(
    make_provider: Make,
) -> None:
    fake = FakeHindsight("team", token="right")
    provider = make_provider(fake, key="wrong-key-value", scope=Scope.pen("ops"))
    health = await provider.check()
    assert not health.ok and "HTTP 401" in health.reason
    # the fix names the commands for this scope, never the key itself
    env = provider.context.binding.credential_env_var
    assert (
        f"store the right one with `goat bind --pen ops hindsight --set base_url={SERVER} "
        f"--set bank_id=team --credential-stdin` (or set {env}), then `goat check --pen ops`"
    ) in health.reason
    assert "wrong-key-value" not in health.reason
    with pytest.raises(HindsightAuthError):
        await provider.recall("q")


def test_forged_scope_is_bad_input(tmp_path: Path) -> None:
    forged = Scope.model_construct(kind=ScopeKind.PEN, pen_id="../escape")
    with pytest.raises(BadInput):
        spec().factory(make_context(GoatHome.at(tmp_path), scope=forged))


async def test_without_a_guarded_http_client_nothing_connects(tmp_path: Path) -> None:
    provider = spec().factory(make_context(GoatHome.at(tmp_path), http_client=None))
    with pytest.raises(ProviderUnavailable, match="egress-guarded"):
        await provider.recall("q")
    health = await provider.check()
    assert not health.ok


def test_fingerprint_digests_server_bank_and_credential(tmp_path: Path) -> None:
    home = GoatHome.at(tmp_path)

    def fp(bank: str = "team", key: str | None = SENTINEL_KEY) -> str:
        digest = spec().factory(make_context(home, bank=bank, key=key)).transport_fingerprint()
        assert digest is not None
        return digest

    assert fp() == fp()
    assert len({fp(), fp(bank="other"), fp(key="another"), fp(key=None)}) == 4
    assert SENTINEL_KEY not in fp()
