"""Hook specifications for GOAT plugins. Implement them with ``@goat_core.hookimpl``.

Every hook is synchronous and must not do I/O; core raises :class:`TypeError` naming the
plugin when an implementation returns something awaitable. Hooks are called through
:class:`goat_core.plugins.Registry`, never through ``pm.hook`` directly, so each plugin's
result is attributed and one plugin's exception is recorded against it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    import click

    from goat_core.contract import (
        Binding,
        EmbedderSpec,
        MemoryWrite,
        PageSummary,
        ProviderSpec,
        RecallResult,
        RerankerSpec,
        Scope,
        ScopeRequest,
        ScopeResolution,
    )

__all__ = ["PROJECT_NAME", "hookimpl"]

PROJECT_NAME = "goat"
hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def goat_register_providers() -> Iterable[ProviderSpec]:  # type: ignore[empty-body]
    """Return the providers this plugin ships. Called once per registry; must not do I/O
    or import heavy modules (build those inside ``ProviderSpec.factory``).

    :returns: one :class:`~goat_core.contract.ProviderSpec` per provider. Two plugins
        declaring the same provider name are both reported; the first loaded wins.
    """


@hookspec(firstresult=True)
def goat_resolve_scope(request: ScopeRequest) -> ScopeResolution | None:
    """Resolve what a host knows about a chat to exactly one scope.

    :param request: the chat's project id, working directory and pin.
    :returns: a :class:`~goat_core.contract.ScopeResolution`, or ``None`` to let the next
        plugin (and finally the built-in resolver) answer.

    A chat's ``project_id`` always decides: if a plugin answers a different scope for a
    request with a project id, core raises :class:`~goat_core.errors.ScopeError`.
    Stops at the first non-None result (pluggy ``firstresult``).
    """


@hookspec
def goat_register_commands(cli: click.Group) -> None:
    """Add CLI subcommands (e.g. a ``wiki`` group) to the ``goat`` command.

    :param cli: the root :class:`click.Group`; call ``cli.add_command(...)``. A command name
        that already exists is reported and not replaced.
    """


@hookspec
def goat_inspect_remember(scope: Scope, write: MemoryWrite) -> MemoryWrite | None:
    """Inspect, transform or refuse what is about to be remembered (remember and feedback).

    :param scope: the one scope the write goes to.
    :param write: the write as it stands after earlier plugins.
    :returns: ``None`` to keep it, or a changed copy (``write.model_copy(update=...)``).
        Raise :class:`~goat_core.errors.Rejected` to refuse; the caller then gets a
        ``rejected`` receipt with your reason, and nothing is written.

    Implementations run in turn, each seeing the previous one's result.
    """


@hookspec
def goat_filter_recall(scope: Scope, query: str, result: RecallResult) -> RecallResult | None:
    """Filter or re-rank what was recalled before anyone sees it.

    :param scope: the scope that was searched.
    :param query: the user's query text.
    :param result: the result as it stands after earlier plugins.
    :returns: ``None`` to keep it, or a changed copy. Removing items does not make the
        result incomplete; say why in ``degraded`` if it matters to the reader. Raise
        :class:`~goat_core.errors.Rejected` to refuse the read.
    """


@hookspec
def goat_filter_browse(scope: Scope, items: Sequence[PageSummary]) -> Sequence[PageSummary] | None:
    """Filter what browsing shows (page lists, map nodes, a shown page).

    :param scope: the scope being browsed.
    :param items: the pages about to be shown, after earlier plugins.
    :returns: ``None`` to keep them, or the pages to keep (a page filtered out of a single
        ``show`` is reported as not found).
    """


@hookspec
def goat_authorize_egress(binding: Binding, url: str) -> bool | None:
    """Decide whether a provider may send a request to ``url``. Asked before connecting and
    on every request made through core's guarded HTTP client.

    :param binding: the binding whose provider is making the request.
    :param url: the full request URL.
    :returns: ``True`` to allow, ``False`` to refuse, ``None`` for no opinion. Any ``False``
        refuses; otherwise at least one ``True`` is needed. The built-in rule allows only
        URLs under the ``egress_urls`` of a binding the user explicitly bound.
    """


@hookspec
def goat_register_embedders() -> Iterable[EmbedderSpec]:  # type: ignore[empty-body]
    """Declare embedders (text to vectors, for semantic recall in folder stores; a binding
    opts in with ``--set embedder=NAME``). Must not load a model or touch the network: the
    spec's factory loads weights from disk when a store first needs them.

    :returns: :class:`~goat_core.contract.EmbedderSpec` objects; names are unique across
        plugins.
    """


@hookspec
def goat_register_rerankers() -> Iterable[RerankerSpec]:  # type: ignore[empty-body]
    """Declare rerankers (a query and candidate texts to relevance scores, as a cross-encoder
    does; a folder store's binding opts in with ``--set reranker=NAME``). Must not load a
    model or touch the network: the spec's factory loads weights from disk when a store
    first reranks.

    :returns: :class:`~goat_core.contract.RerankerSpec` objects; names are unique across
        plugins.
    """
