"""The ``goat`` command line: a thin layer over :class:`goat_core.host.SyncMemoryHost`.

Commands (``goat COMMAND --help`` for each)::

    plugins [--check] [--json]            installed plugins, their providers and load failures
    providers [--json]                    providers with capabilities and settings JSON schema
    scope [--json]                        the scope the current directory resolves to
    bind (--global | --pen ID) PROVIDER [--set KEY=VALUE ...] [--api-key-stdin] [--no-connect]
    unbind | disable | enable (--global | --pen ID)
    check [--pen ID | --global] [--set KEY=VALUE ...]
    status [--json] [--watch]
    remember TEXT [--title T]     feedback TEXT [--on PAGE]     forget PAGE
    recall QUERY [--limit N]      reflect QUERY                 pages [--limit N] [--cursor C]
    show PAGE                     map [--html FILE]             reindex

Every memory command takes ``--pen ID`` (default: Global), ``--json`` and ``--home DIR``
(default ``$GOAT_HOME``, else the platform directories), placed after the subcommand.
Plugins add their own subcommands through the ``goat_register_commands`` hook; they are
looked up only when a name that is not built in is asked for (or for ``--help``).

Exit codes (``GoatError.exit_code``)::

    0  ok (a queued write included)       4  not supported by the provider
    1  internal error                      5  conflict, or rejected (also a rejected receipt)
    2  bad input (click usage errors too)  6  unavailable, auth, credentials, plugin failures
    3  not found or ambiguous              130 interrupted

Errors are one line on stderr (``goat: error: ...``); an ambiguous page reference also lists
its candidates. An unexpected exception prints one line plus a hint to rerun with
``GOAT_DEBUG=1``, which prints the traceback. ``--json`` output is the only thing on stdout.

Import cost: only click and core models at import time; the host, registry, credential
store, HTML map and progress bar are imported by the commands that use them, so
``goat recall`` never imports ``keyring``, ``mcp`` or ``rich``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar, cast

import click

from goat_core.errors import Ambiguous, BadInput, GoatError

if TYPE_CHECKING:
    from typing import TextIO

    from goat_core.home import GoatHome
    from goat_core.models import LinkMap, Receipt, Scope
    from goat_core.registry import Registry

__all__ = ["EXIT_INTERRUPTED", "cli", "main"]

F = TypeVar("F", bound=Callable[..., Any])

#: Exit status after Ctrl-C (128 + SIGINT, the shell convention).
EXIT_INTERRUPTED = 130
#: ``reindex`` shows a progress bar (on stderr) when at least this many files are indexed.
PROGRESS_THRESHOLD = 200
#: ``status --watch`` re-renders this often (DESIGN section 5: recheck every 15 s).
WATCH_SECONDS = 15.0
#: ``status`` waits at most this long for the live check of remote bindings.
STATUS_CHECK_SECONDS = 10.0

_BUILTIN_DEBUG_ENV = "GOAT_DEBUG"


# -- output helpers ------------------------------------------------------------------------
def _debug() -> bool:
    return os.environ.get(_BUILTIN_DEBUG_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def _err(message: str) -> None:
    click.echo(message, err=True)


def _emit_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _table(rows: Sequence[Sequence[str]], headers: Sequence[str] | None = None) -> str:
    """Left-aligned columns separated by two spaces; the last column is not padded."""
    all_rows = [list(headers)] if headers else []
    all_rows += [[str(c) for c in r] for r in rows]
    if not all_rows:
        return ""
    widths = [max(len(r[i]) for r in all_rows) for i in range(len(all_rows[0]))]
    lines = []
    for r in all_rows:
        cells = [c.ljust(widths[i]) for i, c in enumerate(r[:-1])] + [r[-1]]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _fail(exc: GoatError) -> NoReturn:
    """Report a deliberate error as one line (plus candidates) and exit with its code."""
    _err(f"goat: error: {_one_line(exc.message if hasattr(exc, 'message') else str(exc))}")
    if isinstance(exc, Ambiguous):
        for candidate in exc.candidates:
            _err(f"  {candidate}")
    raise click.exceptions.Exit(exc.exit_code)


# -- shared options ------------------------------------------------------------------------
def _home_option(f: F) -> F:
    return click.option(
        "--home",
        "home",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="GOAT home directory (default: $GOAT_HOME, else the platform directories).",
    )(f)


def _json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON on stdout.")(f)


def _pen_option(f: F) -> F:
    return click.option(
        "--pen",
        "pen",
        metavar="ID",
        default=None,
        help="Use this Pen's memory (default: Global).",
    )(f)


def _memory_options(f: F) -> F:
    return _pen_option(_json_option(_home_option(f)))


def _scope_choice(f: F) -> F:
    """``--global | --pen ID`` (exactly one; checked by :func:`_chosen_scope`)."""
    f = click.option("--pen", "pen", metavar="ID", default=None, help="A Pen scope.")(f)
    return click.option("--global", "global_", is_flag=True, help="The Global scope.")(f)


def _set_option(f: F) -> F:
    return click.option(
        "--set",
        "sets",
        metavar="KEY=VALUE",
        multiple=True,
        help="A provider setting (repeatable); validated against the provider's settings.",
    )(f)


def _parse_sets(sets: Sequence[str]) -> dict[str, str]:
    """``KEY=VALUE`` pairs to a dict. Values stay strings; the provider's settings model
    converts them (pydantic lax mode: ``"true"`` for a bool, ``"5"`` for an int).

    :raises click.BadParameter: no ``=``, an empty or malformed key, or a repeated key.
    """
    out: dict[str, str] = {}
    for item in sets:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="'--set'")
        if not key or not key.replace("_", "a").replace("-", "a").isalnum():
            raise click.BadParameter(
                f"{item!r}: the key must be letters, digits, '_' or '-'", param_hint="'--set'"
            )
        if key in out:
            raise click.BadParameter(f"setting {key!r} given twice", param_hint="'--set'")
        out[key] = value
    return out


def _scope(pen: str | None) -> Scope:
    from goat_core.models import Scope

    return Scope.global_() if pen is None else Scope.pen(pen)


def _chosen_scope(global_: bool, pen: str | None, *, default_global: bool = False) -> Scope:
    if global_ and pen is not None:
        raise click.UsageError("give either --global or --pen ID, not both")
    if not global_ and pen is None:
        if default_global:
            return _scope(None)
        raise click.UsageError("choose the scope: --global or --pen ID")
    return _scope(pen)


# -- registry and host -----------------------------------------------------------------------
def _registry(*, strict: bool | None = None) -> Registry:
    """One plugin registry per invocation (cached on the root context)."""
    from goat_core.manager import PluginSettings
    from goat_core.registry import Registry

    ctx = click.get_current_context(silent=True)
    meta = ctx.find_root().meta if ctx is not None else {}
    key = f"goat.registry.{strict}"
    if key not in meta:
        settings = (
            PluginSettings.from_env() if strict is None else PluginSettings.from_env(strict=strict)
        )
        meta[key] = Registry.load(settings)
    registry: Registry = meta[key]
    return registry


def _home(home: Path | None) -> GoatHome:
    from goat_core.home import GoatHome

    return GoatHome.from_env(home)


@contextmanager
def _host(home: Path | None, progress: Callable[[int, int], None] | None = None) -> Iterator[Any]:
    """A :class:`~goat_core.host.SyncMemoryHost` for this invocation, closed afterwards;
    ``progress`` is the providers' sink for a first indexing inside a read."""
    from goat_core.host import SyncMemoryHost

    host = SyncMemoryHost(home=_home(home), registry=_registry(), progress=progress)
    try:
        yield host
    finally:
        close = getattr(host, "close", None)
        if callable(close):
            close()


@contextmanager
def _memory(
    home: Path | None, pen: str | None, progress: Callable[[int, int], None] | None = None
) -> Iterator[Any]:
    """The memory context of one scope: Global, or the Pen ``pen`` (validated first)."""
    scope = _scope(pen)  # ScopeError (exit 2) for an invalid Pen id, before any I/O
    from goat_core.host import Chat

    with _host(home, progress) as host:
        context = host.context_for(Chat(project_id=scope.pen_id))
        try:
            yield context
        finally:
            close = getattr(context, "close", None)
            if callable(close):
                close()


def _to_json(value: Any) -> Any:
    if hasattr(value, "to_json"):
        return value.to_json()
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    return value


# -- the root group -------------------------------------------------------------------------
class GoatGroup(click.Group):
    """The root group: one-line errors, exit codes from ``GoatError.exit_code``, and plugin
    commands loaded only when a name that is not built in is asked for."""

    _plugins_loaded = False

    def _load_plugin_commands(self, ctx: click.Context) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        try:
            with ctx.scope(cleanup=False):
                _registry().register_commands(self)
        except GoatError as exc:
            _err(f"goat: warning: plugin commands unavailable: {_one_line(str(exc))}")

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and not ctx.resilient_parsing:
            self._load_plugin_commands(ctx)
            command = super().get_command(ctx, cmd_name)
        return command

    def list_commands(self, ctx: click.Context) -> list[str]:
        if not ctx.resilient_parsing:
            self._load_plugin_commands(ctx)
        return super().list_commands(ctx)

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the CLI. In standalone mode every outcome becomes an exit status and every
        error one line on stderr (click's own usage errors included, exit 2)."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            try:
                rv = super().main(args, prog_name or "goat", complete_var, False, **extra)
            except click.exceptions.Exit as exc:  # raised inside a nested invocation
                rv = exc.exit_code
        except click.UsageError as exc:
            hint = ""
            if exc.ctx is not None:
                hint = f" (see '{exc.ctx.command_path} --help')"
            _err(f"goat: error: {_one_line(exc.format_message())}{hint}")
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            _err(f"goat: error: {_one_line(exc.format_message())}")
            sys.exit(exc.exit_code)
        except (click.Abort, KeyboardInterrupt):
            _err("goat: interrupted")
            sys.exit(EXIT_INTERRUPTED)
        except GoatError as exc:  # raised outside a command (e.g. strict plugin loading)
            try:
                _fail(exc)
            except click.exceptions.Exit as done:
                sys.exit(done.exit_code)
        except Exception as exc:
            _unexpected(exc)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GoatError as exc:
            _fail(exc)
        except (click.ClickException, click.exceptions.Exit, click.Abort, KeyboardInterrupt):
            raise
        except BrokenPipeError:
            raise click.exceptions.Exit(1) from None
        except Exception as exc:
            converted = _convert_validation(exc)
            if converted is not None:
                _fail(converted)
            _unexpected(exc)
            raise click.exceptions.Exit(1) from None


def _convert_validation(exc: Exception) -> GoatError | None:
    """A pydantic ``ValidationError`` that escaped a provider is bad input (exit 2)."""
    try:
        from pydantic import ValidationError
    except ImportError:  # pragma: no cover - pydantic is a core dependency
        return None
    if not isinstance(exc, ValidationError):
        return None
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors()
    )
    return BadInput(f"invalid {exc.title}: {problems}")


def _unexpected(exc: BaseException) -> None:
    if _debug():
        import traceback

        traceback.print_exception(exc, file=sys.stderr)
    _err(
        f"goat: error: unexpected {type(exc).__name__}: {_one_line(str(exc))} "
        f"(rerun with {_BUILTIN_DEBUG_ENV}=1 for the traceback)"
    )


class _Stderr:
    """``sys.stderr`` looked up at every write, so log lines follow a redirected stderr
    (and never hit a stream closed after an earlier redirection ended)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()

    def isatty(self) -> bool:
        return sys.stderr.isatty()


def _configure_logging(level: str | None = None) -> None:
    """Console logs on stderr at WARNING (``GOAT_LOG_LEVEL``, ``GOAT_DEBUG=1`` for DEBUG);
    ``GOAT_LOG_FORMAT=json`` for JSON lines. stdout stays pure command output.

    :param level: a level for this command instead of the default (``goat plugins`` uses
        ``error``: the load failures it would warn about are its output).
    """
    from goat_core.logs import configure

    if _debug():
        level = "debug"
    elif level is None:
        level = os.environ.get("GOAT_LOG_LEVEL", "warning")
    as_json = os.environ.get("GOAT_LOG_FORMAT", "").strip().lower() == "json"
    configure(json=as_json, level=level, stream=cast("TextIO", _Stderr()))


def _version() -> str:
    from goat_core._version import __version__

    return __version__


@click.group(cls=GoatGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=_version(), prog_name="goat")
def cli() -> None:
    """GOAT Memory: scoped memory for agents, with pluggable providers.

    Global memory is used unless a command gets --pen ID. Exit codes: 0 ok, 2 bad input,
    3 not found or ambiguous, 4 not supported, 5 conflict or rejected, 6 unavailable.
    """
    _configure_logging()


# -- plugins, providers, scope ----------------------------------------------------------------
@cli.command("plugins")
@click.option("--check", is_flag=True, help="Exit 6 if any plugin failed to load.")
@_json_option
def plugins_cmd(check: bool, as_json: bool) -> None:
    """List installed plugins, their providers and capabilities, and load failures."""
    _configure_logging("error")  # failures are this command's output, not warnings
    registry = _registry(strict=False)
    infos = registry.plugin_infos()
    failures = registry.failures
    if as_json:
        _emit_json(
            {
                "plugins": [
                    {
                        "plugin": i.name,
                        "distribution": i.distribution,
                        "version": i.version,
                        "builtin": i.builtin,
                        "hooks": list(i.hooks),
                        "providers": list(i.providers),
                        "capabilities": i.capabilities,
                    }
                    for i in infos
                ],
                "failures": [
                    {
                        "plugin": f.plugin,
                        "distribution": f.distribution,
                        "version": f.version,
                        "kind": f.kind,
                        "error": f.error,
                    }
                    for f in failures
                ],
            }
        )
    else:
        rows = []
        for i in infos:
            caps = "; ".join(f"{p}: {', '.join(c)}" for p, c in i.capabilities.items())
            rows.append(
                [
                    i.name,
                    i.distribution or "-",
                    i.version or "-",
                    ", ".join(i.providers) or "-",
                    caps or "-",
                ]
            )
        click.echo(_table(rows, ["PLUGIN", "DISTRIBUTION", "VERSION", "PROVIDERS", "CAPABILITIES"]))
        if failures:
            click.echo("")
            click.echo("Failed to load:")
            click.echo(
                _table(
                    [
                        [f.plugin, f.distribution or "-", f.kind, _one_line(f.error)]
                        for f in failures
                    ],
                    ["PLUGIN", "DISTRIBUTION", "KIND", "ERROR"],
                )
            )
            if _debug():
                for f in failures:
                    if f.traceback:
                        _err(f.traceback)
    if check and failures:
        names = ", ".join(f"{f.plugin} ({f.kind}: {_one_line(f.error)})" for f in failures)
        _err(f"goat: error: {len(failures)} plugin failure(s): {names}")
        raise click.exceptions.Exit(6)


@cli.command("providers")
@_json_option
def providers_cmd(as_json: bool) -> None:
    """List providers: capabilities, consistency, network use and settings."""
    registry = _registry()
    specs = registry.providers()
    if as_json:
        _emit_json(
            {
                "providers": [
                    {
                        "name": s.name,
                        "display_name": s.display_name,
                        "plugin": registry.provider_owner(s.name),
                        "version": s.version,
                        "description": s.description,
                        "capabilities": sorted(c.value for c in s.capabilities),
                        "consistency": s.consistency.value,
                        "network": s.network,
                        "credentials": [c.model_dump(mode="json") for c in s.credentials],
                        "settings_schema": s.settings_schema(),
                    }
                    for s in specs.values()
                ]
            }
        )
        return
    rows = []
    for s in specs.values():
        fields = sorted(s.settings_model.model_fields)
        rows.append(
            [
                s.name,
                ", ".join(sorted(c.value for c in s.capabilities)),
                s.consistency.value,
                "yes" if s.network else "no",
                ", ".join(fields) or "-",
            ]
        )
    click.echo(_table(rows, ["PROVIDER", "CAPABILITIES", "CONSISTENCY", "NETWORK", "SETTINGS"]))


@cli.command("scope")
@_json_option
def scope_cmd(as_json: bool) -> None:
    """Show the scope the current directory resolves to, and how it was derived."""
    from goat_core.models import ScopeRequest

    resolution = _registry().resolve_scope(ScopeRequest(cwd=Path.cwd(), derive_from_cwd=True))
    data: dict[str, Any] = {
        "scope": resolution.scope.key,
        "pen_id": resolution.scope.pen_id,
        "derivation": resolution.derivation.value,
        "identity": resolution.identity,
        "detail": resolution.detail,
    }
    if as_json:
        _emit_json(data)
        return
    click.echo(
        _table(
            [
                ["scope", data["scope"]],
                ["derivation", data["derivation"]],
                ["identity", data["identity"] or "-"],
            ]
            + ([["detail", data["detail"]]] if data["detail"] else [])
        )
    )


# -- bindings ---------------------------------------------------------------------------------
def _outcome_lines(outcome: Any) -> list[str]:
    data = _to_json(outcome)
    if isinstance(data, dict):
        return [f"{k}: {v}" for k, v in data.items() if v not in (None, "", [], {})]
    return [str(data)]


def _api_key_option(from_stdin: bool, prompt: bool) -> str | None:
    """The key ``--api-key-stdin`` or ``--api-key-prompt`` asked for, or ``None``.

    :raises click.UsageError: both flags. :raises BadInput: no key given, or several lines.
    """
    if from_stdin and prompt:
        raise click.UsageError("give either --api-key-stdin or --api-key-prompt, not both")
    if from_stdin:
        from goat_core.credentials import read_secret_from_stdin

        return read_secret_from_stdin(sys.stdin)
    if prompt:
        from goat_core.credentials import prompt_secret

        return prompt_secret()
    return None


@cli.command("bind")
@_scope_choice
@click.argument("provider")
@_set_option
@click.option("--api-key-stdin", is_flag=True, help="Read the API key from stdin (one line).")
@click.option("--api-key-prompt", is_flag=True, help="Ask for the API key (not echoed).")
@click.option("--no-connect", is_flag=True, help="Save without connecting to a remote provider.")
@_json_option
@_home_option
def bind_cmd(
    global_: bool,
    pen: str | None,
    provider: str,
    sets: tuple[str, ...],
    api_key_stdin: bool,
    api_key_prompt: bool,
    no_connect: bool,
    as_json: bool,
    home: Path | None,
) -> None:
    """Bind PROVIDER to a scope, replacing its binding (validated, then saved)."""
    scope = _chosen_scope(global_, pen)
    settings = _parse_sets(sets)
    api_key = _api_key_option(api_key_stdin, api_key_prompt)
    with _host(home) as host:
        outcome = host.bind(scope, provider, settings, api_key=api_key, connect=not no_connect)
        remote = host.registry.get_provider(provider).network
    if as_json:
        _emit_json(_to_json(outcome))
    else:
        for line in _bind_summary(outcome, scope, provider):
            click.echo(line)
        if no_connect and remote and getattr(outcome, "health", None) is None:
            where = "--global" if scope.is_global else f"--pen {scope.pen_id}"
            click.echo(f"not checked (--no-connect): `goat check {where}` connects and reports")


def _bind_summary(outcome: Any, scope: Scope, provider: str) -> list[str]:
    binding = getattr(outcome, "binding", None)
    ident = getattr(binding, "id", None)
    lines = [f"bound {provider} to {scope.key}" + (f" (binding {ident})" if ident else "")]
    health = getattr(outcome, "health", None)
    if health is not None:
        state = "connected" if health.ok else "not connected"
        lines.append(f"{state}: {health.reason}" if health.reason else state)
    elif getattr(outcome, "connected", None) is False and getattr(outcome, "reason", None):
        lines.append(f"not connected: {outcome.reason}")
    return lines


def _binding_change(action: str, past: str) -> Callable[[bool, str | None, Path | None], None]:
    def command(global_: bool, pen: str | None, home: Path | None) -> None:
        scope = _chosen_scope(global_, pen)
        with _host(home) as host:
            if action == "unbind":
                host.unbind(scope)
            else:
                host.set_enabled(scope, action == "enable")
        click.echo(f"{past} {scope.key}")

    return command


for _name, _past, _help in (
    ("unbind", "unbound", "Remove a scope's binding (Global falls back to the embedded default)."),
    ("disable", "disabled", "Turn a scope's memory off without removing its binding."),
    ("enable", "enabled", "Turn a disabled scope's memory back on."),
):
    cli.command(_name, help=_help)(_home_option(_scope_choice(_binding_change(_name, _past))))


@cli.command("check")
@_scope_choice
@_set_option
@click.option(
    "--api-key-stdin", is_flag=True, help="With --set: read a key for this test from stdin."
)
@click.option(
    "--api-key-prompt", is_flag=True, help="With --set: ask for a key for this test (not echoed)."
)
@_json_option
@_home_option
def check_cmd(
    global_: bool,
    pen: str | None,
    sets: tuple[str, ...],
    api_key_stdin: bool,
    api_key_prompt: bool,
    as_json: bool,
    home: Path | None,
) -> None:
    """Check a scope's provider now. With --set, test those settings without saving them.

    --set values replace the saved binding's settings of the same names (the rest are kept),
    so `--set bank_id=other` tests another bank on the saved server. An explicit check
    retries at once (whatever the backoff or an earlier auth failure). For a remote
    provider, a draft with the saved server, bank and credential checks the saved
    connection itself (its success refreshes it); an edited draft is tested on its own
    connection and touches nothing saved. The saved API key is only used for a draft on the
    saved server; give a key for the test with --api-key-stdin (it is not stored). Exit 0
    when healthy, 6 when not.
    """
    scope = _chosen_scope(global_, pen, default_global=True)
    draft = _parse_sets(sets) if sets else None
    if (api_key_stdin or api_key_prompt) and draft is None:
        raise click.UsageError(
            "an API key is only taken to test --set draft settings; to change the saved key, "
            "bind again with --api-key-stdin"
        )
    api_key = _api_key_option(api_key_stdin, api_key_prompt)
    with _host(home) as host:
        if draft is not None:
            draft = _over_saved(host, scope, draft)
        health = host.check(scope, draft=draft, api_key=api_key)
    if as_json:
        _emit_json(
            {
                "scope": scope.key,
                "ok": health.ok,
                "tone": health.tone.value,
                "reason": health.reason,
                "checked_at": health.checked_at.isoformat(),
                "draft": draft is not None,
                "cause": health.cause,
            }
        )
    else:
        click.echo(f"{scope.key}: {'ok' if health.ok else 'not ok'} ({health.tone.value})")
        if health.reason and health.ok:
            click.echo(f"  {health.reason}")
    if not health.ok:
        what = "the draft settings" if draft is not None else scope.key
        cause = f" ({health.cause})" if health.cause else ""
        reason = _one_line(health.reason or "no reason")
        _err(f"goat: error: check of {what} failed{cause}: {reason}")
        raise click.exceptions.Exit(6)


def _over_saved(host: Any, scope: Scope, draft: dict[str, Any]) -> dict[str, Any]:
    """``draft`` over the saved binding's settings (an unbound or legacy scope: as given)."""
    from goat_core.errors import ConfigError

    try:
        saved = host.config.selected(scope)
    except ConfigError:
        return draft
    if saved is None:
        return draft
    return {**saved.settings, **draft}


_TONE_STYLE: dict[str, dict[str, Any]] = {
    "quiet": {},
    "accent": {"fg": "cyan"},
    "warn": {"fg": "yellow", "bold": True},
    "dim": {"dim": True},
}


def _status_rows(statuses: Sequence[Any]) -> list[dict[str, Any]]:
    rows = []
    for s in statuses:
        data = _to_json(s)
        rows.append(
            {
                "scope": data.get("scope"),
                "label": data.get("label"),
                "provider": data.get("provider"),
                "tone": data.get("tone"),
                "reason": data.get("reason"),
                "last_checked": data.get("last_checked"),
            }
        )
        if data.get("cause") is not None:
            rows[-1]["cause"] = data.get("cause")
        if data.get("identity") is not None or data.get("derivation") is not None:
            rows[-1]["identity"] = data.get("identity")
            rows[-1]["derivation"] = data.get("derivation")
    return rows


def _checked_status(host: Any, request: Any) -> list[dict[str, Any]]:
    """A short live check of every enabled binding (a local stat, or the remote's cheap
    probe through the connection supervisor, at most :data:`STATUS_CHECK_SECONDS`), then
    the status rows with the fresh results. Disabled and legacy bindings are not contacted."""
    return _status_rows(host.refresh(request=request, timeout=STATUS_CHECK_SECONDS))


def _when(iso: str | None) -> str:
    """An ISO timestamp as ``YYYY-MM-DD HH:MM:SS UTC`` (``never`` for none)."""
    if not iso:
        return "never"
    from datetime import UTC, datetime

    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        return iso
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _short_reason(label: str | None, reason: str | None) -> str:
    """A row's reason without the label it repeats (the LABEL column shows it)."""
    text = _one_line(reason or "")
    if label and text.startswith(f"{label}: "):
        return text[len(label) + 2 :]
    return text


def _render_status(rows: list[dict[str, Any]]) -> str:
    table = _table(
        [
            [
                str(r["scope"]),
                str(r["label"] or "-"),
                str(r["provider"] or "-"),
                str(r["tone"]),
                _short_reason(r["label"], r["reason"]),
                str(r.get("cause") or "-"),
                _when(r["last_checked"]),
            ]
            for r in rows
        ],
        ["SCOPE", "LABEL", "PROVIDER", "TONE", "REASON", "CAUSE", "LAST CHECKED"],
    )
    lines = table.splitlines()
    styled = lines[:1]
    for r, line in zip(rows, lines[1:], strict=True):
        styled.append(click.style(line, **_TONE_STYLE.get(str(r["tone"]), {})))
    for r in rows:
        if r.get("derivation"):
            styled.append(f"{r['scope']}: derived ({r['derivation']}) from {r.get('identity')}")
    return "\n".join(styled)


@cli.command("status")
@_json_option
@click.option("--watch", is_flag=True, help=f"Re-check every {WATCH_SECONDS:g} s until Ctrl-C.")
@click.option("--interval", type=float, default=WATCH_SECONDS, hidden=True)
@click.option("--times", type=int, default=0, hidden=True, help="Stop a watch after N renders.")
@_home_option
def status_cmd(as_json: bool, watch: bool, interval: float, times: int, home: Path | None) -> None:
    """Show each scope's provider, tone, reason and cause after a short live check.

    Tones: quiet (the default, healthy), accent (a non-default binding that is valid, such as
    an attached folder), warn (broken), dim (intentionally off). `goat check` reports the
    provider's own health, so a healthy attached folder is accent here and quiet there.

    With --watch, check and render again every 15 s until Ctrl-C."""
    from goat_core.models import ScopeRequest

    rendered = 0
    request = ScopeRequest(cwd=Path.cwd(), derive_from_cwd=True)
    with _host(home) as host:
        try:
            while True:
                rows = _checked_status(host, request)
                if as_json:
                    click.echo(json.dumps({"bindings": rows}, ensure_ascii=False, default=str))
                else:
                    if watch and rendered and sys.stdout.isatty():
                        click.clear()
                    click.echo(_render_status(rows))
                rendered += 1
                if not watch or (times and rendered >= times):
                    return
                if not as_json:
                    click.echo("")
                time.sleep(interval)
        except KeyboardInterrupt:
            return


# -- memory commands --------------------------------------------------------------------------
_RECEIPT_EXIT = {"stored": 0, "queued": 0, "rejected": 5, "failed": 5, "unknown": 6}


def _store_of(memory: Any) -> str | None:
    """A shared bank's own label (``shared bank `b` on `s```), ``None`` for a scope's store."""
    from goat_core.host import scope_label

    label = getattr(memory, "label", None)
    scope = getattr(memory, "scope", None)
    if not isinstance(label, str) or scope is None or label == scope_label(scope):
        return None
    return label


def _receipt_place(receipt: Receipt, store: str | None) -> str:
    """Where a receipt's write went: the scope, or a shared bank's label (``store``) with the
    scope that only selected it."""
    return f"{store}, selected by {receipt.scope}" if store else receipt.scope


def _exit_for_receipt(receipt: Receipt) -> None:
    """The error line and exit code of a receipt that is not ``stored`` or ``queued``."""
    status = receipt.status.value
    if status in ("rejected", "failed", "unknown"):
        reason = _one_line(receipt.reason or "no reason given")
        msg = {
            "rejected": f"rejected: {reason}",
            "failed": f"the operation failed: {reason}",
            "unknown": f"the outcome is unknown (the write may or may not have happened): {reason}",
        }[status]
        _err(f"goat: error: {msg}")
    code = _RECEIPT_EXIT.get(status, 1)
    if code:
        raise click.exceptions.Exit(code)


def _report_receipt(receipt: Receipt, as_json: bool, verb: str, store: str | None = None) -> None:
    """Print a receipt (``store``: a shared bank's label, named instead of the scope alone,
    which only selected it)."""
    status = receipt.status.value
    if as_json:
        _emit_json(receipt.to_json())
    else:
        where = receipt.path or receipt.id
        in_ = _receipt_place(receipt, store)
        if status == "stored":
            line = f"{verb} {where} ({in_})" if where else f"{verb} ({in_})"
            click.echo(line)
            for removed in receipt.removed:
                if removed != where:
                    click.echo(f"  also removed {removed}")
        elif status == "queued":
            click.echo(f"queued as operation {receipt.operation_id} ({in_})")
    _exit_for_receipt(receipt)


def _read_text(text: str) -> str:
    if text == "-":
        return sys.stdin.read()
    return text


@cli.command("remember")
@click.argument("text")
@click.option("--title", "title", metavar="T", default=None, help="Append to or create this note.")
@_memory_options
def remember_cmd(
    text: str, title: str | None, pen: str | None, as_json: bool, home: Path | None
) -> None:
    """Remember TEXT ('-' reads stdin) in Global memory or --pen ID."""
    body = _read_text(text)
    with _memory(home, pen) as memory:
        receipt = memory.remember(body, title=title, source="cli")
        store = _store_of(memory)
    _report_receipt(receipt, as_json, "remembered in", store)


@cli.command("feedback")
@click.argument("text")
@click.option("--on", "on", metavar="PAGE", default=None, help="The page it is about.")
@_memory_options
def feedback_cmd(
    text: str, on: str | None, pen: str | None, as_json: bool, home: Path | None
) -> None:
    """Record feedback TEXT ('-' reads stdin), optionally about a page."""
    body = _read_text(text)
    with _memory(home, pen) as memory:
        receipt = memory.feedback(body, on=on, source="cli")
        store = _store_of(memory)
    _report_receipt(receipt, as_json, "feedback recorded in", store)


@cli.command("refresh")
@click.argument("operation_id")
@_memory_options
def refresh_cmd(operation_id: str, pen: str | None, as_json: bool, home: Path | None) -> None:
    """What became of a queued write: OPERATION_ID is the one its receipt printed.

    Exit 0 while it is stored or still queued, 5 when the provider reports it failed."""
    from goat_core.models import Receipt, ReceiptStatus

    if not operation_id.strip() or len(operation_id) > 200:
        raise click.BadParameter("an operation id is 1-200 characters", param_hint="OPERATION_ID")
    with _memory(home, pen) as memory:
        queued = Receipt(
            status=ReceiptStatus.QUEUED, operation_id=operation_id, scope=memory.scope.key
        )
        receipt = memory.refresh(queued)
        store = _store_of(memory)
    if as_json:
        _emit_json(receipt.to_json())
    else:
        place = _receipt_place(receipt, store)
        click.echo(f"operation {operation_id}: {receipt.status.value} ({place})")
    _exit_for_receipt(receipt)


@cli.command("forget")
@click.argument("page")
@_memory_options
def forget_cmd(page: str, pen: str | None, as_json: bool, home: Path | None) -> None:
    """Remove PAGE (id, path, or unique title)."""
    with _memory(home, pen) as memory:
        receipt = memory.forget(page)
        store = _store_of(memory)
    _report_receipt(receipt, as_json, "removed", store)


def _print_degraded(complete: bool, degraded: Sequence[str], more: str | None = None) -> None:
    for reason in degraded:
        _err(f"goat: warning: {_one_line(reason)}")
    if not complete and more and not degraded:
        _err(more)


@cli.command("recall")
@click.argument("query")
@click.option("--limit", type=click.IntRange(1, 100), default=10, show_default=True)
@_memory_options
def recall_cmd(query: str, limit: int, pen: str | None, as_json: bool, home: Path | None) -> None:
    """Ranked recall for QUERY (plain text, never query syntax)."""
    # a bar while a large store is first indexed, drawn by the recall's own change scan (a
    # terminal only; a separate reindex first would scan the store twice)
    progress = _Progress(enabled=not as_json and sys.stderr.isatty())
    try:
        with _memory(home, pen, progress) as memory:
            result = memory.recall(query, limit=limit)
    finally:
        progress.close()
    if as_json:
        _emit_json(result.to_json())
        return
    if not result.items:
        click.echo(f"no matches in {result.scope}")
    rows = [
        [f"{item.score:.2f}", item.path or item.id, _one_line(item.snippet)]
        for item in result.items
    ]
    if rows:
        click.echo(_table(rows, ["SCORE", "PAGE", "SNIPPET"]))
    more = None if result.complete else "goat: more matched than shown (raise --limit)"
    _print_degraded(result.complete, result.degraded, more)


@cli.command("reflect")
@click.argument("query")
@_memory_options
def reflect_cmd(query: str, pen: str | None, as_json: bool, home: Path | None) -> None:
    """Ask the provider to reason over memory about QUERY (capability reflect)."""
    with _memory(home, pen) as memory:
        reflection = memory.reflect(query)
    if as_json:
        _emit_json(_to_json(reflection))
        return
    click.echo(reflection.text)
    if reflection.based_on:
        click.echo("")
        click.echo("based on:")
        for item in reflection.based_on:
            click.echo(f"  {item.path or item.id}  {item.title}")
    _print_degraded(True, reflection.degraded)


@cli.command("pages")
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
@click.option("--cursor", metavar="C", default=None, help="Continue after a previous page.")
@_memory_options
def pages_cmd(
    limit: int, cursor: str | None, pen: str | None, as_json: bool, home: Path | None
) -> None:
    """List pages ordered by path (case-insensitively), --limit at a time."""
    with _memory(home, pen) as memory:
        listing = memory.list_pages(limit=limit, cursor=cursor)
    if as_json:
        _emit_json(listing.to_json())
        return
    rows = [[item.path or item.id, item.title] for item in listing.items]
    if rows:
        click.echo(_table(rows, ["PAGE", "TITLE"]))
    else:
        click.echo("no pages")
    more = None
    if listing.next_cursor:
        more = f"more: goat pages --cursor {listing.next_cursor}" + (f" --pen {pen}" if pen else "")
    _print_degraded(listing.complete, listing.degraded, more)


@cli.command("show")
@click.argument("page")
@_memory_options
def show_cmd(page: str, pen: str | None, as_json: bool, home: Path | None) -> None:
    """Print PAGE's body. PAGE is an id, a path (with or without .md), or a unique title or
    file name (ignoring case); when several match they are listed and the exit code is 3."""
    with _memory(home, pen) as memory:
        found = memory.get_page(page)
    if as_json:
        _emit_json(found.to_json())
        return
    body = found.body
    click.echo(body if body.endswith("\n") else body + "\n", nl=False)


_MARKS = {
    "exact": "->",
    "name": "->",
    "ambiguous": "?>",
    "missing": "!!",
    "attachment": "@@",
    "self": "##",
}


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _map_outline(link_map: LinkMap) -> str:
    """Each page (by path, case-insensitively, like ``goat pages``), then its links: ``->``
    resolved, ``?>`` ambiguous (Obsidian's pick shown), ``!!`` a missing note, ``!@`` a
    missing attachment, ``@@`` an attachment, ``##`` same-page heading or block; a closing
    line counts pages, links, and the missing notes and attachments (distinct names, as the
    HTML map counts them) with the links to them."""
    from goat_core.maphtml import missing_link_target

    by_source: dict[str, list[Any]] = {}
    for edge in link_map.edges:
        by_source.setdefault(edge.source, []).append(edge)
    titles = {n.id: n.title for n in link_map.nodes}
    lines: list[str] = []
    missing = {"note": 0, "attachment": 0}  # links
    targets: dict[str, set[str]] = {"note": set(), "attachment": set()}  # what they name
    for node in sorted(link_map.nodes, key=lambda n: ((n.path or n.id).casefold(), n.id)):
        lines.append(f"{node.path or node.id}  ({node.title})")
        rows = []
        for edge in by_source.get(node.id, []):
            res = edge.resolution.value
            mark = _MARKS.get(res, "--")
            target = edge.target if edge.target is not None else "(missing)"
            if res == "missing":
                kind, _label, key = missing_link_target(edge.raw)
                missing[kind] += 1
                targets[kind].add(key)
                if kind == "attachment":
                    mark, target = "!@", "(missing attachment)"
            elif res == "attachment":
                target = "(attachment)"
            elif res == "self":
                target = "(this page)"
            rows.append([f"  {mark}", target, edge.raw, f"[{res}]"])
        if rows:
            lines.extend(_table(rows).splitlines())
    orphans = [e for e in link_map.edges if e.source not in titles]
    for edge in orphans:
        lines.append(f"{edge.source}: {edge.raw} [{edge.resolution.value}]")
    # the same counts as the HTML map's header: distinct missing targets, as Obsidian's graph
    # draws one unresolved node per name, plus how many links point at them
    lines.append(
        f"{len(link_map.nodes)} pages, {len(link_map.edges)} links: "
        f"{missing['note']} to {_count(len(targets['note']), 'missing note')}, "
        f"{missing['attachment']} to {_count(len(targets['attachment']), 'missing attachment')}"
    )
    return "\n".join(lines)


@cli.command("map")
@click.option(
    "--html",
    "html",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    help="Write a self-contained interactive HTML graph to FILE.",
)
@_memory_options
def map_cmd(html: Path | None, pen: str | None, as_json: bool, home: Path | None) -> None:
    """Show how pages link: an outline, JSON, or (--html FILE) an interactive graph."""
    with _memory(home, pen) as memory:
        link_map = memory.link_map()
    scope = _scope(pen)
    if html is not None:
        from goat_core.maphtml import render_map_html

        page = render_map_html(link_map, title=f"GOAT Memory map: {scope.key}")
        _write_text_atomic(html, page)
    if as_json:
        _emit_json(link_map.to_json())
    elif html is not None:
        click.echo(f"wrote {html} ({len(link_map.nodes)} pages, {len(link_map.edges)} links)")
    else:
        click.echo(_map_outline(link_map) or "no pages")
    for reason in link_map.degraded:
        _err(f"goat: warning: {_one_line(reason)}")


def _write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` with :func:`goat_core.files.atomic_write` (temp file
    in the same folder, fsync, rename, folder fsync: a reader never sees half a file). A new
    file gets ``0644`` minus the umask; an existing one keeps its permissions.

    :raises BadInput: the folder does not exist.
    """
    from goat_core.files import atomic_write

    target = path.expanduser()
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise BadInput(f"cannot write {path}: folder {folder} does not exist")
    atomic_write(target, text.encode("utf-8"))


class _Progress:
    """A progress callback ``(done, total)`` drawing a click progress bar on stderr once more
    than :data:`PROGRESS_THRESHOLD` files are involved (click hides it when stderr is not a
    terminal). Safe to call from the store's worker thread: the caller waits meanwhile."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._bar: Any = None
        self._done = 0

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < PROGRESS_THRESHOLD:
            return
        if self._bar is None:
            self._bar = click.progressbar(
                length=total, label="indexing", file=sys.stderr, show_pos=True
            )
            self._bar.__enter__()
        step = done - self._done
        if step > 0:
            self._bar.update(step)
            self._done = done

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None


@cli.command("reindex")
@_memory_options
def reindex_cmd(pen: str | None, as_json: bool, home: Path | None) -> None:
    """Bring the store's search index up to date (progress on stderr for large stores)."""
    progress = _Progress(enabled=not as_json)
    try:
        with _memory(home, pen) as memory:
            counts = memory.reindex(progress=progress)
    finally:
        progress.close()
    data = dict(counts or {})
    if as_json:
        _emit_json({"scope": _scope(pen).key, **data})
    else:
        summary = ", ".join(f"{k} {v}" for k, v in data.items()) or "nothing to do"
        click.echo(f"reindexed {_scope(pen).key}: {summary}")


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point (``goat``)."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="goat")


if __name__ == "__main__":
    main()
