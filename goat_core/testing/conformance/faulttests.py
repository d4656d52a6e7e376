"""The fault-injection contract tests (docs/authors.md, Fault injection).

They run only for a provider whose test class returns a
:class:`~goat_core.testing.conformance.faults.FaultInjector` from ``goat_faults``; each kind
it does not list is skipped with the reason.
"""

from __future__ import annotations

import pytest

from goat_core.contract import Capability, MemoryWrite, Receipt, ReceiptStatus, Scope
from goat_core.errors import GoatError, StoreUnwritable
from goat_core.testing.conformance.base import (
    ConformanceBase,
    StoreSet,
    find,
    receipt_opens_its_page,
    token,
)
from goat_core.testing.conformance.faults import Fault, FaultInjector

__all__ = ["FaultInjectionTests"]

_UNWRITABLE = {Fault.READ_ONLY, Fault.DISK_FULL}


def _need(goat_faults: FaultInjector | None, fault: Fault, name: str) -> FaultInjector:
    if goat_faults is None:
        pytest.skip(
            f"provider {name!r} has no goat_faults fixture, so fault injection is not tested "
            "(docs/authors.md, Fault injection)"
        )
    if fault not in goat_faults.kinds:
        pytest.skip(f"provider {name!r}'s fault fixture cannot inject {fault.value!r}")
    return goat_faults


class FaultInjectionTests(ConformanceBase):
    """Mixed into :class:`~goat_core.testing.ProviderConformanceTests`; a provider may also
    subclass it alone to run the fault tests against a fake server."""

    _goat_fault_suite = True

    @pytest.mark.goat_fault
    @pytest.mark.parametrize("fault", list(Fault))
    async def test_write_under_fault_is_never_falsely_stored(
        self, goat_stores: StoreSet, goat_faults: FaultInjector | None, fault: Fault
    ) -> None:
        """Under a fault, ``remember`` answers ``unknown`` or raises a typed error
        (``StoreUnwritable`` for a full or read-only store). Once the fault is lifted the
        suite checks the answer: ``stored`` (or ``queued``) only for a write that landed, a
        typed error (or ``rejected``/``failed``) only for one that did not. Under
        ``drop_connection`` the fault fixture must cut the write's own request (counted in
        ``dropped_writes``), so a half-sent write is what is tested, not an earlier read.

        Troubleshooting: catch the transport or OS error around the write and raise a
        ``GoatError`` (``ProviderUnavailable`` for a connection that failed before anything
        was sent, ``StoreUnwritable`` for ``ENOSPC``/``EROFS``/``EACCES``, e.g.
        ``StoreUnwritable.from_os_error``), or return ``unknown`` when the request may have
        reached the store (sent, or cut part-way). Never return ``stored`` from an
        ``except`` branch. If the suite says the write request was never cut, fix the fault
        fixture: answer the requests before the write's own, cut that one, count it.
        """
        spec = goat_stores.spec
        injector = _need(goat_faults, fault, spec.name)
        provider = await goat_stores.open(Scope.global_())
        word = token()
        receipt: Receipt | None = None
        error: BaseException | None = None
        cuts = injector.dropped_writes
        with injector.inject(fault, provider):
            try:
                receipt = await provider.remember(
                    MemoryWrite(text=f"{word} written under a fault", source="test")
                )
            except GoatError as exc:
                error = exc
            except Exception as exc:
                raise AssertionError(
                    f"under {fault.value}, remember raised an untyped "
                    f"{type(exc).__name__}: {exc}. Raise a GoatError (StoreUnwritable for a "
                    "full or read-only store, ProviderUnavailable for a lost connection)"
                ) from exc
        if fault is Fault.DROP_CONNECTION:
            outcome = (
                f"raised {type(error).__name__}"
                if error is not None
                else f"answered {receipt.status.value!r}"
                if receipt is not None
                else "returned"
            )
            assert injector.dropped_writes > cuts, (
                f"under drop_connection, the fault fixture never cut the write's own request "
                f"(dropped_writes stayed {cuts}; remember {outcome}), so the half-sent write "
                "was not tested: the fixture must answer every request before the write's "
                "own (a connect, a handshake, a read), cut that one part-way and add one to "
                "dropped_writes (docs/authors.md, Fault injection)"
            )
        if error is not None:
            if fault in _UNWRITABLE:
                assert isinstance(error, StoreUnwritable), (
                    f"under {fault.value}, remember raised {type(error).__name__}: {error}; "
                    "a full or read-only store is StoreUnwritable (exit 6), naming the path"
                )
            await self._did_not_land(provider, word, fault, f"raised {type(error).__name__}")
            return
        assert receipt is not None
        if receipt.status in {ReceiptStatus.STORED, ReceiptStatus.QUEUED}:

            async def landed() -> None:
                assert await find(provider, word), (
                    f"under {fault.value}, remember answered {receipt.status.value!r} for a "
                    "write that did not land (a swallowed error): answer 'unknown' or raise a "
                    "typed error"
                )

            await self.settle(spec, landed)
            if receipt.status is ReceiptStatus.STORED:
                await receipt_opens_its_page(
                    provider, receipt, word, f"under {fault.value}, remember"
                )
        elif receipt.status in {ReceiptStatus.REJECTED, ReceiptStatus.FAILED}:
            await self._did_not_land(provider, word, fault, f"answered {receipt.status.value!r}")
        else:
            assert receipt.status is ReceiptStatus.UNKNOWN, receipt

    async def _did_not_land(self, provider: object, word: str, fault: Fault, said: str) -> None:
        """A write that failed left nothing behind (docs/design.md, Writes and outcomes)."""
        from goat_core.contract import Provider

        assert isinstance(provider, Provider)
        assert not await find(provider, word), (
            f"under {fault.value}, remember {said}, yet the write landed: an error or a "
            "rejected/failed receipt says nothing was stored. A request that was sent, or cut "
            "part-way, may have run: answer 'unknown' unless you know it did not"
        )

    @pytest.mark.goat_fault
    @pytest.mark.parametrize("fault", list(Fault))
    async def test_read_under_fault_is_never_a_silent_empty(
        self, goat_stores: StoreSet, goat_faults: FaultInjector | None, fault: Fault
    ) -> None:
        """Under a fault, a read of a stored note finds it, reports ``degraded`` or
        ``complete=False``, or raises a typed error; never an empty ``complete=True``.

        Under ``drop_connection`` the suite first makes a write inside the block, so the
        fault fixture cuts the connection, and then reads over the broken connection.

        Troubleshooting: catch the transport or OS error around the read and raise a
        ``GoatError`` or answer with ``degraded=("<reason>",)`` and ``complete=False``; an
        empty result means "nothing matched", never "could not look".
        """
        spec = goat_stores.spec
        injector = _need(goat_faults, fault, spec.name)
        provider = await goat_stores.open(Scope.global_())
        word = token()
        receipt = await provider.remember(MemoryWrite(text=f"{word} stored before", title=word))
        await self.assert_truthful(provider, receipt, word=word)
        with injector.inject(fault, provider):
            if fault is Fault.DROP_CONNECTION:
                await self._break_connection(provider, fault)
            await self._read_is_honest(provider, word, fault, "recall")
            if spec.supports(Capability.PAGES):
                await self._read_is_honest(provider, word, fault, "list_pages")

    async def _break_connection(self, provider: object, fault: Fault) -> None:
        """A write the drop cuts; its outcome is the write test's business, but it is typed."""
        from goat_core.contract import Provider

        assert isinstance(provider, Provider)
        try:
            await provider.remember(MemoryWrite(text=f"{token()} cut by the drop", source="test"))
        except GoatError:
            pass
        except Exception as exc:
            raise AssertionError(
                f"under {fault.value}, remember raised an untyped {type(exc).__name__}: {exc}"
            ) from exc

    async def _read_is_honest(self, provider: object, word: str, fault: Fault, op: str) -> None:
        from goat_core.contract import Provider

        assert isinstance(provider, Provider)
        try:
            if op == "recall":
                result = await provider.recall(word, limit=10)
                complete, degraded = result.complete, result.degraded
                shown = any(word in (i.title + i.snippet + (i.text or "")) for i in result.items)
            else:
                listing = await provider.list_pages(limit=50)
                complete, degraded = listing.complete, listing.degraded
                shown = any(word in f"{p.id} {p.title}" for p in listing.items)
        except GoatError:
            return
        except Exception as exc:
            raise AssertionError(
                f"under {fault.value}, {op} raised an untyped {type(exc).__name__}: {exc}. "
                "Raise a GoatError or answer degraded"
            ) from exc
        if not shown:
            assert degraded or not complete, (
                f"under {fault.value}, {op} answered without the stored note, complete=True "
                "and no degraded reason: a silent empty. Say what could not be read"
            )
