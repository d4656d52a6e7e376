"""The policy gate: how a provider's extra tools and a plugin's operations reach the scope's
policy hooks (docs/design.md, Policy path).

:class:`Gate` implements :class:`goat_core.contract.PolicyGate` for one call of one extra
tool or operation, bound to one :class:`~goat_core.host.MemoryContext`. :func:`run_gated`
runs the call and holds it to its declared :class:`~goat_core.contract.Access`: a ``read``
call that passed nothing through a read policy, or that tried to write, is refused as a
provider defect.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from goat_core.contract import (
    Access,
    MemoryWrite,
    Page,
    PageList,
    PageSummary,
    RecallResult,
    Receipt,
    ReceiptStatus,
    Scope,
)
from goat_core.errors import ConfigError, NotFound, Rejected
from goat_core.plugins import Registry

T = TypeVar("T")


def hidden_reason(hidden: int) -> str:
    """The degraded reason for pages a browse policy hid: ``"1 page hidden by policy"``,
    ``"<n> pages hidden by policy"``."""
    return f"{hidden} page{'' if hidden == 1 else 's'} hidden by policy"


def hidden_count(before: Sequence[PageSummary], kept: Sequence[PageSummary]) -> int:
    """How many pages of ``before`` a browse policy removed (by id; a hook may re-order)."""
    kept_ids = {p.id for p in kept}
    return sum(1 for p in before if p.id not in kept_ids)


class Gate:
    """One call's :class:`~goat_core.contract.PolicyGate`.

    :param registry: the host's registry (the only caller of hooks).
    :param scope: the one scope the call serves. :param label: the store's label.
    :param access: what the call declared. :param name: the tool or operation, for messages.
    """

    def __init__(
        self,
        registry: Registry,
        scope: Scope,
        label: str,
        access: Access,
        name: str,
    ) -> None:
        self._registry = registry
        self._scope = scope
        self._label = label
        self._access = access
        self._name = name
        self._lock = threading.Lock()  # inspect() may run on a store's worker thread
        self.reads = 0
        self.writes = 0

    def __repr__(self) -> str:
        return f"<Gate {self._name} {self._access.value} scope={self._scope.key}>"

    @property
    def scope(self) -> Scope:
        return self._scope

    @property
    def name(self) -> str:
        """The tool or operation this gate serves (for messages)."""
        return self._name

    @property
    def label(self) -> str:
        return self._label

    def _read(self) -> None:
        with self._lock:
            self.reads += 1

    # -- writes -----------------------------------------------------------------------------
    def inspect(self, write: MemoryWrite) -> MemoryWrite:
        if self._access is not Access.WRITE:
            raise ConfigError(
                f"{self._name} declares access {self._access.value!r} but tried to write; "
                "a provider tool or operation that stores content must declare 'write'"
            )
        with self._lock:
            self.writes += 1
        return self._registry.inspect_remember(self._scope, write)

    async def write(
        self, write: MemoryWrite, store: Callable[[MemoryWrite], Awaitable[T]]
    ) -> T | Receipt:
        try:
            inspected = self.inspect(write)
        except Rejected as exc:
            return Receipt(status=ReceiptStatus.REJECTED, reason=exc.reason, scope=self._scope.key)
        return await store(inspected)

    # -- reads ------------------------------------------------------------------------------
    def recall(self, query: str, result: RecallResult) -> RecallResult:
        self._read()
        return self._registry.filter_recall(self._scope, query, result)

    def browse(self, items: Sequence[PageSummary]) -> tuple[PageSummary, ...]:
        self._read()
        return tuple(self._registry.filter_browse(self._scope, items))

    def pages(self, listing: PageList) -> PageList:
        kept = self.browse(listing.items)
        hidden = hidden_count(listing.items, kept)
        if not hidden:
            return listing.model_copy(update={"items": kept})
        return listing.model_copy(
            update={
                "items": kept,
                "complete": False,
                "degraded": (*listing.degraded, hidden_reason(hidden)),
            }
        )

    def page(self, page: Page) -> Page:
        if not self.browse([page.summary()]):
            raise NotFound(f"no page {page.path or page.id!r} in {self._label}")
        return page


async def run_gated(gate: Gate, access: Access, call: Callable[[], Awaitable[T]]) -> T:
    """Run ``call`` (which holds ``gate``) and hold it to ``access``.

    :raises ConfigError: a ``read`` call returned without passing anything through a read
        policy (the host never shows such a result).
    """
    result = await call()
    if access is Access.READ and gate.reads == 0:
        raise ConfigError(
            f"{gate.name} declares access 'read' but its result passed no read policy "
            "(goat_filter_recall or goat_filter_browse through its PolicyGate); nothing is "
            "shown"
        )
    return result


def check_access(owner: str, name: str, access: Any, read_only: bool | None = None) -> Access:
    """Validate an extra's declared access at registration.

    :raises ConfigError: neither ``read`` nor ``write`` declared, or ``read_only`` disagrees.
    """
    try:
        declared = Access(access)
    except ValueError:
        raise ConfigError(
            f"provider {owner!r} {name!r} declares no access: set access='read' or "
            "access='write' (docs/design.md, Policy path); it is not registered"
        ) from None
    if read_only and declared is Access.WRITE:
        raise ConfigError(
            f"provider {owner!r} {name!r} is read_only but declares access 'write'; "
            "it is not registered"
        )
    return declared
