"""Export from and import into a real Hindsight 1.1.0 server (live; docs/design.md, Copy,
export and import), with at most 10 pages (retains are slow): a markdown Pen's pages are
exported, imported into a shared bank as queued retains of content and context only,
importing again sends nothing; once retained, the bank exports as one page per memory,
read with list_memories and get_memory only, and that bundle imports back into markdown."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from live_server import LiveServer

from goat_core.contract import ReceiptStatus, Scope, TransferOutcome
from goat_core.host import Chat, GoatHome, MemoryHost
from goat_core.plugins import PluginSettings, Registry

pytestmark = [pytest.mark.live, pytest.mark.anyio]

NOTES = {
    "Ferns.md": "zqexp Carol waters the ferns every Tuesday morning.",
    "Bikes/Shed.md": "zqexp Bob keeps his bicycle in the blue shed behind the library.",
    "Release.md": "zqexp The team ships the mobile app on Thursdays after review.",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[MemoryHost]:
    registry = Registry.load(PluginSettings(load=("hindsight", "markdown"), strict=True))
    async with MemoryHost(home=GoatHome.at(tmp_path / "goat-home"), registry=registry) as h:
        yield h


def memory_count(live_server: LiveServer, bank: str) -> int:
    response = httpx2.get(
        f"{live_server.url}/v1/default/banks/{bank}/memories/list",
        params={"limit": 100},
        timeout=30,
    )
    response.raise_for_status()
    total = response.json()["total"]
    assert isinstance(total, int)
    return total


async def test_export_to_and_import_from_a_real_bank(
    tmp_path: Path, host: MemoryHost, live_server: LiveServer
) -> None:
    notes = tmp_path / "notes"
    for rel, text in NOTES.items():
        (notes / rel).parent.mkdir(parents=True, exist_ok=True)
        (notes / rel).write_text(f"---\ntitle: {Path(rel).stem}\n---\n{text}\n")
    bank = live_server.create_bank("goat-transfer")
    await host.bind(Scope.pen("notes"), "markdown", {"root": str(notes)})
    await host.bind(Scope.pen("team"), "hindsight", {"base_url": live_server.url, "bank_id": bank})
    await host.bind(Scope.pen("back"), "markdown", {})

    bundle = tmp_path / "bundle"
    exported = await host.export_bundle(Scope.pen("notes"), bundle)
    assert len(exported.items) == len(NOTES) <= 10

    imported = await host.import_bundle(bundle, Scope.pen("team"))
    assert [i.outcome for i in imported.items] == [TransferOutcome.QUEUED] * len(NOTES)
    receipts = [i.receipt for i in imported.items]
    assert all(r is not None and r.operation_id for r in receipts)

    again = await host.import_bundle(bundle, Scope.pen("team"))
    assert {i.outcome for i in again.items} == {TransferOutcome.DUPLICATE}

    team = host.context_for(Chat("team"))
    deadline = time.monotonic() + 180
    for receipt in receipts:
        assert receipt is not None
        while (await team.refresh(receipt)).status is ReceiptStatus.QUEUED:
            assert time.monotonic() < deadline, "retains did not complete within 3 minutes"
            await anyio.sleep(1.0)
        assert (await team.refresh(receipt)).status is ReceiptStatus.STORED
    stored = memory_count(live_server, bank)
    assert stored >= 1  # Hindsight extracts facts: at least one memory per bank

    out = tmp_path / "from-bank"
    from_bank = await host.export_bundle(Scope.pen("team"), out)
    assert from_bank.complete and len(from_bank.items) == stored
    manifest = json.loads((out / "goat-export.json").read_text())
    assert manifest["source"]["provider"] == "hindsight"
    assert manifest["counts"]["pages"] == stored
    files = sorted(out.rglob("*.md"))
    assert len(files) == stored
    text = "\n".join(f.read_text() for f in files)
    assert "type:" in text and ("Carol" in text or "Bob" in text or "ships" in text)

    back = await host.import_bundle(out, Scope.pen("back"))
    assert back.summary["copied"] == stored
    pages = await host.context_for(Chat("back")).list_pages(limit=100)
    page: Any = await host.context_for(Chat("back")).get_page(pages.items[0].id)
    assert page.frontmatter["imported_from"]["provider"] == "hindsight"
    assert memory_count(live_server, bank) == stored  # exporting wrote nothing to the bank
