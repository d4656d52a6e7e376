"""The API key never leaves the Authorization header (docs/design.md, Credentials and
egress), with a sentinel key: not in logs (structlog and every stdlib logger at DEBUG),
exceptions, reprs, receipts, JSON output, tool arguments or request bodies."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import httpx2
import pytest
import structlog
from conftest import SENTINEL_KEY
from fake_hindsight import FakeHindsight

from goat_core.contract import MemoryWrite
from goat_core.errors import GoatError
from goat_hindsight.provider import HindsightProvider

pytestmark = pytest.mark.anyio
Make = Callable[..., HindsightProvider]


async def _exercise(provider: HindsightProvider, fake: FakeHindsight) -> list[Any]:
    """Every kind of outcome: success, rejection, protocol error, transport crash, 401."""
    seen: list[Any] = [provider, provider.context, provider.client]
    seen.append(await provider.check())
    receipt = await provider.remember(MemoryWrite(text="remember me", source="test"))
    seen += [receipt, receipt.to_json(), await provider.refresh(receipt)]
    result = await provider.recall("remember")
    seen += [result, result.to_json()]
    pages = await provider.list_pages()
    seen += [pages, pages.to_json(), (await provider.reflect("q")).to_json()]
    seen.append(await provider.get_page(pages.items[0].id))
    fake.script["recall"] = lambda args: {"error": "boom"}
    fake.script["list_memories"] = lambda args: b"{truncated"
    fake.script["retain"] = lambda args: httpx2.RemoteProtocolError("cut")
    for op in (provider.recall("q"), provider.list_pages()):
        try:
            await op
        except GoatError as exc:
            seen.append(exc)
    seen.append(await provider.remember(MemoryWrite(text="maybe")))
    fake.script.clear()
    fake.token = "a-different-key"  # the sentinel is now the wrong key
    fake.restart()
    for _ in range(2):
        try:
            await provider.recall("q")
        except GoatError as exc:
            seen.append(exc)
    seen.append(await provider.check())
    return seen


def _texts(obj: Any) -> list[str]:
    out = [repr(obj), str(obj)]
    if isinstance(obj, GoatError):
        out += [repr(obj.details), str(obj.args), repr(obj.__cause__), repr(obj.__context__)]
    if hasattr(obj, "model_dump"):
        out.append(json.dumps(obj.model_dump(mode="json"), default=str))
    return out


async def test_sentinel_key_appears_only_in_the_authorization_header(
    make_provider: Make, fake: FakeHindsight, caplog: pytest.LogCaptureFixture
) -> None:
    fake.token = SENTINEL_KEY
    provider = make_provider(fake)
    caplog.set_level(logging.DEBUG)
    for name in ("mcp", "httpx2", "httpcore2", "goat_hindsight"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    with structlog.testing.capture_logs() as events:
        seen = await _exercise(provider, fake)
    errors = [o for o in seen if isinstance(o, GoatError)]
    assert len(errors) >= 4  # rejection, protocol error, two auth errors
    for obj in seen:
        for text in _texts(obj):
            assert SENTINEL_KEY not in text, f"key leaked via {type(obj).__name__}: {text[:200]}"
    assert events, "the client logs its connections"
    assert SENTINEL_KEY not in json.dumps(events, default=repr)
    assert caplog.records and SENTINEL_KEY not in caplog.text
    for record in caplog.records:
        assert SENTINEL_KEY not in record.getMessage()
    for name, args in fake.calls:
        assert SENTINEL_KEY not in json.dumps(args), f"key in the arguments of {name}"
    for request in fake.requests:
        assert SENTINEL_KEY not in request.content.decode()
        assert SENTINEL_KEY not in str(request.url)
        for header, value in request.headers.items():
            if header != "authorization":
                assert SENTINEL_KEY not in value
    assert any(r.headers.get("authorization") == f"Bearer {SENTINEL_KEY}" for r in fake.requests)
    assert SENTINEL_KEY not in provider.transport_fingerprint()
