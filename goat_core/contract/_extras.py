"""What a provider adds beyond the core operations: extra model tools and operations for its
plugin's commands, and the :class:`PolicyGate` through which they reach the scope's policy
hooks (docs/design.md, Policy path)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, TypeVar

from goat_core.contract._records import (
    MemoryWrite,
    Page,
    PageList,
    PageSummary,
    RecallResult,
    Receipt,
)
from goat_core.contract._scope import Scope

T = TypeVar("T")


class Access(StrEnum):
    """What a provider's extra tool or operation does to its store.

    ``read``: it shows stored content; whatever it shows passes ``goat_filter_recall`` or
    ``goat_filter_browse`` through its :class:`PolicyGate`. ``write``: it stores content;
    the exact text it stores passes ``goat_inspect_remember`` first (docs/design.md,
    Policy path).
    """

    READ = "read"
    WRITE = "write"


class PolicyGate(Protocol):
    """The handle a provider's extra tools and operations get instead of the host: the scope's
    policy hooks, bound to one scope and one call (docs/design.md, Policy path).

    The host builds one per call. A ``read`` call must pass what it shows through
    :meth:`recall`, :meth:`browse`, :meth:`pages` or :meth:`page` (a read whose result
    passed none of them is refused as a provider defect, :class:`~goat_core.errors.ConfigError`);
    a ``write`` call must pass the exact text it stores through :meth:`inspect` or
    :meth:`write`. A ``read`` call that tries to write is refused the same way.
    """

    @property
    def scope(self) -> Scope:
        """The one scope this call serves."""
        ...

    @property
    def label(self) -> str:
        """How the host names the store (``"Global memory"``, a shared bank's label...)."""
        ...

    def inspect(self, write: MemoryWrite) -> MemoryWrite:
        """Run ``goat_inspect_remember``; store the returned write's text, not the original.

        Synchronous and I/O-free, so a store's worker thread may call it. Size limits stay the
        provider's to enforce (``max_input_chars`` for page text, its own for other content).

        :raises Rejected: a policy hook refused; store nothing.
        """
        ...

    async def write(
        self, write: MemoryWrite, store: Callable[[MemoryWrite], Awaitable[T]]
    ) -> T | Receipt:
        """:meth:`inspect`, then ``await store(inspected_write)``; a refusal returns a
        ``rejected`` :class:`~goat_core.contract.Receipt` and ``store`` is never called."""
        ...

    def recall(self, query: str, result: RecallResult) -> RecallResult:
        """Run ``goat_filter_recall`` over a recall result. :raises Rejected: refused."""
        ...

    def browse(self, items: Sequence[PageSummary]) -> tuple[PageSummary, ...]:
        """Run ``goat_filter_browse``; returns the pages that may be shown."""
        ...

    def pages(self, listing: PageList) -> PageList:
        """A page listing through ``goat_filter_browse``; hidden pages make it
        ``complete=False`` with the reason ``"<n> pages hidden by policy"``."""
        ...

    def page(self, page: Page) -> Page:
        """One page through ``goat_filter_browse``. :raises NotFound: the policy hides it."""
        ...


@dataclass(frozen=True)
class ModelTool:
    """An extra model-facing tool a provider contributes (e.g. wiki page writes).

    :param name: tool name, ``[a-z][a-z0-9_]*``.
    :param description: what the model is told.
    :param input_schema: JSON schema of the arguments; must not take a scope, Pen, bank, URL
        or path of another store (the host checks the property names at any depth).
    :param handler: ``await handler(arguments, gate) -> JSON-able dict``; ``gate`` is the
        call's :class:`PolicyGate`, the tool's only way to the scope's policy.
    :param read_only: kept for compatibility; must agree with ``access`` when given.
    :param destructive: may remove or overwrite content.
    :param access: :class:`Access` ``read`` or ``write``. Required: a tool that declares
        neither is refused when the host builds the tool set (``ConfigError``).
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Callable[[dict[str, Any], PolicyGate], Awaitable[dict[str, Any]]]
    read_only: bool = False
    destructive: bool = False
    access: Access | None = None


@dataclass(frozen=True)
class ProviderOperation:
    """A provider-specific operation a plugin's CLI command runs (e.g. ``goat wiki ingest``).

    Commands never get the provider: they call
    ``MemoryContext.run_operation(name, *args, **kwargs)``, which runs
    ``await handler(gate, *args, **kwargs)`` with a :class:`PolicyGate` under the same rules
    as :class:`ModelTool` (docs/design.md, Policy path).

    :param name: operation name, ``[a-z][a-z0-9_]*``.
    :param access: :class:`Access`; required.
    :param handler: ``await handler(gate, *args, **kwargs)``.
    """

    name: str
    access: Access
    handler: Callable[..., Awaitable[Any]]
