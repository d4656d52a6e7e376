"""The async host API (docs/design.md, Hosts and tools).

A host (the ``goat`` CLI, a chat app, an MCP server) asks a :class:`MemoryHost` for the
:class:`MemoryContext` of one :class:`Chat`. A context serves exactly one scope and its one
selected binding; there is no API that takes two scopes or returns a union:

- a loose chat (no project id) reads and writes only Global; a Pen chat only its Pen;
- an unbound Global uses the embedded default (provider :data:`EMBEDDED_DEFAULT_PROVIDER`);
- a Pen whose binding is missing, disabled or unavailable gets a context with NO memory
  (operations raise :class:`~goat_core.errors.ProviderUnavailable`), never Global's;
- a shared-bank provider is labelled with its own label ("shared bank `<bank>` on
  `<server>`") whichever scope selected it;
- moving a chat changes only its project id; contexts are derived per call, nothing is
  copied, merged, relabelled or deleted;
- writes happen only through :meth:`MemoryContext.remember` and
  :meth:`MemoryContext.feedback`; the interception hooks run on every write and read;
- :meth:`MemoryContext.prepare_turn` fences recalled text as quoted data and never changes
  connection health;
- remote bindings (``ProviderSpec.network``) are owned by a
  :class:`~goat_core.host.Supervisor` (shared checks per transport, generations,
  backoff, rechecks); local providers are built and probed directly.

:class:`MemoryHost` is :class:`~goat_core.host._hostbase.HostBase` (configuration, contexts,
providers and remote sessions) plus :class:`~goat_core.host._bindings.HostBindings` (bind,
unbind, check, refresh, status) plus :class:`~goat_core.host._transfer.HostTransfer`
(the one-way copy, export and import: the only methods spanning two stores);
:class:`~goat_core.host.SyncMemoryHost` runs it for synchronous callers.
"""

from __future__ import annotations

from goat_core.host._bindings import HostBindings
from goat_core.host._transfer import HostTransfer


class MemoryHost(HostTransfer, HostBindings):
    """The async host API (the CLI and the MCP server are thin layers over it).

    :param home: GOAT's directories (default :meth:`GoatHome.from_env`).
    :param registry: the plugins (default ``Registry.load()``, reading ``GOAT_*_PLUGINS``).
    :param config: a fixed configuration (default: ``memory.json`` of ``home``, read on
        every call so a change made elsewhere is seen). :meth:`bind` and friends save to
        ``home`` either way.
    :param clock, policy: the connection supervisor's clock and retry timing (tests).
    :param progress: ``progress(done, total)`` handed to every provider built here
        (:attr:`ProviderContext.progress`): how a host shows a large store's first indexing
        when that happens inside a read (the ``goat`` CLI draws a bar on a terminal).
    :param embed_progress: ``embed_progress(done, total)`` in notes, handed to every provider
        built here (:attr:`ProviderContext.embed_progress`): how a host shows a store with an
        embedder embedding its notes inside a read (the first semantic recall).
    :param embedders: ``embedders(name) -> EmbedderSpec``, how providers built here find an
        embedder (default: the registry's; raising
        :class:`~goat_core.errors.ProviderUnavailable` keeps this process from loading any
        model: recall then answers keyword results, degraded with that reason).
    :param rerankers: ``rerankers(name) -> RerankerSpec``, how providers built here find a
        reranker (default: the registry's; raising
        :class:`~goat_core.errors.ProviderUnavailable` keeps this process from loading any
        model: recall then answers in its unreranked order, degraded with that reason).
    :param embed_in_background: handed to every provider built here
        (:attr:`ProviderContext.embed_in_background`): a recall that finds notes to embed
        answers at once with the vectors stored so far while the store embeds the rest on a
        thread of its own (``goat serve`` sets it).

    Remote bindings (``ProviderSpec.network``) are owned by :attr:`supervisor`: checks are
    shared per transport, results of outdated attempts dropped, an unavailable binding
    retried before a turn within a short backoff, an auth failure only on an explicit
    check. Enter the host (``async with MemoryHost(...)``) so shared checks run in tasks
    the host owns (a caller that gives up never cancels them).
    """
