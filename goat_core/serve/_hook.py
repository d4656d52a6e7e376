"""``goat hook claude-code``: Claude Code's UserPromptSubmit hook (Codex CLI's too).

Reads the hook's JSON on stdin (``session_id``, ``cwd``, ``prompt``, ...), resolves the scope
from ``$CLAUDE_PROJECT_DIR``, else ``cwd``, exactly as ``goat serve --from-dir`` does (same
function, same pin setting; a pin alone decides, with or without a directory), and answers
with exactly one JSON object::

    {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "..."}}

The context is the fenced block of ``prepare_turn`` within the character budget. It fails
open: any error, an unbound scope or a trivial prompt gives an empty context and exit 0,
with the reason on stderr only (the deadline is kept by the command, see ``goat_core.cli``).
It never writes memory and keeps no prompt or recalled text on disk.

Each prompt is a fresh process, so the supervisor's rules for a remote binding are kept
across processes: a running ``goat serve`` of the same home and scope is asked first (its
supervisor already keeps them); otherwise backoff and auth-failure state live in a small file
under the GOAT home: after an auth failure no request is sent until the binding (settings
or key) changes or ``goat check`` runs (:func:`clear_hook_state`).

A binding with an embedder (semantic recall) is only recalled by meaning through a running
server: loading a model takes seconds, so the hook never does. Without an answering server
(none runs, or its socket is not this user's owner-only socket, or it answers garbage, too
much or too late) the hook recalls in-process with keyword ranking only and says so on
stderr (``keyword-only recall, degraded: ...``). A reranker is only loaded by a running
server too: in-process, the recall keeps its unreranked order and says so in ``degraded``.

Never imports mcp.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from goat_core.contract import Scope
    from goat_core.host import GoatHome, MemoryContext, MemoryHost
    from goat_core.plugins import Registry
    from goat_core.serve._scope import ServeScope

HOOK_EVENT = "UserPromptSubmit"
#: The event whose context is the scope receipt (``goat_core/serve/_receipt.py``).
SESSION_START = "SessionStart"
#: Backoff after a failed remote read: doubles from this many seconds up to the cap.
BACKOFF_FIRST_SECONDS = 5.0
BACKOFF_MAX_SECONDS = 300.0
#: Largest hook input read from stdin; a larger one gets no recall (said on stderr).
MAX_INPUT_BYTES = 1_000_000


@dataclass
class HookResult:
    """What the hook prints (``context``) and says on stderr (``reason``)."""

    context: str = ""
    reason: str = ""
    scope: str | None = None
    via: str = "in-process"
    event: str = HOOK_EVENT

    def __setattr__(self, name: str, value: Any) -> None:
        # the reason may quote a server (an error, a status): never a secret
        if name == "reason" and value:
            from goat_core.logs import redact

            value = redact(value)
        super().__setattr__(name, value)

    def to_json(self) -> dict[str, Any]:
        return {
            "hookSpecificOutput": {
                "hookEventName": self.event,
                "additionalContext": self.context,
            }
        }


def _state_path(data_dir: Path, scope: Scope) -> Path:
    name = hashlib.sha256(scope.key.encode()).hexdigest()[:16]
    return data_dir / "state" / f"hook-{name}.json"


def _read_state(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_state(path: Path, state: dict[str, Any]) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".hook-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(state, f)
    os.replace(tmp, path)


def clear_hook_state(data_dir: Path, scope: Scope | None = None) -> None:
    """Forget the hook's backoff and auth-failure state (what ``goat check`` does), for
    ``scope`` or, with ``None``, every scope. A GOAT home that is full or read-only keeps
    what it holds: the state only delays the hook's next try."""
    from goat_core.errors import StoreUnwritable

    folder = data_dir / "state"
    paths = [_state_path(data_dir, scope)] if scope is not None else []
    if scope is None and folder.is_dir():
        paths = list(folder.glob("hook-*.json"))
    for path in paths:
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            if StoreUnwritable.from_os_error(exc, path) is None:
                raise


def parse_input(text: str) -> tuple[str, str | None]:
    """``(prompt, cwd)`` of a UserPromptSubmit hook's JSON input (a SessionStart input has
    no prompt: ``""``). :raises ValueError: not a hook input."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("hook input is not a JSON object")
    prompt = data.get("prompt")
    if data.get("hook_event_name") == SESSION_START and prompt is None:
        prompt = ""
    if not isinstance(prompt, str):
        raise ValueError("hook input has no prompt string")
    cwd = data.get("cwd")
    return prompt, cwd if isinstance(cwd, str) and cwd else None


def hook_event(text: str) -> str:
    """The input's ``hook_event_name`` when it is SessionStart, else UserPromptSubmit."""
    try:
        data = json.loads(text)
    except ValueError:
        return HOOK_EVENT
    event = data.get("hook_event_name") if isinstance(data, dict) else None
    return SESSION_START if event == SESSION_START else HOOK_EVENT


def run_hook(
    stdin_text: str,
    *,
    env: Mapping[str, str],
    home: GoatHome | None = None,
    budget: int = 4000,
    pin: str | None = None,
    timeout: float = 3.0,
) -> HookResult:
    """The hook's answer for one prompt (never raises for a GOAT or input problem: the
    result's ``reason`` says why there is no context).

    :param env: the hook's environment (``CLAUDE_PROJECT_DIR``, and a pin in
        ``CLAUDE_PLUGIN_OPTION_SCOPE_PIN`` or ``GOAT_PIN``).
    :param timeout: how long a running server may take to answer.
    """
    from goat_core.errors import GoatError

    event = hook_event(stdin_text)
    try:
        prompt, cwd = parse_input(stdin_text)
    except ValueError as exc:
        return HookResult(reason=f"unusable hook input: {exc}", event=event)
    if event == SESSION_START:
        return _session_start(cwd, env, home, pin)
    from goat_core.host import is_trivial_prompt

    if is_trivial_prompt(prompt):
        return HookResult(reason="trivial prompt: no recall")
    if budget <= 0:
        return HookResult(reason="no budget for memory")
    from goat_core.serve._scope import env_pin, parse_pin

    directory = env.get("CLAUDE_PROJECT_DIR") or cwd
    pin = pin if pin is not None else env_pin(env)
    try:
        # a pin alone decides the scope (docs/design.md, Hosts and tools: "a pin comes from
        # the one setting both read"), so an input without cwd still has one
        pinned = parse_pin(pin)  # a pin that is not one fails before anything is opened
        if not directory and pinned is None:
            return HookResult(
                reason="no project directory: neither $CLAUDE_PROJECT_DIR nor cwd, and no pin"
            )
        return _recall(prompt, directory or None, env, home, budget, pin, timeout)
    except GoatError as exc:
        return HookResult(reason=f"{type(exc).__name__}: {exc}")


def _session_start(
    cwd: str | None, env: Mapping[str, str], home: GoatHome | None, pin: str | None
) -> HookResult:
    """The scope receipt as SessionStart context: the text ``goat://scope`` gives."""
    from goat_core.errors import GoatError
    from goat_core.serve._scope import env_pin

    directory = env.get("CLAUDE_PROJECT_DIR") or cwd
    pin = pin if pin is not None else env_pin(env)
    try:
        served, text = receipt_for(directory, pin, home)
    except GoatError as exc:  # the session is told, not left without a word
        why = f"{type(exc).__name__}: {exc}"
        return HookResult(f"GOAT memory: unavailable: {why}", why, event=SESSION_START)
    return HookResult(text, "scope receipt", served.scope.key, event=SESSION_START)


def receipt_for(
    directory: str | None, pin: str | None, home: GoatHome | None
) -> tuple[ServeScope, str]:
    """The scope ``directory`` and ``pin`` resolve to, as a server would serve it, and its
    receipt. Opens no store: a binding's provider is only looked up.

    :raises GoatError: no directory and no pin, or the scope does not resolve.
    """
    import anyio

    from goat_core.errors import BadInput
    from goat_core.host import Chat, GoatHome, MemoryHost
    from goat_core.plugins import PluginSettings, Registry
    from goat_core.serve._scope import ServeScope, bound_projects, parse_pin, resolve_serve_scope
    from goat_core.serve._tools import ServedScope

    registry = Registry.load(PluginSettings.from_env())
    goat_home = home if home is not None else GoatHome.from_env()
    if directory is not None:
        served = resolve_serve_scope(
            registry, from_dir=directory, pin=pin or "", bound=bound_projects(goat_home)
        )
    else:
        pinned = parse_pin(pin)
        if pinned is None:
            raise BadInput("no project directory: neither $CLAUDE_PROJECT_DIR nor cwd, and no pin")
        served = ServeScope(pinned, "pin")

    async def receipt() -> str:
        async with MemoryHost(home=goat_home, registry=registry) as host:
            host.context_for(Chat(project_id=served.scope.pen_id))
            return ServedScope(host, served).receipt()

    return served, anyio.run(receipt)


def _recall(
    prompt: str,
    directory: str | None,
    env: Mapping[str, str],
    home: GoatHome | None,
    budget: int,
    pin: str | None,
    timeout: float,
) -> HookResult:
    from goat_core.host import GoatHome
    from goat_core.serve._local import ask_local, socket_path
    from goat_core.serve._scope import (
        ServeScope,
        bound_projects,
        parse_pin,
        pinned_scope,
        resolve_serve_scope,
    )

    home = home if home is not None else GoatHome.from_env()
    if not home.config_dir.is_dir() and not home.data_dir.is_dir():
        # the hook creates no GOAT home (a mistyped --home must not grow a tree there)
        return HookResult(reason=f"no GOAT home at {home.config_dir}: nothing to recall")
    # a pinned scope is known without any plugin: a running server may answer before the
    # plugins are loaded at all; otherwise the scope plugins decide, as for the server
    registry: Registry | None = None  # loaded only when it is needed
    if directory is None:  # the pin decides alone (run_hook checked there is one)
        pinned = parse_pin(pin)
        assert pinned is not None
        served: ServeScope | None = ServeScope(pinned, "pin")
    else:
        served = pinned_scope(directory, pin)
    if served is None:
        from goat_core.plugins import PluginSettings, Registry

        assert directory is not None
        registry = Registry.load(PluginSettings.from_env())
        served = resolve_serve_scope(
            registry, from_dir=directory, pin=pin, bound=bound_projects(home)
        )
    scope = served.scope
    path = socket_path(home.data_dir, scope)
    fallback = "no running `goat serve` of this scope"
    asked = path is not None and os.path.lexists(path)
    if path is not None and asked:
        try:
            reply = ask_local(path, scope, prompt, budget, timeout)
        except TimeoutError as exc:  # it listens but is busy (or hung)
            fallback = f"the running server did not answer in time ({exc}; it may be busy)"
        except (OSError, ValueError, RecursionError) as exc:  # recall here instead
            fallback = f"the running server did not answer ({type(exc).__name__}: {exc})"
        else:
            return _result(
                scope.key,
                reply.get("block") or "",
                reply.get("outcome"),
                reply.get("reason"),
                budget,
                via="server",
                degraded=reply.get("degraded"),
            )

    import anyio

    from goat_core.errors import ProviderUnavailable
    from goat_core.host import Chat, MemoryHost
    from goat_core.plugins import PluginSettings, Registry

    if registry is None:
        registry = Registry.load(PluginSettings.from_env())

    def no_model(name: str) -> Any:
        # a model per prompt would take seconds to load: only a running server embeds (why
        # none answered is said once, in the reason below)
        raise ProviderUnavailable("the hook loads no embedding model")

    def no_reranker(name: str) -> Any:
        raise ProviderUnavailable("the hook loads no reranking model")

    async def turn() -> HookResult:
        async with MemoryHost(
            home=home, registry=registry, embedders=no_model, rerankers=no_reranker
        ) as host:
            result = await _turn(host, scope, prompt, budget)
            binding = host.context_for(Chat(project_id=scope.pen_id)).binding
            embedder = binding.settings.get("embedder") if binding is not None else None
            if isinstance(embedder, str):
                result.via = "in-process, keyword-only"
                start = "" if asked else " (start one to recall by meaning)"
                result.reason = (
                    f"keyword-only recall, degraded: embedder {embedder!r} is set and "
                    f"{fallback}{start}; {result.reason}"
                )
            elif asked:
                result.reason += f" ({fallback})"
            return result

    return anyio.run(turn)


def _result(
    scope: str,
    block: str,
    outcome: Any,
    reason: Any,
    budget: int,
    via: str = "in-process",
    degraded: Any = (),
) -> HookResult:
    if len(block) > budget:  # never over the budget, whoever composed the block
        return HookResult(reason=f"block over the budget of {budget}", scope=scope, via=via)
    why = f"{outcome}" + (f": {reason}" if reason else "")
    partial = [d for d in degraded or () if isinstance(d, str)]
    if partial:  # a partial read is said, never passed off as whole
        why += f" (degraded: {'; '.join(partial)})"
    return HookResult(context=block, reason=why, scope=scope, via=via)


async def _turn(host: MemoryHost, scope: Scope, prompt: str, budget: int) -> HookResult:
    from goat_core.host import Chat

    context = host.context_for(Chat(project_id=scope.pen_id))
    if context.spec is None or not context.spec.network:
        turn = await context.prepare_turn(prompt, budget)
        return _result(
            scope.key, turn.block, turn.outcome, turn.reason, budget, degraded=turn.degraded
        )
    return await _remote_turn(host, context, scope, prompt, budget)


async def _remote_turn(
    host: MemoryHost, context: MemoryContext, scope: Scope, prompt: str, budget: int
) -> HookResult:
    """A turn of a remote binding with the supervisor's rules kept across processes."""
    from goat_core.host import SessionState

    path = _state_path(host.home.data_dir, scope)
    identity = host.supervisor.identity(scope.key)
    state = _read_state(path)
    if state.get("identity") != identity:
        state = {}
    if state.get("state") == SessionState.AUTH_FAILED.value:
        return HookResult(
            reason=f"{context.label}: authentication failed earlier; no retry until the "
            "binding changes or `goat check` runs",
            scope=scope.key,
        )
    until = float(state.get("until") or 0)
    if state.get("state") == SessionState.UNAVAILABLE.value and time.time() < until:
        return HookResult(
            reason=f"{context.label} was unavailable; next try in {until - time.time():.0f} s",
            scope=scope.key,
        )
    turn = await context.prepare_turn(prompt, budget)
    status = host.supervisor.status(scope.key)
    now_state = status.state if status is not None else None
    if now_state is SessionState.AUTH_FAILED:
        _write_state(path, {"identity": identity, "state": now_state.value})
    elif now_state is SessionState.UNAVAILABLE:
        failures = int(state.get("failures") or 0) + 1
        wait = min(BACKOFF_MAX_SECONDS, BACKOFF_FIRST_SECONDS * 2 ** (failures - 1))
        _write_state(
            path,
            {
                "identity": identity,
                "state": now_state.value,
                "failures": failures,
                "until": time.time() + wait,
            },
        )
    else:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
    return _result(scope.key, turn.block, turn.outcome, turn.reason, budget)
