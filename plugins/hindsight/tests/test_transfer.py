"""Copies and imports into a Hindsight bank (the ``import_pages`` operation) against the
fake: only ``content`` and ``context`` are sent, the ledger makes a second import add
nothing, and an ``unknown`` outcome is never resent without ``resend_unknown``."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fake_hindsight import FakeHindsight

from goat_core.contract import (
    IMPORT_OPERATION,
    MemoryWrite,
    Scope,
    TransferOutcome,
    TransferPage,
)
from goat_core.errors import Rejected
from goat_hindsight.provider import HindsightProvider
from goat_hindsight.transfer import LEDGER_FOLDER

Make = Callable[..., HindsightProvider]

pytestmark = pytest.mark.anyio


class Gate:
    """A policy gate for one call: records what passed ``inspect`` and refuses texts
    containing ``refuse``."""

    def __init__(self, refuse: str | None = None) -> None:
        self.inspected: list[str] = []
        self.refuse = refuse

    scope = Scope.global_()
    label = "test"

    def inspect(self, write: MemoryWrite) -> MemoryWrite:
        if self.refuse and self.refuse in write.text:
            raise Rejected("no secrets")
        self.inspected.append(write.text)
        return write


def pages(*bodies: str) -> list[TransferPage]:
    import hashlib

    out = []
    for n, body in enumerate(bodies):
        text = f"---\ntype: note\ntitle: Page {n}\n---\n{body}"
        digest = hashlib.sha256(text.encode()).hexdigest()
        out.append(
            TransferPage(
                path=f"folder/Page {n}.md",
                title=f"Page {n}",
                frontmatter={"type": "note", "title": f"Page {n}"},
                body=body,
                sha256=digest,
                provenance_key="imported_from",
                provenance={
                    "scope": "pen:secret-pen",
                    "provider": "markdown",
                    "id": f"folder/Page {n}.md",
                    "sha256": digest,
                    "at": "2026-01-01T00:00:00Z",
                },
                text=text,
            )
        )
    return out


async def run(
    provider: HindsightProvider, gate: Gate, items: Sequence[TransferPage], **kw: Any
) -> list[Any]:
    (op,) = [o for o in provider.operations() if o.name == IMPORT_OPERATION]
    assert op.access.value == "write"
    return list(await op.handler(gate, items, **kw))


async def test_import_retains_content_and_context_only_and_is_idempotent(
    make_provider: Make, fake: FakeHindsight, tmp_path: Path
) -> None:
    provider = make_provider(fake)
    batch = pages("Bob keeps his bicycle in the shed.", "We ship on Thursdays.")
    result = await run(provider, Gate(), batch)
    assert [i.outcome for i in result] == [TransferOutcome.QUEUED] * 2
    assert all(i.receipt is not None and i.receipt.operation_id for i in result)
    retains = fake.tool_calls("retain")
    assert len(retains) == 2
    for (_, args), page in zip(retains, batch, strict=True):
        assert set(args) == {"content", "context"}
        assert args["content"] == page.body
        assert "imported" in args["context"] and page.sha256 in args["context"]
        assert "provider=markdown" in args["context"]
        assert "secret-pen" not in json.dumps(args)  # never the source Pen id
    again = await run(provider, Gate(), batch)
    assert [i.outcome for i in again] == [TransferOutcome.DUPLICATE] * 2
    assert len(fake.tool_calls("retain")) == 2
    ledgers = list((tmp_path / "goat-home" / "data" / LEDGER_FOLDER).glob("*.json"))
    assert len(ledgers) == 1
    data = json.loads(ledgers[0].read_text())
    assert data["bank"] == "team" and set(data["entries"]) == {p.sha256 for p in batch}


async def test_dry_run_and_policy_refusal_send_nothing(
    make_provider: Make, fake: FakeHindsight
) -> None:
    provider = make_provider(fake)
    batch = pages("a plain note", "password: hunter2")
    planned = await run(provider, Gate(), batch, dry_run=True)
    assert [i.outcome for i in planned] == [TransferOutcome.PLANNED] * 2
    assert fake.tool_calls("retain") == []
    result = await run(provider, Gate(refuse="password"), batch)
    assert [i.outcome for i in result] == [TransferOutcome.QUEUED, TransferOutcome.REJECTED]
    assert [a["content"] for _, a in fake.tool_calls("retain")] == ["a plain note"]


async def test_unknown_outcome_is_never_resent_without_asking(
    make_provider: Make, fake: FakeHindsight
) -> None:
    provider = make_provider(fake)
    batch = pages("an uncertain write")
    fake.script["retain"] = lambda args: httpx2.RemoteProtocolError("cut short")
    first = await run(provider, Gate(), batch)
    assert first[0].outcome is TransferOutcome.UNKNOWN
    del fake.script["retain"]
    sent = len(fake.tool_calls("retain"))
    second = await run(provider, Gate(), batch)
    assert second[0].outcome is TransferOutcome.SKIPPED_UNKNOWN
    assert "--resend-unknown" in (second[0].reason or "")
    assert len(fake.tool_calls("retain")) == sent
    third = await run(provider, Gate(), batch, resend_unknown=True)
    assert third[0].outcome is TransferOutcome.QUEUED
    assert len(fake.tool_calls("retain")) == sent + 1
    fourth = await run(provider, Gate(), batch, resend_unknown=True)
    assert fourth[0].outcome is TransferOutcome.DUPLICATE


async def test_a_retain_cut_after_two_pages_is_unknown_and_the_rerun_is_truthful(
    make_provider: Make, fake: FakeHindsight
) -> None:
    """The connection fails under the third of four retains: that page's receipt is
    ``unknown`` (it may have reached the bank) and the ledger says so, the others are
    ``queued``; the next import sends nothing again (three duplicates, the uncertain one
    ``skipped-unknown``) and only ``--resend-unknown`` sends it."""
    import uuid

    provider = make_provider(fake)
    batch = pages("first", "second", "third", "fourth")
    sent: list[str] = []

    def cut_third(args: dict[str, Any]) -> Any:
        sent.append(args["content"])
        if len(sent) == 3:
            return httpx2.ConnectError("connection reset")
        return {"status": "accepted", "message": "ok", "operation_id": str(uuid.uuid4())}

    fake.script["retain"] = cut_third
    first = await run(provider, Gate(), batch)
    assert [i.outcome.value for i in first] == ["queued", "queued", "unknown", "queued"]
    assert first[2].receipt is not None and first[2].receipt.status.value == "unknown"
    again = await run(provider, Gate(), batch)
    assert [i.outcome.value for i in again] == [
        "duplicate",
        "duplicate",
        "skipped-unknown",
        "duplicate",
    ]
    assert sent == ["first", "second", "third", "fourth"]
    resent = await run(provider, Gate(), batch, resend_unknown=True)
    assert [i.outcome.value for i in resent] == ["duplicate", "duplicate", "queued", "duplicate"]
    assert sent == ["first", "second", "third", "fourth", "third"]
