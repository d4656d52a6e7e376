"""The root ``goat`` group: one-line errors, exit codes, logging, lazy plugin commands."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import click

from goat_core.cli._options import _registry
from goat_core.cli._output import _BUILTIN_DEBUG_ENV, _debug, _err, _fail, _one_line
from goat_core.errors import BadInput, GoatError, PluginLoadError
from goat_core.logs import redact

if TYPE_CHECKING:
    from typing import TextIO

#: Exit status after Ctrl-C (128 + SIGINT, the shell convention).
EXIT_INTERRUPTED = 130


# -- the root group -------------------------------------------------------------------------
class GoatGroup(click.Group):
    """The root group: one-line errors, exit codes from ``GoatError.exit_code``, and plugin
    commands loaded only when a name that is not built in is asked for."""

    _plugins_loaded = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: Built-in commands not imported yet: name -> the module whose ``COMMANDS`` holds
        #: it (``goat_core/cli/_app.py`` sets it).
        self.lazy_commands: dict[str, str] = {}

    def _load_builtin(self, name: str) -> None:
        """Add the commands of ``name``'s module (every one in its ``COMMANDS``)."""
        import importlib

        module = self.lazy_commands.get(name)
        if module is None:
            return
        self.lazy_commands = {n: m for n, m in self.lazy_commands.items() if m != module}
        for command in importlib.import_module(module).COMMANDS:
            self.add_command(command)

    def _load_builtins(self) -> None:
        while self.lazy_commands:
            self._load_builtin(next(iter(self.lazy_commands)))

    def _load_plugin_commands(self, ctx: click.Context) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        self._load_builtins()  # a plugin's command never takes a built-in name
        try:
            with ctx.scope(cleanup=False):
                _registry().register_commands(self)
        except PluginLoadError:
            raise  # strict loading (GOAT_STRICT_PLUGINS=1): any failure stops the command
        except GoatError as exc:
            _err(f"goat: warning: plugin commands unavailable: {_one_line(str(exc))}")

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        self._load_builtin(cmd_name)
        command = super().get_command(ctx, cmd_name)
        if command is None and not ctx.resilient_parsing:
            self._load_plugin_commands(ctx)
            command = super().get_command(ctx, cmd_name)
        return command

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load_builtins()
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
        f"goat: error: unexpected {type(exc).__name__}: {_one_line(redact(str(exc)))} "
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


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point (``goat``). Started with its stderr closed (``2>&-``),
    Python has no ``sys.stderr``: it becomes ``os.devnull``, so progress and warnings are
    dropped rather than failing the command. With ``--json``, stdout carries the JSON
    only (:func:`~goat_core.cli._output.reserve_stdout`)."""
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # kept for the process
    args = list(argv) if argv is not None else sys.argv[1:]
    if "--json" in (args[: args.index("--")] if "--" in args else args):
        from goat_core.cli._output import reserve_stdout

        reserve_stdout()  # a plugin that prints never reaches the JSON
    cli.main(args=args, prog_name="goat")
