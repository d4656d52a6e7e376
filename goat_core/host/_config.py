"""``memory.json``: bindings and scope selection, schema-versioned, written atomically.

The file lives at :attr:`GoatHome.config_path <goat_core.host.GoatHome.config_path>` and holds
bindings and which binding each scope selects, never a secret (docs/design.md, Bindings
and providers). Current shape (``schema_version`` 1)::

    {
      "schema_version": 1,
      "bindings": {
        "global": {"provider": "markdown", "settings": {}, "enabled": true, "egress": []},
        "pen-goat": {"provider": "hindsight", "settings": {"base_url": "https://h.example"},
                     "enabled": true, "egress": ["https://h.example/mcp/goat/"]}
      },
      "selection": {"global": "global", "pen:goat": "pen-goat"}
    }

Binding entries are keyed by binding id (:func:`binding_id_for` names the one ``goat bind``
creates); ``selection`` maps a scope key (``"global"`` or ``"pen:<id>"``) to a binding id.

Rules:

- Only ``schema_version`` :data:`CURRENT_SCHEMA` is read. Any other (older, newer, missing
  or not an integer) is refused with a :class:`~goat_core.errors.ConfigError` naming the
  file and the version found; nothing is migrated or rewritten.
- Saves are atomic (same-folder dot-temp file, fsync, rename, fsync of the folder), the file
  is 0600 and a folder created for it 0700; a settings key that looks like a secret
  (``api_key``, ``token``, ``password``, ``secret``, ...) or a URL with a password refuses
  the save.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from goat_core.contract import Binding, Scope
from goat_core.contract._home import GoatHome
from goat_core.errors import ConfigError, Conflict, GoatError, NotFound, ScopeError, StoreUnwritable
from goat_core.fileio import write_owner_only

#: The ``schema_version`` this GOAT writes.
CURRENT_SCHEMA = 1

_SECRET_KEY = re.compile(
    r"(?:.*_)?(?:api_?key|token|access_token|refresh_token|password|passwd|secret|"
    r"client_secret|authorization|cookie|private_key|credentials?)"
)


def binding_id_for(scope: Scope) -> str:
    """The binding id ``goat bind`` uses for ``scope``: ``"global"`` or ``"pen-<pen_id>"``."""
    return "global" if scope.pen_id is None else f"pen-{scope.pen_id}"


class Config(BaseModel):
    """The parsed ``memory.json`` (frozen; the ``with_*`` methods return changed copies).

    :param schema_version: always :data:`CURRENT_SCHEMA` in memory.
    :param bindings: usable bindings by id.
    :param selection: scope key (``"global"`` | ``"pen:<id>"``) -> binding id of
        ``bindings``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = CURRENT_SCHEMA
    bindings: dict[str, Binding] = Field(default_factory=dict)
    selection: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> Config:
        if self.schema_version != CURRENT_SCHEMA:
            raise ValueError(f"schema_version must be {CURRENT_SCHEMA} in memory")
        for key, binding in self.bindings.items():
            if binding.id != key:
                raise ValueError(f"binding stored under {key!r} has id {binding.id!r}")
        for scope_key, binding_id in self.selection.items():
            if Scope.parse(scope_key).key != scope_key:
                raise ValueError(f"scope key {scope_key!r} is not canonical")
            if binding_id not in self.bindings:
                raise ValueError(f"scope {scope_key} selects unknown binding {binding_id!r}")
        return self

    # -- reading -----------------------------------------------------------------------------
    def selected(self, scope: Scope) -> Binding | None:
        """The binding ``scope`` selects, or ``None`` when it selects nothing."""
        binding_id = self.selection.get(scope.key)
        return None if binding_id is None else self.bindings[binding_id]

    def scopes(self) -> list[tuple[Scope, Binding]]:
        """Every scope with a usable selected binding: Global first, then Pens by id."""
        return [(scope, self.bindings[bid]) for scope, bid in self._ordered()]

    def _ordered(self) -> Iterator[tuple[Scope, str]]:
        parsed = [(Scope.parse(k), v) for k, v in self.selection.items()]
        parsed.sort(key=lambda item: (item[0].pen_id is not None, item[0].pen_id or ""))
        return iter(parsed)

    # -- changing ----------------------------------------------------------------------------
    def with_binding(self, scope: Scope, binding: Binding) -> Config:
        """A copy where ``scope`` selects ``binding``.

        Binding again replaces the scope's selection; the previous binding is dropped when
        no other scope selects it.

        :raises Conflict: ``binding.id`` names a different binding that another scope
            selects; replacing it would change that scope too.
        """
        others = {k for k, v in self.selection.items() if v == binding.id and k != scope.key}
        existing = self.bindings.get(binding.id)
        if others and existing != binding:
            raise Conflict(
                f"binding id {binding.id!r} is selected by {', '.join(sorted(others))}; "
                "choose another binding id"
            )
        selection = dict(self.selection)
        selection[scope.key] = binding.id
        bindings = dict(self.bindings)
        bindings[binding.id] = binding
        return self._rebuild(bindings, selection, dropped=self.selection.get(scope.key))

    def without_binding(self, scope: Scope) -> Config:
        """A copy where ``scope`` selects nothing; its binding is dropped when unused.

        :raises NotFound: ``scope`` selects no binding.
        """
        old = self.selection.get(scope.key)
        if old is None:
            raise NotFound(f"scope {scope.key} has no binding")
        selection = {k: v for k, v in self.selection.items() if k != scope.key}
        return self._rebuild(dict(self.bindings), selection, dropped=old)

    def with_enabled(self, scope: Scope, enabled: bool) -> Config:
        """A copy with the selected binding of ``scope`` enabled or disabled.

        :raises NotFound: ``scope`` selects no binding.
        """
        binding = self.selected(scope)
        if binding is None:
            raise NotFound(f"scope {scope.key} has no binding")
        bindings = dict(self.bindings)
        bindings[binding.id] = binding.model_copy(update={"enabled": enabled})
        return self._rebuild(bindings, dict(self.selection), dropped=None)

    @staticmethod
    def _rebuild(
        bindings: dict[str, Binding], selection: dict[str, str], *, dropped: str | None
    ) -> Config:
        if dropped is not None and dropped not in selection.values():
            bindings.pop(dropped, None)
        return Config(bindings=bindings, selection=selection)


# -- reading -----------------------------------------------------------------------------------
def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"duplicate key {key!r}")
        seen[key] = value
    return seen


def _check_version(doc: dict[str, Any], where: str) -> None:
    """Refuse every ``schema_version`` but :data:`CURRENT_SCHEMA`; the file is left as is."""
    version = doc.get("schema_version")
    if type(version) is int and version == CURRENT_SCHEMA:
        return
    if "schema_version" not in doc:
        found = "no schema_version"
    else:
        found = f"schema_version {json.dumps(version, ensure_ascii=False)}"
    if type(version) is int and version > CURRENT_SCHEMA:
        fix = "upgrade goat-core to use this file"
    else:
        fix = "move it aside and bind again with `goat bind`"
    raise ConfigError(
        f"{where} has {found}, but this GOAT reads schema_version {CURRENT_SCHEMA} only; "
        f"{fix} (it was left unchanged)",
        found=version,
        supported=CURRENT_SCHEMA,
    )


def load_config(home: GoatHome) -> Config:
    """Read ``memory.json`` of ``home``; a missing file is an empty config.

    :raises ConfigError: unreadable or invalid JSON, a wrong shape, or a ``schema_version``
        other than :data:`CURRENT_SCHEMA` (the message names the file and the problem;
        nothing is written).
    """
    path = home.config_path
    where = str(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Config()
    except OSError as exc:
        raise ConfigError(f"cannot read {where}: {exc.strerror or exc}") from exc
    try:
        doc = json.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where} is not UTF-8 text (byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{where} is not valid JSON: {exc.msg.removesuffix(' at')} (line {exc.lineno}, "
            f"column {exc.colno})"
        ) from exc
    except ValueError as exc:
        raise ConfigError(f"{where} is not valid: {exc}") from exc
    if not isinstance(doc, dict):
        raise ConfigError(f"{where} must hold a JSON object, not {type(doc).__name__}")

    _check_version(doc, where)
    unknown = sorted(set(doc) - {"schema_version", "bindings", "selection"})
    if unknown:
        raise ConfigError(f"{where}: unknown top-level key(s) {', '.join(unknown)}")

    entries = doc.get("bindings", {})
    selection = doc.get("selection", {})
    if not isinstance(entries, dict):
        raise ConfigError(f"{where}: 'bindings' must be an object of binding id -> binding")
    if not isinstance(selection, dict) or not all(isinstance(v, str) for v in selection.values()):
        raise ConfigError(f"{where}: 'selection' must be an object of scope -> binding id")

    bindings: dict[str, Binding] = {}
    for binding_id, entry in entries.items():
        label = f"{where}: binding {binding_id!r}"
        if not isinstance(entry, dict):
            raise ConfigError(f"{label} must be an object")
        if not isinstance(entry.get("provider"), str):
            raise ConfigError(f"{label} needs a 'provider' name")
        if "id" in entry and entry["id"] != binding_id:
            raise ConfigError(f"{label} has a different 'id' ({entry['id']!r})")
        try:
            bindings[binding_id] = Binding.model_validate({**entry, "id": binding_id})
        except ValidationError as exc:
            raise ConfigError(f"{label} is invalid: {_first_error(exc)}") from exc

    for scope_key, binding_id in selection.items():
        try:
            canonical = Scope.parse(scope_key).key
        except ScopeError as exc:
            raise ConfigError(f"{where}: selection key {scope_key!r}: {exc}") from exc
        if canonical != scope_key:
            raise ConfigError(f"{where}: selection key {scope_key!r} should be {canonical!r}")
        if binding_id not in bindings:
            raise ConfigError(
                f"{where}: scope {scope_key} selects binding {binding_id!r}, which is not in "
                "'bindings'"
            )
    return Config(bindings=bindings, selection=dict(selection))


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    return f"{loc}: {err['msg']}" if loc else err["msg"]


# -- writing -----------------------------------------------------------------------------------
def _secret_problems(binding: Binding) -> Iterator[str]:
    def walk(value: Any, path: str) -> Iterator[str]:
        if isinstance(value, Mapping):
            for k, v in value.items():
                sub = f"{path}.{k}"
                if isinstance(k, str) and _SECRET_KEY.fullmatch(k.lower().replace("-", "_")):
                    yield f"setting {sub[1:]!r} of binding {binding.id!r} looks like a secret"
                yield from walk(v, sub)
        elif isinstance(value, list | tuple):
            for i, v in enumerate(value):
                yield from walk(v, f"{path}[{i}]")
        elif isinstance(value, str) and "://" in value and _has_password(value):
            yield f"setting {path[1:]!r} of binding {binding.id!r} is a URL with a password"

    yield from walk(binding.settings, "")
    for url in binding.egress:
        if _has_password(url):
            yield f"an egress URL of binding {binding.id!r} carries credentials"


def _has_password(url: str) -> bool:
    """Whether ``url`` carries userinfo, also when a character the user did not escape
    (``#``, ``/``, ``?`` in a password) breaks its parse: then an ``@`` after a host part
    that does not parse counts as userinfo."""
    try:
        parts = urlsplit(url)
        if parts.password or parts.username:
            return True
        valid = bool(parts.hostname) and (parts.port or 0) >= 0
    except ValueError:
        valid = False
    return not valid and "@" in url.partition("://")[2]


def _entry(binding: Binding) -> dict[str, Any]:
    """A binding as ``memory.json`` holds it: without its id (the key), and without
    ``projects`` when it records none."""
    entry: dict[str, Any] = binding.model_dump(mode="json", exclude={"id"})
    if not entry.get("projects"):
        entry.pop("projects", None)
    return entry


def _render(config: Config) -> bytes:
    doc = {
        "schema_version": CURRENT_SCHEMA,
        "bindings": {
            binding_id: _entry(config.bindings[binding_id])
            for binding_id in sorted(config.bindings)
        },
        "selection": dict(sorted(config.selection.items())),
    }
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def save_config(home: GoatHome, config: Config) -> Path:
    """Write ``config`` to ``home``'s ``memory.json`` atomically (0600); returns the path.

    The file is always written at :data:`CURRENT_SCHEMA`.

    :raises ConfigError: a setting looks like a secret (secrets belong in the credential
        store), or the file could not be written (nothing changed).
    :raises StoreUnwritable: the home is full or read-only (exit 6; nothing changed).
    """
    problems = [p for b in config.bindings.values() for p in _secret_problems(b)]
    if problems:
        raise ConfigError(
            f"refusing to save {home.config_path}: {problems[0]}; secrets belong in the "
            "credential store (`goat bind ... --credential-stdin`), never in memory.json"
        )
    path = home.config_path
    try:
        write_owner_only(path, _render(config))
    except OSError as exc:
        raise config_unwritable(exc, path) from None
    return path


def config_unwritable(exc: OSError, path: Path) -> GoatError:
    """The typed error of a failed write of the GOAT home's configuration (``memory.json``
    or its lock): :class:`StoreUnwritable` (exit 6) naming ``path`` when the home is full
    or read-only, else :class:`ConfigError`. Nothing of the change landed either way."""
    where = getattr(exc, "filename", None) or path
    typed = StoreUnwritable.from_os_error(
        exc,
        where,
        target="the GOAT home's configuration",
        outcome="memory.json was not changed",
    )
    if typed is None:
        return ConfigError(f"cannot write {where}: {exc.strerror or exc}; nothing was changed")
    return typed
