"""The context of one scope: its one selected binding, every operation on it through the
scope's policy hooks, and its model-facing tools (:func:`memory_tools`)."""

from __future__ import annotations

import posixpath
import unicodedata
from collections.abc import Callable, Container, Iterable
from typing import Any, Literal, Protocol

from goat_core.contract import (
    Access,
    Binding,
    Capability,
    Connections,
    Health,
    LinkMap,
    MemoryWrite,
    Page,
    PageList,
    PageSummary,
    Provider,
    ProviderSpec,
    RecallResult,
    Receipt,
    ReceiptStatus,
    Reflection,
    Scope,
)
from goat_core.errors import (
    Ambiguous,
    BadInput,
    Conflict,
    GoatError,
    NotFound,
    NotSupported,
    PluginLoadError,
    ProviderUnavailable,
    Rejected,
    ScopeError,
    TooLarge,
)
from goat_core.host._gate import Gate, check_access, hidden_count, hidden_reason, run_gated
from goat_core.host._leases import RemoteLease
from goat_core.host._records import Chat, scope_label
from goat_core.host._tools import ToolSet, build_tools
from goat_core.host._trivial import is_trivial_prompt
from goat_core.host._turn import (
    CHARS_PER_TOKEN,
    TURN_RECALL_LIMIT,
    Outcome,
    TurnMemory,
    format_memory_block,
    turn_item_key,
)
from goat_core.plugins import Registry


class ContextHost(Protocol):
    """What a :class:`MemoryContext` needs of the host that made it."""

    registry: Registry

    def resolve(self, chat: Chat) -> Scope: ...

    async def check(self, scope: Scope) -> Health: ...

    async def _before_turn(self, scope: Scope) -> None: ...


class MemoryContext:
    """One scope and its one selected binding. Build with :meth:`MemoryHost.context_for`.

    :attr:`available` is ``False`` for a scope with no memory (Pen unbound, disabled or
    unavailable): every operation then raises :class:`ProviderUnavailable` with
    :attr:`reason`, and :meth:`prepare_turn` returns an empty block (outcome ``off`` or
    ``unavailable``).
    """

    def __init__(
        self,
        host: ContextHost,
        scope: Scope,
        binding: Binding | None,
        spec: ProviderSpec | None,
        provider: Provider | None,
        *,
        state: Literal["on", "off", "unavailable"],
        reason: str | None = None,
        lease: RemoteLease | None = None,
    ) -> None:
        self._host = host
        self.scope = scope
        self.binding = binding
        self.spec = spec
        self._fixed_provider = provider
        self._state: Literal["on", "off", "unavailable"] = state
        self._reason = reason
        self._lease = lease

    def __repr__(self) -> str:
        provider = self.spec.name if self.spec else None
        return f"<MemoryContext {self.scope.key} provider={provider} state={self.state}>"

    @property
    def _provider(self) -> Provider | None:
        """The provider in use now: fixed for local bindings; for a remote binding the
        supervisor's current session (``None`` while it is unavailable or auth-failed)."""
        if self._lease is not None:
            return self._lease.provider()
        return self._fixed_provider

    @property
    def state(self) -> Literal["on", "off", "unavailable"]:
        """``on``, ``off`` (no memory by choice) or ``unavailable`` (it cannot be used)."""
        if self._lease is not None:
            return "on" if self._lease.provider() is not None else "unavailable"
        return self._state

    @property
    def reason(self) -> str | None:
        """Why this context has no memory (``None`` when it has)."""
        if self._lease is not None:
            return None if self._lease.provider() is not None else self._lease.reason()
        return self._reason

    @property
    def available(self) -> bool:
        return self._provider is not None

    @property
    def label(self) -> str:
        """How to name this store: a shared bank's own label whatever the scope, else
        ``"Global memory"`` / ``"Pen `<id>` memory"``."""
        if self.spec is not None and self.spec.supports(Capability.SHARED_BANK):
            if self._provider is not None:
                return self._provider.label()
            if self._lease is not None:  # unavailable: still the shared bank, never the scope
                shared = self._lease.label()
                if shared is not None:
                    return shared
        return scope_label(self.scope)

    def _gate(self, name: str, access: Access) -> Gate:
        """A :class:`~goat_core.contract.PolicyGate` for one call of an extra tool or a
        provider operation named ``name`` (docs/design.md, Policy path)."""
        assert self.spec is not None
        return Gate(self._host.registry, self.scope, self.label, access, name)

    async def run_operation(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Run the provider's operation ``name`` (``Provider.operations()``) through this
        scope's policy: the operation gets a :class:`~goat_core.contract.PolicyGate`, never
        the provider. What plugin CLI commands call.

        :raises NotSupported: the provider has no such operation.
        :raises ConfigError: the operation declares no access, or broke its declaration
            (a ``read`` that passed no read policy, or tried to write).
        :raises ProviderUnavailable: this scope has no memory.
        """
        provider = self._require()
        assert self.spec is not None
        ops = {op.name: op for op in provider.operations()}
        op = ops.get(name)
        if op is None:
            known = ", ".join(sorted(ops)) or "none"
            raise NotSupported(
                f"provider {self.spec.name!r} has no operation {name!r} (available: {known})"
            )
        access = check_access(self.spec.name, f"operation {name}", op.access)
        gate = self._gate(f"operation {name!r} of provider {self.spec.name!r}", access)
        return await run_gated(gate, access, lambda: op.handler(gate, *args, **kwargs))

    def _require(self, capability: Capability | None = None, operation: str = "") -> Provider:
        """The provider in use (private to the host: tools and commands get a gate).

        :raises ProviderUnavailable: this scope has no memory.
        :raises NotSupported: ``capability`` is not declared.
        """
        provider = self._provider
        if provider is None:
            raise ProviderUnavailable(self.reason or f"{self.label} is not available")
        assert self.spec is not None
        if capability is not None and not self.spec.supports(capability):
            raise NotSupported(
                f"provider {self.spec.name!r} does not support {operation} "
                f"(capability {capability.value!r} not declared)"
            )
        return provider

    def serves(self, chat: Chat) -> bool:
        """Whether this context is the one ``chat`` resolves to (same scope)."""
        return self._host.resolve(chat) == self.scope

    # -- writes -------------------------------------------------------------------------------
    async def _write(self, provider: Provider, write: MemoryWrite) -> Receipt:
        assert self.spec is not None
        _check_utf8(write)
        limit = self.spec.max_input_chars
        if len(write.text) > limit:
            raise TooLarge(
                f"text is {len(write.text)} characters; provider {self.spec.name!r} accepts "
                f"at most {limit} (max_input_chars); nothing was stored"
            )
        try:
            write = self._host.registry.inspect_remember(self.scope, write)
        except Rejected as exc:
            return Receipt(status=ReceiptStatus.REJECTED, reason=exc.reason, scope=self.scope.key)
        if len(write.text) > limit:
            raise TooLarge(
                f"text is {len(write.text)} characters after policy hooks; provider "
                f"{self.spec.name!r} accepts at most {limit}; nothing was stored"
            )
        refused = await self._onto_hidden(provider, write)
        if refused is not None:
            return refused
        try:
            if write.kind == "feedback":
                return await provider.feedback(write)
            return await provider.remember(write)
        except Rejected as exc:
            return Receipt(status=ReceiptStatus.REJECTED, reason=exc.reason, scope=self.scope.key)
        except Conflict as exc:
            unnamed = await self._unnamed_conflict(provider, write, exc)
            if unnamed is None:
                raise
            return unnamed

    async def _hidden_pages(self, provider: Provider) -> list[PageSummary]:
        """The pages the browse policy hides: every page listed, run through
        ``goat_filter_browse`` in one call; hidden = listed minus shown."""
        listed: list[PageSummary] = []
        cursor: str | None = None
        while True:
            listing = await provider.list_pages(limit=1000, cursor=cursor)
            listed.extend(listing.items)
            cursor = listing.next_cursor
            if cursor is None or not listing.items:
                break
        kept = {p.id for p in self._host.registry.filter_browse(self.scope, listed)}
        return [p for p in listed if p.id not in kept]

    async def _hidden_now(self) -> list[PageSummary]:
        """The pages the browse policy hides now; none without a plugin filtering browsing,
        or for a provider that lists no pages (no lookup is made then)."""
        provider = self._provider
        if provider is None or self.spec is None or not self.spec.supports(Capability.PAGES):
            return []
        if not self._host.registry.filters_browse():
            return []
        return await self._hidden_pages(provider)

    async def _onto_hidden(self, provider: Provider, write: MemoryWrite) -> Receipt | None:
        """Keep a write off a page the browse policy hides (docs/design.md, Policy path):
        such a page looks absent to this reader and is not written through.

        - a write titled as a hidden page, by its title, file name, path or id (NFC,
          case-folded; however the provider resolves titles, so a visible page whose ``id``
          is the hidden page's title is no way in), or titled as a page the provider opens
          by that title and the policy hides: a ``rejected`` receipt.
        - ``feedback`` ``on`` a hidden page, or on a name a hidden page has: :class:`NotFound`,
          as ``show`` and ``forget`` answer for it; among several matches,
          :class:`Ambiguous` names only the visible.

        Checked only when a plugin filters browsing and the provider lists pages
        (``pages``); without a browse filter no page is looked up.
        """
        assert self.spec is not None
        if not self._host.registry.filters_browse() or not self.spec.supports(Capability.PAGES):
            return None
        on = write.on if write.kind == "feedback" and write.on else None
        ref = on or write.title
        if ref is None or not ref.strip():
            return None
        if _page_key(ref) in _hidden_keys(await self._hidden_pages(provider)):
            if on is None:
                return self._hidden_title(ref)
            raise NotFound(f"no page {ref!r} in {self.label}")
        if on is None and not self.spec.title_lookup:
            return None
        try:
            candidates = [(await provider.get_page(ref)).summary()]
        except Ambiguous as exc:
            candidates = []
            for candidate in exc.candidates:
                try:
                    candidates.append((await provider.get_page(candidate)).summary())
                except NotFound:
                    continue
        except (NotFound, BadInput):  # no page of that name: the provider decides
            return None
        kept = self._host.registry.filter_browse(self.scope, candidates)
        if not hidden_count(candidates, kept):
            return None
        if on is None:
            return self._hidden_title(ref)
        if kept:
            raise Ambiguous(
                f"{ref!r} names no single page in {self.label}; name one of "
                + ", ".join(repr(p.id) for p in kept),
                candidates=[p.id for p in kept],
            )
        raise NotFound(f"no page {ref!r} in {self.label}")

    def _hidden_title(self, title: str) -> Receipt:
        return Receipt(
            status=ReceiptStatus.REJECTED,
            reason=(
                f"a page titled {title!r} is hidden by policy and cannot be written through; "
                "nothing was written"
            ),
            scope=self.scope.key,
        )

    async def _unnamed_conflict(
        self, provider: Provider, write: MemoryWrite, exc: Conflict
    ) -> Receipt | None:
        """A ``rejected`` receipt for a provider's conflict that names a page the browse
        policy hides (a case or punctuation twin of the title, a taken file name), told
        without naming it; ``None`` for any other conflict (it goes on as it is)."""
        assert self.spec is not None
        if not self._host.registry.filters_browse() or not self.spec.supports(Capability.PAGES):
            return None
        message = str(exc)
        if not any(_names_page(message, p) for p in await self._hidden_pages(provider)):
            return None
        name = write.title or write.on or ""
        return Receipt(
            status=ReceiptStatus.REJECTED,
            reason=(
                f"{name!r} clashes with a page hidden by policy; nothing was written"
                if name
                else "the write clashes with a page hidden by policy; nothing was written"
            ),
            scope=self.scope.key,
        )

    async def remember(
        self,
        text: str,
        *,
        title: str | None = None,
        source: str = "api",
        tags: Iterable[str] = (),
    ) -> Receipt:
        """Remember ``text`` in this scope's store.

        :returns: the provider's truthful receipt, or a ``rejected`` receipt when a policy
            hook (``goat_inspect_remember``) or the provider refused, or when ``title`` names
            a page the browse policy hides (nothing written).
        :raises TooLarge: ``text`` over the provider's ``max_input_chars`` (checked first).
        :raises ProviderUnavailable: this scope has no memory.
        """
        provider = self._require()
        write = MemoryWrite(
            kind="remember", text=text, title=title, source=source, tags=tuple(tags)
        )
        return await self._write(provider, write)

    async def feedback(self, text: str, *, on: str | None = None, source: str = "api") -> Receipt:
        """Record feedback (capability ``feedback``), optionally ``on`` a page of this store.

        :raises NotSupported: the provider does not declare ``feedback`` (checked first).
        :raises NotFound: ``on`` names no page, or one the browse policy hides (nothing
            written).
        """
        provider = self._require(Capability.FEEDBACK, "feedback")
        write = MemoryWrite(kind="feedback", text=text, on=on, source=source)
        return await self._write(provider, write)

    async def forget(self, ref: str) -> Receipt:
        """Remove a page; the receipt's ``removed`` lists what went.

        :raises NotFound: no such page, or one the browse policy hides.
        """
        provider = self._require()
        if self.spec is not None and self.spec.supports(Capability.PAGES):
            await self.get_page(ref)  # NotFound for a page the browse policy hides
        return await provider.forget(ref)

    async def refresh(self, receipt: Receipt) -> Receipt:
        """Refresh a ``queued`` receipt of THIS scope.

        :raises ScopeError: the receipt belongs to another scope.
        """
        if receipt.scope != self.scope.key:
            raise ScopeError(
                f"receipt of scope {receipt.scope} cannot be refreshed through the context of "
                f"{self.scope.key}"
            )
        refreshed = await self._require().refresh(receipt)
        if not isinstance(refreshed, Receipt):
            raise TypeError(f"refresh returned {type(refreshed).__name__}, not a Receipt")
        # validated again: a provider's model_copy(update=...) is not (a status as plain text)
        return Receipt.model_validate(refreshed.model_dump(warnings=False))

    # -- reads --------------------------------------------------------------------------------
    async def recall(
        self, query: str, *, limit: int = 10, max_tokens: int | None = None
    ) -> RecallResult:
        """Ranked results for user text (never query syntax), filtered by policy hooks.

        :param limit: 1..100.
        :param max_tokens: the most tokens of recalled text the caller will use; passed on
            only to providers that count tokens (``ProviderSpec.counts_tokens``).
        :raises BadInput: ``limit`` out of range, or ``max_tokens`` below 1.
        :raises Rejected: a ``goat_filter_recall`` hook refused the read.
        """
        if not 1 <= limit <= 100:
            raise BadInput(f"limit must be between 1 and 100, got {limit}")
        if max_tokens is not None and max_tokens < 1:
            raise BadInput(f"max_tokens must be at least 1, got {max_tokens}")
        provider = self._require()
        if max_tokens is not None and provider.spec.counts_tokens:
            recall: Any = provider.recall
            result = await recall(query, limit=limit, max_tokens=max_tokens)
        else:
            result = await provider.recall(query, limit=limit)
        return self._host.registry.filter_recall(self.scope, query, result)

    async def reflect(self, query: str) -> Reflection:
        """Reason over memory (capability ``reflect``), through the recall policy.

        The items the answer is based on pass ``goat_filter_recall`` as a recall result for
        ``query``. When the policy removes any of them, the answer drew on text the reader
        may not see, so its text is withheld: the reflection comes back with an empty text,
        the kept items and the degraded reason ``"<n> item(s) hidden by policy; the answer
        is withheld"`` (docs/design.md, Policy path).

        :raises Rejected: a ``goat_filter_recall`` hook refused the read.
        """
        reflection = await self._require(Capability.REFLECT, "reflect").reflect(query)
        based_on = RecallResult(scope=reflection.scope, items=reflection.based_on)
        kept = self._host.registry.filter_recall(self.scope, query, based_on)
        kept_ids = {item.id for item in kept.items}
        hidden = sum(1 for item in reflection.based_on if item.id not in kept_ids)
        if not hidden and len(kept.items) == len(reflection.based_on):
            return reflection
        return reflection.model_copy(
            update={
                "text": "",
                "based_on": kept.items,
                "degraded": (
                    *reflection.degraded,
                    *kept.degraded,
                    f"{hidden} item{'' if hidden == 1 else 's'} hidden by policy; the answer "
                    "is withheld",
                ),
            }
        )

    async def list_pages(self, limit: int = 50, cursor: str | None = None) -> PageList:
        """One page of the page list (capability ``pages``), filtered by browse hooks.

        Pages a ``goat_filter_browse`` hook hides are never silently dropped (docs/design.md,
        Reads and truth: nothing is silently truncated): the listing gains the degraded reason
        ``"<n> page(s) hidden by policy"`` and ``complete`` becomes ``False`` (``complete``
        means "the last page and nothing skipped", see :class:`PageList`); ``next_cursor``
        is the provider's, so paging on still works.

        :param limit: 1..1000 items.
        :raises BadInput: ``limit`` out of range.
        """
        if not 1 <= limit <= 1000:
            raise BadInput(f"limit must be between 1 and 1000, got {limit}")
        provider = self._require(Capability.PAGES, "list_pages")
        listing = await provider.list_pages(limit=limit, cursor=cursor)
        kept = tuple(self._host.registry.filter_browse(self.scope, listing.items))
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

    async def get_page(self, ref: str) -> Page:
        """One page (capability ``pages``).

        :raises NotFound: no such page, or the browse policy hides it.
        """
        page = await self._require(Capability.PAGES, "get_page").get_page(ref)
        if not self._host.registry.filter_browse(self.scope, [page.summary()]):
            raise NotFound(f"no page {ref!r} in {self.label}")
        return page

    async def link_map(self) -> LinkMap:
        """All pages and links (capability ``map``); hidden pages and their edges dropped.

        When a ``goat_filter_browse`` hook hides pages, the map says so: its ``degraded``
        gains ``"<n> page(s) hidden by policy"`` (a :class:`LinkMap` has no ``complete``
        flag; the reason is its only, and sufficient, signal).
        """
        link_map = await self._require(Capability.MAP, "link_map").link_map()
        nodes = tuple(self._host.registry.filter_browse(self.scope, link_map.nodes))
        ids = {n.id for n in nodes}
        edges = tuple(
            e for e in link_map.edges if e.source in ids and (e.target is None or e.target in ids)
        )
        update: dict[str, Any] = {"nodes": nodes, "edges": edges}
        hidden = hidden_count(link_map.nodes, nodes)
        if hidden:
            update["degraded"] = (*link_map.degraded, hidden_reason(hidden))
        return link_map.model_copy(update=update)

    async def connections(self, ref: str) -> Connections:
        """A page's outgoing links and backlinks (capability ``map``), policy-filtered.

        :raises NotFound: no such page, or the browse policy hides it.
        """
        conns = await self._require(Capability.MAP, "connections").connections(ref)
        if not self._host.registry.filter_browse(self.scope, [conns.page]):
            raise NotFound(f"no page {ref!r} in {self.label}")
        # the pages at the other end pass the same filter: a link to or from a hidden page is
        # left out and counted (as link_map drops its edges)
        ends = {link.target for link in conns.outgoing if link.target} | {
            edge.source for edge in conns.backlinks
        }
        if not ends:
            return conns
        provider = self._require(Capability.MAP, "connections")
        hidden: set[str] = set()
        for end in sorted(ends):  # each end by its real summary (title, path): what a policy sees
            try:
                summary = (await provider.get_page(end)).summary()
            except GoatError:
                stem = posixpath.splitext(posixpath.basename(end))[0]
                summary = PageSummary(id=end, title=stem, path=end)
            if not self._host.registry.filter_browse(self.scope, [summary]):
                hidden.add(end)
        if not hidden:
            return conns
        outgoing = tuple(link for link in conns.outgoing if link.target not in hidden)
        backlinks = tuple(edge for edge in conns.backlinks if edge.source not in hidden)
        left_out = len(conns.outgoing) - len(outgoing) + len(conns.backlinks) - len(backlinks)
        return conns.model_copy(
            update={
                "outgoing": outgoing,
                "backlinks": backlinks,
                "degraded": (
                    *conns.degraded,
                    f"{left_out} link{'' if left_out == 1 else 's'} hidden by policy",
                ),
            }
        )

    async def reindex(self, progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
        """Bring the provider's local index up to date; returns its counts."""
        return await self._require().reindex(progress)

    async def check(self) -> Health:
        """Probe this scope's provider and record the result (what ``status`` shows)."""
        return await self._host.check(self.scope)

    def tools(self) -> ToolSet:
        """The model-facing tools bound to this context (see :func:`memory_tools`)."""
        return memory_tools(self)

    # -- turns --------------------------------------------------------------------------------
    async def prepare_turn(
        self, prompt: str, budget: int, *, exclude: Container[str] = ()
    ) -> TurnMemory:
        """Automatic recall before a turn: the memory block, its items and the outcome.

        :param prompt: the user's prompt (trivial prompts skip recall).
        :param budget: the most characters the block may take (>= 0).
        :param exclude: :func:`~goat_core.host.turn_item_key` of items already given (in
            this session): they are left out, and ``reason`` says how many.
        :raises BadInput: a negative budget.

        A failed read gives outcome ``failed`` with the reason, for this turn only: no
        health state changes (docs/design.md, Hosts and tools).
        """
        if not isinstance(budget, int) or budget < 0:
            raise BadInput(f"budget must be a non-negative number of characters, got {budget!r}")
        if self._lease is not None and budget > 0 and not is_trivial_prompt(prompt):
            # first check, or a retry within the short backoff, of a remote binding: only for
            # a turn that will read (a "hi" never waits on a server)
            await self._host._before_turn(self.scope)
        meta: dict[str, Any] = {"scope": self.scope.key, "label": self.label}
        if self._provider is None:
            outcome: Outcome = "off" if self.state == "off" else "unavailable"
            return TurnMemory(block="", items=[], outcome=outcome, reason=self.reason, **meta)
        if is_trivial_prompt(prompt):
            return TurnMemory(
                block="", items=[], outcome="skipped", reason="trivial prompt: no recall", **meta
            )
        if budget == 0:
            return TurnMemory(
                block="", items=[], outcome="skipped", reason="no budget for memory", **meta
            )
        try:
            # A token is about four characters of English text: the budget in tokens for
            # providers that count them (the block itself is still trimmed to characters).
            result = await self.recall(
                prompt, limit=TURN_RECALL_LIMIT, max_tokens=max(1, budget // CHARS_PER_TOKEN)
            )
        except PluginLoadError:
            raise  # strict plugins: a failing hook stops the turn
        except Exception as exc:  # reported for this turn only
            reason = (
                f"{type(exc).__name__}: {exc}"
                if isinstance(exc, GoatError)
                else (f"{type(exc).__name__} while recalling from {self.label}")
            )
            return TurnMemory(block="", items=[], outcome="failed", reason=reason, **meta)
        degraded = tuple(result.degraded)
        items = [i for i in result.items if turn_item_key(i) not in exclude]
        given = len(result.items) - len(items)
        again = f"{given} recalled item(s) already given this session" if given else None
        if not items:
            why = again or "nothing relevant recalled"
            return TurnMemory(
                block="", items=[], outcome="empty", reason=why, degraded=degraded, **meta
            )
        block, quoted, cut = format_memory_block(items, label=self.label, budget=budget)
        if again:
            cut = f"{cut}; {again} left out" if cut else f"{again} left out"
        if not quoted:
            return TurnMemory(block="", items=[], outcome="skipped", reason=cut, **meta)
        return TurnMemory(
            block=block, items=quoted, outcome="ok", reason=cut, degraded=degraded, **meta
        )


def _page_key(name: str) -> str:
    """How a page name compares with a hidden page's: NFC, case-folded, without ``.md``."""
    folded = unicodedata.normalize("NFC", name.strip()).casefold()
    return folded.removesuffix(".md")


def _hidden_keys(pages: Iterable[PageSummary]) -> set[str]:
    """Every name a write could reach ``pages`` by: title, id, path and file name."""
    keys: set[str] = set()
    for page in pages:
        names = [page.title, page.id]
        if page.path:
            names += [page.path, posixpath.basename(page.path)]
        keys.update(_page_key(n) for n in names if n)
    return keys


def _names_page(message: str, page: PageSummary) -> bool:
    """Whether ``message`` names ``page``: its path, title or id as quoted (``{name!r}``,
    how errors quote names; ``'Old Plans.md'`` does not name ``Plans.md``)."""
    return any(f"{name!r}" in message for name in (page.path, page.title, page.id) if name)


def memory_tools(context: MemoryContext) -> ToolSet:
    """The tools bound to ``context`` (one scope; no scope-choosing argument anywhere).

    :param context: exactly one :class:`~goat_core.host.MemoryContext`.
    :returns: an empty :class:`ToolSet` (with ``reason``) for a scope without memory.
    :raises TypeError: anything but one context (e.g. a list of contexts).
    :raises ScopeError: a provider tool's schema has a forbidden property
        (:data:`FORBIDDEN_ARGUMENTS`).
    :raises ConfigError: a provider tool with an invalid or core-colliding name.
    """
    if not isinstance(context, MemoryContext):
        raise TypeError(
            f"memory_tools takes one MemoryContext, got {type(context).__name__}: tools are "
            "bound to exactly one scope"
        )
    return build_tools(context)


def _check_utf8(write: MemoryWrite) -> None:
    """:raises BadInput: a text, title, page or tag of ``write`` holds a lone surrogate (an
    argument that was not UTF-8 decodes to one), which no note or index can hold."""
    fields = {"text": write.text, "title": write.title, "on": write.on}
    fields.update({f"tag {i + 1}": tag for i, tag in enumerate(write.tags)})
    for name, value in fields.items():
        if value is None:
            continue
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise BadInput(
                f"the {name} is not valid UTF-8 (at character {exc.start + 1}); nothing was stored"
            ) from None
