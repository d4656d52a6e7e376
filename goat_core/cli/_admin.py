"""The admin commands: plugins, providers, scope, bind, unbind, disable, enable, check,
status."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from goat_core.cli._options import (
    _chosen_scope,
    _home,
    _parse_sets,
    _registry,
    _scope_choice,
    _set_option,
    home_option,
    json_option,
    open_host,
)
from goat_core.cli._output import _cell, _debug, _err, _one_line, _table, _to_json, emit_json
from goat_core.cli._root import _configure_logging
from goat_core.contract import Scope

if TYPE_CHECKING:
    from goat_core.contract import ProjectRecord, ScopeRequest
    from goat_core.host import BindingStatus, BindOutcome, SyncMemoryHost

#: ``status --watch`` re-renders this often (a recheck every 15 s, see ``docs/design.md``).
WATCH_SECONDS = 15.0
#: ``status`` waits at most this long for the live check of remote bindings.
STATUS_CHECK_SECONDS = 10.0


# -- plugins, providers, scope ----------------------------------------------------------------
@click.command("plugins")
@click.option("--check", is_flag=True, help="Exit 6 if any plugin failed to load.")
@json_option
def plugins_cmd(check: bool, as_json: bool) -> None:
    """List installed plugins, their providers and capabilities, and load failures."""
    _configure_logging("error")  # failures are this command's output, not warnings
    registry = _registry(strict=False)
    infos = registry.plugin_infos()
    failures = registry.failures
    if as_json:
        emit_json(
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


@click.command("providers")
@json_option
def providers_cmd(as_json: bool) -> None:
    """List providers: capabilities, consistency, network use and settings."""
    registry = _registry()
    specs = registry.providers()
    if as_json:
        emit_json(
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


@click.command("scope")
@click.option(
    "--adopt",
    "adopt",
    metavar="ID",
    default=None,
    help="Record this folder's project on bound Pen ID, so this folder serves it.",
)
@json_option
@home_option
def scope_cmd(adopt: str | None, as_json: bool, home: Path | None) -> None:
    """Show the scope the current directory resolves to, and how it was derived.

    A folder whose identity changed (a git remote added or changed, git init) keeps the
    bound Pen that `goat bind` recorded for it, as goat serve and the hooks do: derivation
    ``continued``, and the detail says which Pen it derives now. --adopt ID records the
    folder on Pen ID's binding (a folder moved, or bound from elsewhere)."""
    from goat_core.contract import ScopeRequest
    from goat_core.serve._scope import ServeScope, bound_projects, continued

    if adopt is not None:
        _adopt(Scope.pen(adopt), home)

    resolution = _registry().resolve_scope(ScopeRequest(cwd=Path.cwd(), derive_from_cwd=True))
    derived = ServeScope(
        resolution.scope,
        resolution.derivation.value,
        resolution.identity,
        resolution.detail,
        str(Path.cwd()),
    )
    served = continued(derived, bound_projects(_home(home)))
    data: dict[str, Any] = {
        "scope": served.scope.key,
        "pen_id": served.scope.pen_id,
        "derivation": served.how,
        "identity": served.identity,
        "detail": served.detail,
    }
    if as_json:
        emit_json(data)
        return
    click.echo(
        _table(
            [
                ["scope", _cell(data["scope"])],
                ["derivation", _cell(data["derivation"])],
                ["identity", _cell(data["identity"] or "-")],
            ]
            + ([["detail", _cell(data["detail"])]] if data["detail"] else [])
        )
    )


def _adopt(scope: Scope, home: Path | None) -> None:
    from goat_core.errors import BadInput
    from goat_core.scope import project_record

    record = project_record(Path.cwd())
    if record is None:
        raise BadInput(f"{Path.cwd()} is never a project (the home folder or /)")
    with open_host(home) as host:
        host.adopt(scope, record)
    click.echo(f"recorded {_cell(record.location)} on {scope.key}", err=True)


# -- bindings ---------------------------------------------------------------------------------
def _api_key_option(from_stdin: bool, prompt: bool) -> str | None:
    """The credential ``--credential-stdin`` or ``--credential-prompt`` (alias
    ``--api-key-stdin``, ``--api-key-prompt``) asked for, or ``None``.

    :raises click.UsageError: both flags. :raises BadInput: no key given, or several lines.
    """
    if from_stdin and prompt:
        raise click.UsageError("give either --credential-stdin or --credential-prompt, not both")
    if from_stdin:
        from goat_core.host._credentials import read_secret_from_stdin

        return read_secret_from_stdin(sys.stdin)
    if prompt:
        from goat_core.host._credentials import prompt_secret

        return prompt_secret()
    return None


def _here_project(scope: Scope) -> ProjectRecord | None:
    """The current folder's project record when ``scope`` is the Pen it derives (so a later
    change of its identity keeps this Pen), else ``None``."""
    from goat_core.contract import ScopeRequest
    from goat_core.errors import GoatError
    from goat_core.scope import project_record

    if scope.pen_id is None:
        return None
    try:
        cwd = Path.cwd()
        derived = _registry().resolve_scope(ScopeRequest(cwd=cwd, derive_from_cwd=True))
        return project_record(cwd) if derived.scope == scope else None
    except (GoatError, OSError):
        return None


@click.command("bind")
@_scope_choice
@click.argument("provider")
@_set_option
@click.option(
    "--credential-stdin",
    "--api-key-stdin",
    "api_key_stdin",
    is_flag=True,
    help="Read the provider's credential (an API key, a password) from stdin (one line).",
)
@click.option(
    "--credential-prompt",
    "--api-key-prompt",
    "api_key_prompt",
    is_flag=True,
    help="Ask for the provider's credential (not echoed).",
)
@click.option("--no-connect", is_flag=True, help="Save without connecting to a remote provider.")
@json_option
@home_option
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
    project = _here_project(scope)
    with open_host(home) as host:
        outcome = host.bind(
            scope, provider, settings, api_key=api_key, connect=not no_connect, project=project
        )
        remote = host.registry.get_provider(provider).network
    if as_json:
        emit_json(_to_json(outcome))
    else:
        for line in _bind_summary(outcome, scope, provider):
            click.echo(line)
        if no_connect and remote and outcome.health is None:
            where = "--global" if scope.is_global else f"--pen {scope.pen_id}"
            click.echo(f"not checked (--no-connect): `goat check {where}` connects and reports")


def _bind_summary(outcome: BindOutcome, scope: Scope, provider: str) -> list[str]:
    ident = outcome.binding.id
    lines = [f"bound {provider} to {scope.key}" + (f" (binding {ident})" if ident else "")]
    if outcome.dropped:
        where = "--global" if scope.is_global else f"--pen {scope.pen_id}"
        names = ", ".join(outcome.dropped)
        lines.append(
            f"replaced the previous binding: {names} not given again, so back to the default "
            f"(`goat bind {where} {provider}` replaces the whole binding; repeat --set to keep "
            "a setting)"
        )
    health = outcome.health
    if health is not None:
        state = "connected" if health.ok else "not connected"
        lines.append(f"{state}: {health.reason}" if health.reason else state)
    return lines


def _binding_change(action: str, past: str) -> Callable[[bool, str | None, Path | None], None]:
    def command(global_: bool, pen: str | None, home: Path | None) -> None:
        scope = _chosen_scope(global_, pen)
        with open_host(home) as host:
            if action == "unbind":
                host.unbind(scope)
            else:
                host.set_enabled(scope, action == "enable")
        click.echo(f"{past} {scope.key}")

    return command


_BINDING_CHANGES = [
    click.command(name, help=help_)(home_option(_scope_choice(_binding_change(name, past))))
    for name, past, help_ in (
        (
            "unbind",
            "unbound",
            "Remove a scope's binding (Global falls back to the embedded default).",
        ),
        ("disable", "disabled", "Turn a scope's memory off without removing its binding."),
        ("enable", "enabled", "Turn a disabled scope's memory back on."),
    )
]


@click.command("check")
@_scope_choice
@_set_option
@click.option(
    "--credential-stdin",
    "--api-key-stdin",
    "api_key_stdin",
    is_flag=True,
    help="With --set: read a credential for this test from stdin.",
)
@click.option(
    "--credential-prompt",
    "--api-key-prompt",
    "api_key_prompt",
    is_flag=True,
    help="With --set: ask for a credential for this test (not echoed).",
)
@json_option
@home_option
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
    connection and touches nothing saved. The saved credential is only used for a draft on the
    saved server; give one for the test with --credential-stdin (it is not stored). Exit 0
    when healthy, 6 when not.
    """
    scope = _chosen_scope(global_, pen, default_global=True)
    draft = _parse_sets(sets) if sets else None
    if (api_key_stdin or api_key_prompt) and draft is None:
        raise click.UsageError(
            "a credential is only taken to test --set draft settings; to change the saved one, "
            "bind again with --credential-stdin"
        )
    api_key = _api_key_option(api_key_stdin, api_key_prompt)
    with open_host(home) as host:
        if draft is not None:
            draft = _over_saved(host, scope, draft)
        health = host.check(scope, draft=draft, api_key=api_key)
        if draft is None:  # an explicit check lets `goat hook` try a remote binding again
            from goat_core.serve import clear_hook_state

            clear_hook_state(host.home.data_dir, scope)
    if as_json:
        emit_json(
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
            click.echo("  " + _cell(health.reason))
    if not health.ok:
        what = "the draft settings" if draft is not None else scope.key
        cause = f" ({health.cause})" if health.cause else ""
        reason = _one_line(health.reason or "no reason")
        _err(f"goat: error: check of {what} failed{cause}: {reason}")
        raise click.exceptions.Exit(6)


def _over_saved(host: SyncMemoryHost, scope: Scope, draft: dict[str, Any]) -> dict[str, Any]:
    """``draft`` over the saved binding's settings (an unbound scope, or an invalid
    memory.json: as given)."""
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


def _status_rows(statuses: Sequence[BindingStatus]) -> list[dict[str, Any]]:
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


def _checked_status(host: SyncMemoryHost, request: ScopeRequest | None) -> list[dict[str, Any]]:
    """A short live check of every enabled binding (a local stat, or the remote's cheap
    probe through the connection supervisor, at most :data:`STATUS_CHECK_SECONDS`), then
    the status rows with the fresh results. Disabled bindings are not contacted."""
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
                _cell(str(r["scope"])),
                _cell(str(r["label"] or "-")),
                _cell(str(r["provider"] or "-")),
                str(r["tone"]),
                _cell(_short_reason(r["label"], r["reason"])),  # may quote a store root
                str(r.get("cause") or "-"),
                _when(r["last_checked"]),
            ]
            for r in rows
        ],
        ["SCOPE", "LABEL", "PROVIDER", "TONE", "REASON", "CAUSE", "LAST CHECKED"],
    )
    lines = table.split("\n")  # not splitlines: U+2028 is no row end
    styled = lines[:1]
    for r, line in zip(rows, lines[1:], strict=True):
        styled.append(click.style(line, **_TONE_STYLE.get(str(r["tone"]), {})))
    for r in rows:
        if r.get("derivation"):
            styled.append(
                _cell(f"{r['scope']}: derived ({r['derivation']}) from {r.get('identity')}")
            )
    return "\n".join(styled)


@click.command("status")
@json_option
@click.option("--watch", is_flag=True, help=f"Re-check every {WATCH_SECONDS:g} s until Ctrl-C.")
@click.option("--interval", type=float, default=WATCH_SECONDS, hidden=True)
@click.option("--times", type=int, default=0, hidden=True, help="Stop a watch after N renders.")
@home_option
def status_cmd(as_json: bool, watch: bool, interval: float, times: int, home: Path | None) -> None:
    """Show each scope's provider, tone, reason and cause after a short live check.

    Tones: quiet (the default, healthy), accent (a non-default binding that is valid, such as
    an attached folder), warn (broken), dim (intentionally off). `goat check` reports the
    provider's own health, so a healthy attached folder is accent here and quiet there.

    With --watch, check and render again every 15 s until Ctrl-C."""
    from goat_core.contract import ScopeRequest
    from goat_core.errors import ScopeError

    rendered = 0
    here = ScopeRequest(cwd=Path.cwd(), derive_from_cwd=True)
    request: ScopeRequest | None = here
    try:  # a folder git refuses (another user's repository) still lists the bindings
        _registry().resolve_scope(here)
    except ScopeError as exc:
        _err(f"goat: warning: this folder's Pen is not shown: {_one_line(str(exc))}")
        request = None
    with open_host(home) as host:
        try:
            while True:
                rows = _checked_status(host, request)
                if as_json:
                    emit_json({"bindings": rows}, line=True)
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


#: The admin commands, added to the root group by :mod:`goat_core.cli`.
COMMANDS: tuple[click.Command, ...] = (
    plugins_cmd,
    providers_cmd,
    scope_cmd,
    bind_cmd,
    *_BINDING_CHANGES,
    check_cmd,
    status_cmd,
)
