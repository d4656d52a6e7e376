"""Credentials: the OS keyring when a real one is active, else an owner-only file.

Order of lookup for ``get(binding_id, name)`` (docs/design.md, Credentials and egress):

1. the environment variable ``GOAT_<NAME>_<BINDING_ID>`` (uppercased, non-alphanumerics as
   ``_``; for the API key ``GOAT_API_KEY_<BINDING_ID>``, see
   :func:`~goat_core.contract.credential_env_var`), never persisted;
2. the OS keyring, only when ``keyring.core.recommended(backend)`` (priority >= 1: macOS
   Keychain, Windows Credential Locker, Secret Service, KWallet). keyrings.alt's plaintext
   backend (priority 0.5) and the fail backend are not used. Every keyring call has a 3 s
   timeout, like gh; a call that times out or fails falls back to the file with a notice;
3. ``credentials.json`` under the GOAT home (:attr:`GoatHome.credentials_path
   <goat_core.host.GoatHome.credentials_path>`): file 0600, folder 0700, written atomically,
   opened with ``O_NOFOLLOW``; a file readable by group or others, or owned by someone else,
   is refused (like ssh). Shape: ``{"version": 1, "credentials": {binding_id: {name: value}}}``.

Every value handed out is registered with :func:`goat_core.logs.register_secret`, so it is
redacted from log output. Nothing here puts a value into a message, a repr or a log line.
"""

from __future__ import annotations

import getpass
import json
import os
import re
import stat
import threading
from collections.abc import Callable
from typing import IO, Any, Literal, TypeVar

from goat_core.contract import PEN_ID_PATTERN, Binding, CredentialSpec, credential_env_var
from goat_core.contract._home import GoatHome
from goat_core.errors import BadInput, CredentialError
from goat_core.fileio import write_owner_only
from goat_core.logs import get_logger, register_secret

#: Seconds any single keyring call may take before the file store is used instead.
KEYRING_TIMEOUT = 3.0
#: Keyring service name; the account is ``"<binding_id>/<name>"``.
KEYRING_SERVICE = "goat-memory"

_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
_FILE_VERSION = 1
T = TypeVar("T")

log = get_logger("goat_core.credentials")


class _KeyringTimeout(Exception):
    pass


def _check_ids(binding_id: str, name: str) -> None:
    if not isinstance(binding_id, str) or not PEN_ID_PATTERN.fullmatch(binding_id):
        raise BadInput(f"binding id {binding_id!r} must match [a-z0-9][a-z0-9._-]{{0,63}}")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise BadInput(f"credential name {name!r} must match [a-z][a-z0-9_]{{0,31}}")


def check_secret(value: str, what: str, consequence: str = "") -> None:
    """Accept a secret about to be used (stored, or sent for one check) and register it for
    redaction (it may come back in a server's error text).

    :param what: how messages name it (``"the api_key"``).
    :param consequence: appended to a message (``"; nothing was stored"``).
    :raises BadInput: empty or whitespace, or holding a line break (no header carries it).
    """
    if not isinstance(value, str) or not value.strip():
        raise BadInput(f"{what} is empty{consequence}")
    if "\n" in value or "\r" in value:
        raise BadInput(f"{what} contains a line break{consequence}")
    register_secret(value)


class CredentialStore:
    """Reads and writes the secrets of bindings (see the module docstring for the rules).

    :param home: the GOAT home (``credentials.json`` lives in its config dir).
    :param notice: ``notice(line)`` shows a one-line notice to the user (the CLI passes an
        stderr printer); default: a structlog warning.
    :param keyring_timeout: seconds per keyring call (default :data:`KEYRING_TIMEOUT`).
    """

    def __init__(
        self,
        home: GoatHome,
        *,
        notice: Callable[[str], None] | None = None,
        keyring_timeout: float = KEYRING_TIMEOUT,
    ) -> None:
        self.home = home
        self.path = home.credentials_path
        self._notice = notice
        self._timeout = keyring_timeout
        self._keyring_off = False  # set after a timeout: this store stops asking
        self._noticed: set[str] = set()

    def __repr__(self) -> str:
        return f"CredentialStore(path={str(self.path)!r})"

    # -- public API ----------------------------------------------------------------------
    def get(self, binding_id: str, name: str = "api_key") -> str | None:
        """The secret ``name`` of ``binding_id``: env override, then keyring, then file.

        :returns: the value, or ``None`` when nowhere stored.
        :raises BadInput: an invalid binding id or credential name.
        :raises CredentialError: ``credentials.json`` is unsafe (group/world-readable, not
            yours, a symlink) or unreadable.
        """
        _check_ids(binding_id, name)
        variable = credential_env_var(binding_id, name)
        value = os.environ.get(variable) or None
        if value is not None:
            shared = self._sharing(variable, binding_id, name)
            if shared:
                # look-alike ids (pen-a-b, pen-a.b, pen-a_b) map to one variable: a key set
                # for one must never reach another's server (docs/design.md, Credentials and
                # egress), so the override is ignored for all of them
                log.warning(
                    "credentials.env_override_ambiguous",
                    variable=variable,
                    bindings=sorted({binding_id, *shared}),
                )
                value = None
        if value is None:
            backend = self._keyring()
            if backend is not None:
                try:
                    value = self._call(
                        backend.get_password, KEYRING_SERVICE, _account(binding_id, name)
                    )
                except _KeyringTimeout:
                    self._timed_out()
                except Exception as exc:
                    log.warning("credentials.keyring_get_failed", error=type(exc).__name__)
        if value is None:
            value = self._read_file().get(binding_id, {}).get(name)
        if value is not None:
            register_secret(value)
        return value

    def _sharing(self, variable: str, binding_id: str, name: str) -> list[str]:
        """The other saved bindings whose override variable for ``name`` is ``variable``."""
        try:
            data = json.loads(self.home.config_path.read_bytes())
        except (OSError, ValueError):
            return []
        ids: set[str] = set()
        entries = data.get("bindings") if isinstance(data, dict) else None
        if isinstance(entries, dict):
            ids.update(k for k in entries if isinstance(k, str))
        return sorted(
            other for other in ids - {binding_id} if credential_env_var(other, name) == variable
        )

    def set(self, binding_id: str, name: str, value: str) -> Literal["keyring", "file"]:
        """Store ``value``; returns where it went.

        With a real keyring active the value goes there and any copy in the file is
        removed; otherwise (or when the keyring fails or times out) it goes to the file and
        the notice is shown once.

        :raises BadInput: an invalid id or name, or an empty value or one with a line break.
        :raises CredentialError: the file store is unsafe or cannot be written.
        """
        _check_ids(binding_id, name)
        check_secret(value, f"the {name}", "; nothing was stored")
        backend = self._keyring()
        if backend is not None:
            try:
                self._call(backend.set_password, KEYRING_SERVICE, _account(binding_id, name), value)
            except _KeyringTimeout:
                self._timed_out()
            except Exception as exc:
                log.warning("credentials.keyring_set_failed", error=type(exc).__name__)
                self._say(
                    "keyring-failed",
                    f"the OS keyring refused the key ({type(exc).__name__}); credentials are "
                    f"stored in {self.path} (owner-only)",
                )
            else:
                self._remove_from_file(binding_id, name)
                return "keyring"
        else:
            self._say(
                "file",
                f"no OS keyring is active; credentials are stored in {self.path} (owner-only)",
            )
        data = self._read_file()
        data.setdefault(binding_id, {})[name] = value
        self._write_file(data)
        return "file"

    def delete(self, binding_id: str, name: str = "api_key") -> None:
        """Remove ``name`` of ``binding_id`` from the keyring and the file (absent is fine).

        :raises CredentialError: the file store is unsafe or cannot be written.
        """
        _check_ids(binding_id, name)
        backend = self._keyring()
        if backend is not None:
            try:
                self._call(backend.delete_password, KEYRING_SERVICE, _account(binding_id, name))
            except _KeyringTimeout:
                self._timed_out()
            except Exception as exc:  # PasswordDeleteError when absent
                log.debug("credentials.keyring_delete_failed", error=type(exc).__name__)
        self._remove_from_file(binding_id, name)

    def backend(self) -> Literal["keyring", "file"]:
        """Where :meth:`set` would store a value now."""
        return "keyring" if self._keyring() is not None else "file"

    # -- keyring -------------------------------------------------------------------------
    def _keyring(self) -> Any | None:
        if self._keyring_off:
            return None
        try:
            import keyring
            import keyring.core

            backend = keyring.get_keyring()
        except Exception as exc:  # a bad PYTHON_KEYRING_BACKEND raises ModuleNotFoundError
            log.warning("credentials.keyring_unavailable", error=type(exc).__name__)
            return None
        return backend if keyring.core.recommended(backend) else None

    def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run one keyring call in a daemon thread; raise ``_KeyringTimeout`` if it hangs."""
        outcome: dict[str, Any] = {}
        done = threading.Event()

        def run() -> None:
            try:
                outcome["value"] = fn(*args)
            except BaseException as exc:
                outcome["error"] = exc
            finally:
                done.set()

        threading.Thread(target=run, name="goat-keyring", daemon=True).start()
        if not done.wait(self._timeout):
            raise _KeyringTimeout
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]  # type: ignore[no-any-return]

    def _timed_out(self) -> None:
        self._keyring_off = True
        log.warning("credentials.keyring_timeout", timeout=self._timeout)
        self._say(
            "timeout",
            f"the OS keyring did not answer within {self._timeout:g} s; credentials are stored "
            f"in {self.path} (owner-only)",
        )

    def _say(self, key: str, line: str) -> None:
        if key in self._noticed:
            return
        self._noticed.add(key)
        if self._notice is not None:
            self._notice(line)
        else:
            log.warning("credentials.notice", notice=line)

    # -- file store ----------------------------------------------------------------------
    def _read_file(self) -> dict[str, dict[str, str]]:
        path = self.path
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise CredentialError(
                f"cannot open {path}: {exc.strerror or exc} (a symlink is refused)"
            ) from exc
        with os.fdopen(fd, "rb") as handle:
            st = os.fstat(handle.fileno())
            if os.name == "posix":
                if st.st_uid != os.getuid():
                    raise CredentialError(f"{path} is not owned by you; refusing to read it")
                if st.st_mode & 0o077:
                    raise CredentialError(
                        f"{path} is readable by others (mode {stat.filemode(st.st_mode)}); "
                        f"run `chmod 600 {path}`"
                    )
            raw = handle.read()
        try:
            doc = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise CredentialError(f"{path} is not valid JSON; fix or remove it") from None
        creds = doc.get("credentials") if isinstance(doc, dict) else None
        if not isinstance(creds, dict) or not all(
            isinstance(v, dict) and all(isinstance(x, str) for x in v.values())
            for v in creds.values()
        ):
            raise CredentialError(
                f'{path} must hold {{"version": 1, "credentials": {{binding: {{name: '
                "value}}}}}}; fix or remove it"
            )
        return {str(b): {str(k): v for k, v in names.items()} for b, names in creds.items()}

    def _write_file(self, data: dict[str, dict[str, str]]) -> None:
        doc = {"version": _FILE_VERSION, "credentials": {b: n for b, n in data.items() if n}}
        try:
            write_owner_only(self.path, json.dumps(doc, indent=2, sort_keys=True).encode())
            os.chmod(self.path.parent, 0o700)
        except OSError as exc:
            raise CredentialError(f"cannot write {self.path}: {exc.strerror or exc}") from exc

    def _remove_from_file(self, binding_id: str, name: str) -> None:
        data = self._read_file()
        if name in data.get(binding_id, {}):
            del data[binding_id][name]
            self._write_file(data)


def _account(binding_id: str, name: str) -> str:
    return f"{binding_id}/{name}"


def read_secret_from_stdin(stream: IO[str]) -> str:
    """Read one secret from ``stream`` (``goat bind ... --credential-stdin``).

    Surrounding whitespace and the final line break are removed.

    :raises BadInput: nothing was given, or more than one line.
    """
    value = stream.read().strip()
    if not value:
        raise BadInput("no credential on standard input; nothing was stored")
    if "\n" in value or "\r" in value:
        raise BadInput("standard input holds more than one line; give only the credential")
    return value


def prompt_secret(prompt: str = "Credential: ") -> str:
    """Ask for a secret on the terminal without echoing it (``getpass``).

    :raises BadInput: an empty answer.
    """
    value = getpass.getpass(prompt).strip()
    if not value:
        raise BadInput("no credential entered; nothing was stored")
    return value


def missing_credential_message(
    provider: str, binding: Binding, spec: CredentialSpec | None = None
) -> str:
    """The fix-it line for a provider that lacks its key (the llm ``needs_key`` pattern).

    ``binding `pen-x` (provider hindsight) needs an API key: run `goat bind --pen x
    hindsight --credential-stdin` or set GOAT_API_KEY_PEN_X``. The scope flag is taken from
    binding ids made by :func:`goat_core.host._config.binding_id_for`; other ids show ``...``.
    """
    spec = spec if spec is not None else CredentialSpec()
    what = spec.description or spec.name
    article = "an" if what[:1].lower() in "aeiou" else "a"
    if binding.id == "global":
        where = "--global"
    elif binding.id.startswith("pen-") and PEN_ID_PATTERN.fullmatch(binding.id[4:]):
        where = f"--pen {binding.id[4:]}"
    else:
        where = "..."
    return (
        f"binding `{binding.id}` (provider {provider}) needs {article} {what}: run "
        f"`goat bind {where} {provider} --credential-stdin` or set "
        f"{credential_env_var(binding.id, spec.name)}"
    )
