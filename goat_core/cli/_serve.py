"""``goat serve`` (MCP on stdio or Streamable HTTP), ``goat hook claude-code`` (the
UserPromptSubmit hook) and ``goat doctor claude-code`` (what both would resolve).

``goat serve`` diverts stdout before any plugin is imported; ``goat hook`` never imports
mcp and always exits 0 with exactly one JSON object on stdout.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import sys
import threading
from pathlib import Path
from typing import Any

import click

from goat_core.cli._options import _home, home_option, json_option
from goat_core.cli._output import _cell, emit_json
from goat_core.errors import BadInput, ProviderUnavailable

#: How to install what goat serve needs (goat-core is installed from a checkout).
_SERVE_EXTRA = "install goat-core's serve extra from a GOAT checkout (pip install '.[serve]')"


def _require_mcp() -> None:
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        raise ProviderUnavailable(f"goat serve needs the MCP SDK: {_SERVE_EXTRA}")


@click.command("serve")
@click.option(
    "--pen", "pens", metavar="ID", multiple=True, help="Serve this Pen (repeatable with --http)."
)
@click.option("--global", "global_", is_flag=True, help="Serve Global memory.")
@click.option(
    "--from-dir",
    "from_dir",
    metavar="DIR",
    default=None,
    help="Serve the scope DIR resolves to, as `goat scope` resolves it (a pin overrides).",
)
@click.option(
    "--pin",
    "pin",
    metavar="global|pen:ID",
    default=None,
    help="With --from-dir: serve this scope instead (default: "
    "$CLAUDE_PLUGIN_OPTION_SCOPE_PIN, else $GOAT_PIN; empty: derive).",
)
@click.option(
    "--http", "http", metavar="[HOST:]PORT", default=None, help="Streamable HTTP instead of stdio."
)
@click.option(
    "--allow-origin",
    "origins",
    metavar="ORIGIN",
    multiple=True,
    help="With --http: an Origin allowed to call (repeatable; default: none).",
)
@click.option(
    "--token-file",
    "token_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="With --http: an owner-only file holding the bearer token (required off loopback).",
)
@click.option(
    "--token-from-store",
    "token_store",
    is_flag=True,
    help="With --http: the bearer token from the credential store (`goat serve-token`).",
)
@home_option
def serve_cmd(
    pens: tuple[str, ...],
    global_: bool,
    from_dir: str | None,
    pin: str | None,
    http: str | None,
    origins: tuple[str, ...],
    token_file: Path | None,
    token_store: bool,
    home: Path | None,
) -> None:
    """Serve one scope's memory over MCP (stdio unless --http).

    The scope is fixed at start: --pen ID, --global, or --from-dir DIR. An unbound Pen gets no
    memory (never Global's): the server stays up and every tool says how to bind it.
    With --http, each scope named at start has its own endpoint: /mcp/global, /mcp/pen/<id>.
    """
    if pin and from_dir is None and (pens or global_):
        # a pin only overrides what --from-dir derives: beside --pen/--global it would be
        # silently ignored
        raise BadInput("--pin goes with --from-dir; --pen and --global already name the scope")
    if http is None:
        import gc

        from goat_core.serve._stdio import divert_stdout

        # start-up is mostly imports that allocate and keep everything (pydantic models):
        # the cyclic collector only costs time until the server is built (run_stdio enables
        # it again, with what start-up made frozen)
        gc.disable()
        fd = divert_stdout()  # before mcp or any plugin is imported
        _require_mcp()
        if len(pens) > 1:
            raise BadInput("stdio serves one scope: give one --pen ID (several only with --http)")
        if (token_file or token_store or origins) and http is None:
            raise BadInput("--token-file, --token-from-store and --allow-origin go with --http")
        from goat_core.serve._stdio import run_stdio

        run_stdio(
            home=_home(home),
            pen=pens[0] if pens else None,
            global_=global_,
            from_dir=from_dir,
            pin=pin,
            protocol_fd=fd,
        )
        return
    _require_mcp()
    if from_dir is not None:
        raise BadInput("--http serves scopes named at start: --global and/or --pen ID")
    from goat_core.serve._http import run_http

    run_http(
        home=_home(home),
        listen=http,
        pens=pens,
        global_=global_,
        origins=origins,
        token_file=token_file,
        token_from_store=token_store,
    )


@click.command("serve-token")
@click.option("--new", "new", is_flag=True, help="Make a new random token and store it.")
@home_option
def serve_token_cmd(new: bool, home: Path | None) -> None:
    """Keep the bearer token of `goat serve --http --token-from-store` in the credential store.

    With --new, a random token is stored (OS keyring, else an owner-only file) and printed
    once on stdout, for the client's configuration. Without it, says whether one is stored.
    """
    from goat_core.host import GoatHome
    from goat_core.serve._http import TOKEN_BINDING, TOKEN_NAME, new_token

    goat_home: GoatHome = _home(home)
    from goat_core.host import CredentialStore

    store = CredentialStore(goat_home)
    if new:
        token = new_token()
        backend = store.set(TOKEN_BINDING, TOKEN_NAME, token)
        click.echo(token)
        click.echo(f"stored in the {backend} credential store", err=True)
        return
    stored = store.get(TOKEN_BINDING, TOKEN_NAME)
    click.echo("a token is stored" if stored else "no token stored: goat serve-token --new")


# -- the hook ---------------------------------------------------------------------------------
@click.group("hook")
def hook_group() -> None:
    """Agent hooks (exit 0 always; reasons on stderr)."""


#: The longest ``--deadline`` the hook keeps (a larger one is cut to this, with a note).
_MAX_DEADLINE = 3600.0


def _number(value: str | None, default: float, name: str, *, integer: bool) -> float:
    """A finite, non-negative ``--budget`` / ``--deadline``; anything else is reported on
    stderr and the default used (the hook never fails on its arguments)."""
    if value is None:
        return default
    try:
        number = float(value)
    except ValueError:
        click.echo(f"goat hook: {name} {value!r} is not a number; using {default:g}", err=True)
        return default
    if not math.isfinite(number):
        click.echo(f"goat hook: {name} {value!r} is not finite; using {default:g}", err=True)
        return default
    if number < 0:
        click.echo(f"goat hook: {name} must not be negative; using {default:g}", err=True)
        return default
    if integer and not number.is_integer():
        click.echo(
            f"goat hook: {name} {value!r} is not a whole number; using {default:g}", err=True
        )
        return default
    if not integer and number > _MAX_DEADLINE:
        click.echo(f"goat hook: {name} {value!r} is over {_MAX_DEADLINE:g} s; using that", err=True)
        return _MAX_DEADLINE
    return int(number) if integer else number


class _FailOpenCommand(click.Command):
    """A command whose own arguments never fail it: a usage error (an unknown option, an
    option without its value) is kept in ``ctx.meta`` for the callback, which answers it
    like any other failure (Claude Code reads exit 2 of a UserPromptSubmit hook as
    "block this prompt")."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            ctx.meta["goat_hook_usage_error"] = exc.format_message()
            ctx.params = {p.name: None for p in self.params if p.name is not None}
            ctx.args = []
            return []


@hook_group.command("claude-code", cls=_FailOpenCommand)
@click.option(
    "--budget",
    "budget",
    metavar="CHARS",
    default=None,
    help="Most characters of context (default 4000).",
)
@click.option(
    "--deadline",
    "deadline",
    metavar="SECONDS",
    default=None,
    help="Give up after this long (default 3).",
)
@click.option(
    "--pin",
    "pin",
    metavar="global|pen:ID",
    default=None,
    help="As goat serve --pin (default: $CLAUDE_PLUGIN_OPTION_SCOPE_PIN, else $GOAT_PIN).",
)
@home_option
def hook_claude_code(
    budget: str | None, deadline: str | None, pin: str | None, home: Path | None
) -> None:
    """A command hook for Claude Code and Codex CLI: on UserPromptSubmit the memory block of
    the project's scope, on SessionStart the scope receipt, as additionalContext. Reads the
    hook JSON on stdin; prints exactly one JSON object; exits 0 on every failure (the
    reason goes to stderr)."""
    import gc

    from goat_core.serve._hook import MAX_INPUT_BYTES, HookResult
    from goat_core.serve._stdio import divert_stdout

    gc.disable()  # one short turn, then os._exit: the cyclic collector would only cost time
    fd = divert_stdout()
    usage = click.get_current_context().meta.get("goat_hook_usage_error")
    chars = int(_number(budget, 4000, "--budget", integer=True))
    seconds = _number(deadline, 3.0, "--deadline", integer=False)
    box: list[HookResult] = []
    if usage is not None:
        box.append(HookResult(reason=f"unusable arguments: {usage}"))

    def work() -> None:
        try:
            from goat_core.serve._hook import run_hook

            data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
            if len(data) > MAX_INPUT_BYTES:
                box.append(
                    HookResult(
                        reason=f"hook input is over the {MAX_INPUT_BYTES}-byte input limit: "
                        "no recall"
                    )
                )
                return
            text = data.decode("utf-8", "replace")
            goat_home = _home(home) if home is not None else None
            box.append(
                run_hook(
                    text,
                    env=os.environ,
                    home=goat_home,
                    budget=chars,
                    pin=pin,
                    # a running server gets 60% of the deadline: the rest is left for the
                    # keyword-only recall in this process should it not answer
                    timeout=max(0.1, seconds * 0.6),
                )
            )
        except BaseException as exc:  # fail open, whatever happened
            box.append(HookResult(reason=f"internal error ({type(exc).__name__})"))

    if not box:
        worker = threading.Thread(target=work, name="goat-hook", daemon=True)
        worker.start()
        worker.join(seconds)
    result = box[0] if box else HookResult(reason=f"deadline of {seconds:g} s passed: no context")
    answer = json.dumps(result.to_json(), ensure_ascii=False) + "\n"
    try:
        payload = answer.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (a name that is not UTF-8): JSON escapes
        payload = (json.dumps(result.to_json()) + "\n").encode("ascii")
    with contextlib.suppress(OSError):  # a closed stdout: no one to answer, still exit 0
        os.write(fd, payload)
    where = result.scope or "no scope"
    with contextlib.suppress(OSError, ValueError):
        line = f"goat hook: {where} ({result.via}): {result.reason or 'ok'}\n"
        sys.stderr.write(line.encode("utf-8", "replace").decode("utf-8"))
        sys.stderr.flush()
    os._exit(0)  # never wait on a worker past the deadline; nothing is left to flush


#: Codex CLI's hooks take the same input and output (``integrations/hosts/codex-hooks.toml``).
hook_group.add_command(
    _FailOpenCommand(
        "codex",
        callback=hook_claude_code.callback,
        params=hook_claude_code.params,
        help=hook_claude_code.help,
    )
)


# -- the doctor -------------------------------------------------------------------------------
def _line(text: str) -> None:
    """One line of a doctor's report: names and reasons shown, never sent to the terminal,
    a newline in a folder name included (:func:`goat_core.logs.visible_cell`)."""
    click.echo(_cell(text))


@click.group("doctor")
def doctor_group() -> None:
    """Check an integration's setup."""


@doctor_group.command("claude-code")
@click.option(
    "--dir",
    "directory",
    metavar="DIR",
    default=None,
    help="The project directory (default: $CLAUDE_PROJECT_DIR, else the current one).",
)
@click.option(
    "--pin",
    "pin",
    metavar="global|pen:ID",
    default=None,
    help="The plugin's scope_pin setting (default: $CLAUDE_PLUGIN_OPTION_SCOPE_PIN, else "
    "$GOAT_PIN).",
)
@json_option
@home_option
def doctor_claude_code(
    directory: str | None, pin: str | None, as_json: bool, home: Path | None
) -> None:
    """Would the plugin's server and hook resolve the scope you expect, with memory?"""
    import importlib.util

    from goat_core.cli._options import _registry
    from goat_core.errors import ScopeError
    from goat_core.host import Chat, SyncMemoryHost
    from goat_core.serve._hosts import claude_plugin_state
    from goat_core.serve._scope import bound_projects, env_pin, resolve_serve_scope

    directory = directory or os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
    plugin = claude_plugin_state(Path(directory), os.environ)
    problems: list[str] = list(plugin.problems)
    if pin is None:  # what Claude Code will pass: the plugin's saved option, else the env
        pin = plugin.scope_pin if plugin.scope_pin is not None else env_pin()
    registry = _registry()
    # the server (--from-dir) and the hook ($CLAUDE_PROJECT_DIR, else cwd) resolve through
    # this one function with the one pin setting; the plugin's tests run both commands
    goat_home = _home(home)
    try:
        server = resolve_serve_scope(
            registry, from_dir=directory, pin=pin, bound=bound_projects(goat_home)
        )
    except ScopeError as exc:
        raise ScopeError(
            f"{exc}: the plugin's goat serve would refuse to start and its hooks give no "
            f"context (scope_pin from {plugin.settings or 'the environment'})"
        ) from exc
    with SyncMemoryHost(home=goat_home, registry=registry) as host:
        context = host.context_for(Chat(project_id=server.scope.pen_id))
        label, available, reason = context.label, context.available, context.reason
        provider = context.spec.name if context.spec is not None else None
    goat = shutil.which("goat")
    if goat is None:
        problems.append("`goat` is not on PATH: Claude Code runs `goat serve` and `goat hook`")
    if importlib.util.find_spec("mcp") is None:
        problems.append(f"the MCP SDK is missing: {_SERVE_EXTRA}")
    if not available:
        problems.append(reason or f"{label} has no memory")
    data: dict[str, Any] = {
        "directory": directory,
        "home": str(goat_home.config_dir),
        "home_source": goat_home.source,
        "scope": server.scope.key,
        "how": server.how,
        "detail": server.detail,
        "identity": server.identity,
        "label": label,
        "provider": provider,
        "memory": available,
        "goat": goat,
        "problems": problems,
    }
    if as_json:
        emit_json(data)
    else:
        _line(f"directory   {directory}")
        _line(
            f"scope       {server.scope.key} ({server.how}"
            + (f": {server.identity}" if server.identity else "")
            + ")"
        )
        if server.how == "continued":
            _line(f"kept        {server.detail}")
        _line(f"home        {goat_home.describe()}")
        _line(f"memory      {label}" + (f" via {provider}" if provider else ": none"))
        _line(f"goat        {goat or 'not on PATH'}")
        for problem in problems:
            _line(f"problem     {problem}")
        if not problems:
            _line("ok          the plugin's server and hook will use this scope")
    if problems:
        raise ProviderUnavailable(f"{len(problems)} problem(s): " + "; ".join(problems))


def _served_scope_args(args: list[str]) -> dict[str, Any]:
    """The scope choice in ``goat serve`` arguments (``--pen``, ``--global``, ``--from-dir``,
    ``--pin``), as :func:`~goat_core.serve._scope.resolve_serve_scope` takes it."""
    out: dict[str, Any] = {}
    for i, arg in enumerate(args):
        value = args[i + 1] if i + 1 < len(args) else None
        if arg == "--global":
            out["global_"] = True
        elif arg in ("--pen", "--from-dir", "--pin") and value is not None:
            out[arg.lstrip("-").replace("-", "_")] = value
    return out


def _doctor_host(name: str) -> click.Command:
    from goat_core.serve._hosts import HOSTS

    host = HOSTS[name]

    @click.command(name)
    @click.option(
        "--dir",
        "directory",
        metavar="DIR",
        default=None,
        help="The project directory (default: the current one).",
    )
    @json_option
    @home_option
    def doctor(directory: str | None, as_json: bool, home: Path | None) -> None:
        from goat_core.cli._options import _registry
        from goat_core.errors import GoatError
        from goat_core.host import Chat, GoatHome, SyncMemoryHost
        from goat_core.serve._hosts import inspect_host
        from goat_core.serve._scope import bound_projects, resolve_serve_scope

        project = Path(directory or os.getcwd()).resolve()
        report = inspect_host(host, project, os.environ)
        problems = list(report.problems)
        mine = _home(home)
        data: dict[str, Any] = {
            "host": host.title,
            "config": str(report.path) if report.path else None,
            "entry": report.entry_name,
            "command": report.command,
            "args": report.args,
            "scope": None,
            "memory": False,
        }
        if report.command is not None:
            served_home = (
                GoatHome.at(report.home, source=report.home_how)
                if report.home
                else GoatHome.platform_default()
            )
            data["home"], data["home_how"] = str(served_home.config_dir), report.home_how
            if served_home.config_dir != mine.config_dir:
                problems.append(
                    f"{host.title} would start goat serve with the GOAT home "
                    f"{served_home.config_dir} ({report.home_how}), not {mine.describe()}: "
                    f"pass it with {host.home_advice}"
                )
            choice = _served_scope_args(report.args)
            if "from_dir" in choice and not os.path.isabs(choice["from_dir"]):
                # hosts start stdio servers in the project folder, or the entry's cwd
                base = Path(report.cwd) if report.cwd else project
                choice["from_dir"] = str(base / choice["from_dir"])
            try:
                registry = _registry()
                served = resolve_serve_scope(registry, **choice, bound=bound_projects(served_home))
                with SyncMemoryHost(home=served_home, registry=registry) as memory:
                    context = memory.context_for(Chat(project_id=served.scope.pen_id))
                    data["scope"], data["how"] = served.scope.key, served.how
                    data["memory"] = context.available
                    if not context.available:
                        problems.append(context.reason or f"{context.label} has no memory")
            except GoatError as exc:
                problems.append(f"goat serve {' '.join(report.args)} would fail: {exc}")
        data["problems"] = problems
        if as_json:
            emit_json(data)
        else:
            _line(f"host        {host.title}")
            _line(
                f"config      {data['config'] or 'none'}"
                + (f" [{report.entry_name}]" if report.entry_name else "")
            )
            if report.command is not None:
                _line(f"command     {report.command} {' '.join(report.args)}")
                _line(f"home        {data['home']} ({report.home_how})")
                _line(f"scope       {data['scope'] or '-'}")
            for problem in problems:
                _line(f"problem     {problem}")
            if not problems:
                _line(f"ok          {host.title} will serve this scope's memory")
        if problems:
            raise ProviderUnavailable(f"{len(problems)} problem(s): " + "; ".join(problems))

    doctor.help = (
        f"Would {host.title}'s goat serve entry start with your GOAT home and serve memory?"
    )
    return doctor


for _name in ("codex", "cursor", "vscode", "gemini", "claude-desktop"):
    doctor_group.add_command(_doctor_host(_name))


COMMANDS = (serve_cmd, serve_token_cmd, hook_group, doctor_group)
