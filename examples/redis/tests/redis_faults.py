"""The fault fixture: break the real connection on cue, or make the real server refuse writes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from goat_core import ProviderUnavailable
from goat_core.testing import Fault, FaultInjector
from goat_redis import provider as provider_module
from goat_redis.client import ConnectionLost, Transport

_WRITES = (provider_module._WRITE, provider_module._FORGET)
# Server-side faults: the real server refuses the write (-OOM, -NOREPLICAS) while it is set.
_SERVER_FAULTS = {
    Fault.DISK_FULL: ("maxmemory", "1", "0"),
    Fault.READ_ONLY: ("min-replicas-to-write", "1", "0"),
}


class FaultyTransport:
    """Stands in for a provider's transport and breaks the real connection on cue."""

    def __init__(self, real: Transport, fault: Fault, faults: RedisFaults) -> None:
        self.real, self.fault, self.url, self.faults = real, fault, real.url, faults
        self.dropped = False  # DROP_CONNECTION cut the write: every later request drops

    async def call(self, *args: Any) -> Any:
        is_write = args[0] == "EVAL" and args[1] in _WRITES
        fault = self.fault
        if is_write and fault in _SERVER_FAULTS:
            name, value, normal = _SERVER_FAULTS[fault]
            await self.real.call("CONFIG", "SET", name, value)
            try:
                return await self.real.call(*args)
            finally:
                await self.real.call("CONFIG", "SET", name, normal)
        if fault is Fault.DROP_CONNECTION:
            if is_write and not self.dropped:  # the write's own request, cut half-way
                self.dropped = True
                self.faults.dropped_writes += 1
            if self.dropped:
                return await self._break(fault, args)
            return await self.real.call(*args)  # requests before the write are answered
        if is_write and fault is not None:
            self.fault = None  # "the next write": once
            return await self._break(fault, args)
        return await self.real.call(*args)

    async def _break(self, fault: Fault, args: tuple[Any, ...]) -> Any:
        real = self.real
        async with real.lock:
            if fault is Fault.WRITE_BEFORE_SEND:  # the connection is gone before a byte
                await real.aclose()
                raise ProviderUnavailable(f"cannot connect to {real.url}: injected refusal")
            connection = await real.opened()
            packed = b"".join(connection.pack_command(*args))
            sent = packed if fault is Fault.WRITE_AFTER_SEND else packed[: len(packed) // 2]
            await connection.send_packed_command(sent, check_health=False)
            await real.aclose()  # the answer (if any) is never read
            raise ConnectionLost(f"connection to {real.url} lost: injected {fault.value}")


class RedisFaults(FaultInjector):
    kinds = frozenset(Fault)

    @contextmanager
    def inject(self, fault: Fault, provider: Any) -> Iterator[None]:
        real = provider.transport
        provider.transport = FaultyTransport(real, fault, self)
        try:
            yield
        finally:
            provider.transport = real
