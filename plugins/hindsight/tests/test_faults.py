"""The suite's fault-injection tests against goat-hindsight, through its transport seam.

The provider talks to the scripted fake server (``fake_hindsight``) through a transport that
fails the next retain before it is sent, loses the answer after it was sent, or drops the
connection in the middle of the retain (the requests before it answered, every request after
it dropped). No live server is needed, so this runs in every CI run.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
import pytest
from conftest import FakeClock, make_context
from fake_hindsight import FakeHindsight

from goat_core.contract import Provider, Scope
from goat_core.host import GoatHome
from goat_core.testing import Fault, FaultInjectionTests, FaultInjector
from goat_core.testing.conformance import ProviderFactory
from goat_hindsight.client import Backoff, Deadlines
from goat_hindsight.plugin import spec
from goat_hindsight.provider import HindsightProvider


class FaultyTransport(httpx2.AsyncBaseTransport):
    """Wraps the fake server's transport; :attr:`fault` says what the next request meets."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, faults: TransportFaults) -> None:
        self.inner = inner
        self.faults = faults
        self.fault: Fault | None = None
        self.dropped = False  # the drop cut a retain: the connection stays broken

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        fault = self.fault
        is_write = request.method == "POST" and b'"retain"' in request.content
        if fault is Fault.DROP_CONNECTION and request.method == "POST":
            if is_write and not self.dropped:  # the write's own request, cut part-way
                self.dropped = True
                self.faults.dropped_writes += 1
            if self.dropped:
                raise httpx2.RemoteProtocolError("peer closed the connection mid-request")
        if fault is Fault.WRITE_BEFORE_SEND and is_write:
            self.fault = None
            raise httpx2.ConnectError("connection refused (injected before sending)")
        response = await self.inner.handle_async_request(request)
        if fault is Fault.WRITE_AFTER_SEND and is_write:
            self.fault = None
            await response.aread()
            raise httpx2.ReadTimeout("the answer was lost after sending (injected)")
        return response


class TransportFaults(FaultInjector):
    kinds = frozenset({Fault.WRITE_BEFORE_SEND, Fault.WRITE_AFTER_SEND, Fault.DROP_CONNECTION})

    def __init__(self) -> None:
        self.transports: list[FaultyTransport] = []

    @contextmanager
    def inject(self, fault: Fault, provider: Provider) -> Iterator[None]:
        for transport in self.transports:
            transport.fault, transport.dropped = fault, False
        try:
            yield
        finally:
            for transport in self.transports:
                transport.fault, transport.dropped = None, False


class TestHindsightFaults(FaultInjectionTests):
    entry_point_name = provider_name = "hindsight"
    eventual_timeout = 10.0
    poll_interval = 0.05

    @pytest.fixture
    def goat_faults(self) -> TransportFaults:
        return TransportFaults()

    @pytest.fixture
    def goat_provider_factory(
        self, tmp_path: Path, goat_faults: TransportFaults
    ) -> ProviderFactory:
        fake = FakeHindsight("team")
        home = GoatHome.at(tmp_path / "goat-home")
        clock = FakeClock()

        async def make(scope: Scope) -> Provider:
            transport = FaultyTransport(httpx2.MockTransport(fake), goat_faults)
            goat_faults.transports.append(transport)
            return HindsightProvider(
                make_context(home, bank=fake.bank_id, scope=scope),
                spec=spec(),
                transport=transport,
                backoff=Backoff(rng=random.Random(7), clock=clock),
                sleep=clock.sleep,
                deadlines=Deadlines(),
            )

        return make
