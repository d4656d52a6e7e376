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

- A file with a ``schema_version`` newer than :data:`CURRENT_SCHEMA` is refused
  (:class:`~goat_core.errors.ConfigError` naming both versions); nothing is rewritten.
- Older versions are migrated in memory only; the file changes on the next explicit
  :func:`save_config`. Version 0 is the pre-versioned shape
  ``{"bindings": {...}, "global": id, "pens": {pen_id: id}}`` (no ``schema_version``).
- A binding entry whose provider's legacy decoder (``ProviderSpec.legacy_decoder``) returns a
  reason is *legacy*: it is kept exactly as written (the entry's JSON text byte-for-byte) on
  every save until the user replaces or unbinds that scope, and it fails closed
  (:meth:`Config.selected` raises). See docs/design.md, Remote providers and the supervisor.
- Saves are atomic (same-folder dot-temp file, fsync, rename, fsync of the folder), the file
  is 0600 and a folder created for it 0700; a settings key that looks like a secret
  (``api_key``, ``token``, ``password``, ``secret``, ...) or a URL with a password refuses
  the save.
"""

from __future__ import annotations

import copy
import json
import os
import re
import stat
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from goat_core.contract import Binding, ProviderSpec, Scope
from goat_core.errors import ConfigError, Conflict, GoatError, NotFound, ScopeError, StoreUnwritable
from goat_core.filestore import atomic_write
from goat_core.host._home import GoatHome

#: The ``schema_version`` this GOAT writes.
CURRENT_SCHEMA = 1

#: ``decoder(raw_entry) -> reason | None``; a reason marks the entry legacy.
LegacyDecoder = Callable[[Mapping[str, Any]], str | None]

_SECRET_KEY = re.compile(
    r"(?:.*_)?(?:api_?key|token|access_token|refresh_token|password|passwd|secret|"
    r"client_secret|authorization|cookie|private_key|credentials?)"
)


def binding_id_for(scope: Scope) -> str:
    """The binding id ``goat bind`` uses for ``scope``: ``"global"`` or ``"pen-<pen_id>"``."""
    return "global" if scope.pen_id is None else f"pen-{scope.pen_id}"


class LegacyBinding(BaseModel):
    """A binding entry a provider declared legacy; kept byte-for-byte, never used.

    :param id: its binding id.
    :param provider: the provider name written in the entry.
    :param reason: the decoder's one-line reason (shown by ``goat status``).
    :param raw: the entry's JSON text exactly as read from the file.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    provider: str
    reason: str
    raw: str = Field(repr=False)


class Config(BaseModel):
    """The parsed ``memory.json`` (frozen; the ``with_*`` methods return changed copies).

    :param schema_version: always :data:`CURRENT_SCHEMA` in memory.
    :param bindings: usable bindings by id.
    :param selection: scope key (``"global"`` | ``"pen:<id>"``) -> binding id (of
        ``bindings`` or ``legacy``).
    :param legacy: legacy entries by binding id, kept byte-for-byte.
    :param migrated_from: the file's older schema version when it was migrated on load.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = CURRENT_SCHEMA
    bindings: dict[str, Binding] = Field(default_factory=dict)
    selection: dict[str, str] = Field(default_factory=dict)
    legacy: dict[str, LegacyBinding] = Field(default_factory=dict)
    migrated_from: int | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Config:
        if self.schema_version != CURRENT_SCHEMA:
            raise ValueError(f"schema_version must be {CURRENT_SCHEMA} in memory")
        for key, binding in self.bindings.items():
            if binding.id != key:
                raise ValueError(f"binding stored under {key!r} has id {binding.id!r}")
        for key, entry in self.legacy.items():
            if entry.id != key:
                raise ValueError(f"legacy binding stored under {key!r} has id {entry.id!r}")
            if key in self.bindings:
                raise ValueError(f"binding id {key!r} is both a binding and a legacy entry")
        for scope_key, binding_id in self.selection.items():
            if Scope.parse(scope_key).key != scope_key:
                raise ValueError(f"scope key {scope_key!r} is not canonical")
            if binding_id not in self.bindings and binding_id not in self.legacy:
                raise ValueError(f"scope {scope_key} selects unknown binding {binding_id!r}")
        return self

    # -- reading -----------------------------------------------------------------------------
    def selected_id(self, scope: Scope) -> str | None:
        """The binding id ``scope`` selects (usable or legacy), or ``None``."""
        return self.selection.get(scope.key)

    def selected(self, scope: Scope) -> Binding | None:
        """The binding ``scope`` selects, or ``None`` when it selects nothing.

        :raises ConfigError: the selected binding is legacy; it fails closed with the
            provider's reason and the command that replaces it (docs/design.md, Remote
            providers and the supervisor).
        """
        binding_id = self.selection.get(scope.key)
        if binding_id is None:
            return None
        if binding_id in self.legacy:
            entry = self.legacy[binding_id]
            raise ConfigError(
                f"binding {binding_id!r} (provider {entry.provider}) of scope {scope.key} is a "
                f"legacy entry: {entry.reason}; reconnect with `goat bind {_scope_flag(scope)} "
                f"{entry.provider} ...`",
                binding_id=binding_id,
            )
        return self.bindings[binding_id]

    def legacy_reason(self, binding_id: str) -> str | None:
        """Why binding ``binding_id`` is legacy, or ``None`` when it is not."""
        entry = self.legacy.get(binding_id)
        return entry.reason if entry is not None else None

    def scopes(self) -> list[tuple[Scope, Binding]]:
        """Every scope with a usable selected binding: Global first, then Pens by id."""
        return [
            (scope, self.bindings[bid]) for scope, bid in self._ordered() if bid in self.bindings
        ]

    def legacy_scopes(self) -> list[tuple[Scope, LegacyBinding]]:
        """Every scope whose selected binding is legacy (status shows them as broken)."""
        return [(scope, self.legacy[bid]) for scope, bid in self._ordered() if bid in self.legacy]

    def _ordered(self) -> Iterator[tuple[Scope, str]]:
        parsed = [(Scope.parse(k), v) for k, v in self.selection.items()]
        parsed.sort(key=lambda item: (item[0].pen_id is not None, item[0].pen_id or ""))
        return iter(parsed)

    # -- changing ----------------------------------------------------------------------------
    def with_binding(self, scope: Scope, binding: Binding) -> Config:
        """A copy where ``scope`` selects ``binding``.

        Binding again replaces the scope's selection; the previous binding (legacy or not)
        is dropped when no other scope selects it.

        :raises Conflict: ``binding.id`` names a different binding (or a legacy entry) that
            another scope selects; replacing it would change that scope too.
        """
        others = {k for k, v in self.selection.items() if v == binding.id and k != scope.key}
        existing = self.bindings.get(binding.id)
        if others and (binding.id in self.legacy or existing != binding):
            raise Conflict(
                f"binding id {binding.id!r} is selected by {', '.join(sorted(others))}; "
                "choose another binding id"
            )
        selection = dict(self.selection)
        selection[scope.key] = binding.id
        bindings = dict(self.bindings)
        legacy = dict(self.legacy)
        legacy.pop(binding.id, None)
        bindings[binding.id] = binding
        return self._rebuild(bindings, selection, legacy, dropped=self.selection.get(scope.key))

    def without_binding(self, scope: Scope) -> Config:
        """A copy where ``scope`` selects nothing; its binding is dropped when unused.

        :raises NotFound: ``scope`` selects no binding.
        """
        old = self.selection.get(scope.key)
        if old is None:
            raise NotFound(f"scope {scope.key} has no binding")
        selection = {k: v for k, v in self.selection.items() if k != scope.key}
        return self._rebuild(dict(self.bindings), selection, dict(self.legacy), dropped=old)

    def with_enabled(self, scope: Scope, enabled: bool) -> Config:
        """A copy with the selected binding of ``scope`` enabled or disabled.

        :raises NotFound: ``scope`` selects no binding.
        :raises ConfigError: the selected binding is legacy (it cannot be changed, only
            replaced).
        """
        binding = self.selected(scope)
        if binding is None:
            raise NotFound(f"scope {scope.key} has no binding")
        bindings = dict(self.bindings)
        bindings[binding.id] = binding.model_copy(update={"enabled": enabled})
        return self._rebuild(bindings, dict(self.selection), dict(self.legacy), dropped=None)

    def _rebuild(
        self,
        bindings: dict[str, Binding],
        selection: dict[str, str],
        legacy: dict[str, LegacyBinding],
        *,
        dropped: str | None,
    ) -> Config:
        if dropped is not None and dropped not in selection.values():
            bindings.pop(dropped, None)
            legacy.pop(dropped, None)
        return Config(
            bindings=bindings,
            selection=selection,
            legacy=legacy,
            migrated_from=self.migrated_from,
        )


def _scope_flag(scope: Scope) -> str:
    return "--global" if scope.pen_id is None else f"--pen {scope.pen_id}"


def legacy_decoders(specs: Mapping[str, ProviderSpec]) -> dict[str, LegacyDecoder]:
    """The ``decoders`` argument of :func:`load_config` from ``Registry.providers()``."""
    return {
        name: spec.legacy_decoder for name, spec in specs.items() if spec.legacy_decoder is not None
    }


# -- reading -----------------------------------------------------------------------------------
_WS = re.compile(r"[ \t\n\r]*")


def _skip(text: str, idx: int) -> int:
    match = _WS.match(text, idx)
    return match.end() if match else idx


def _member_spans(text: str, start: int) -> list[tuple[str, int, int]]:
    """``(key, value_start, value_end)`` of each member of the JSON object at ``start``.

    ``text`` must already have parsed as JSON; this only locates the raw text of values.
    """
    decoder = json.JSONDecoder()
    if text[start] != "{":
        raise ValueError("not an object")
    idx = _skip(text, start + 1)
    spans: list[tuple[str, int, int]] = []
    if text[idx] == "}":
        return spans
    while True:
        if text[idx] != '"':
            raise ValueError("expected a key")
        key, idx = json.decoder.scanstring(text, idx + 1)  # type: ignore[attr-defined]
        idx = _skip(text, idx)
        if text[idx] != ":":
            raise ValueError("expected ':'")
        idx = _skip(text, idx + 1)
        _, end = decoder.raw_decode(text, idx)
        spans.append((key, idx, end))
        idx = _skip(text, end)
        if text[idx] == ",":
            idx = _skip(text, idx + 1)
            continue
        if text[idx] == "}":
            return spans
        raise ValueError("expected ',' or '}'")


def _raw_entries(text: str) -> dict[str, str]:
    """The raw JSON text of every entry of the top-level ``bindings`` object."""
    top = _skip(text, 0)
    for key, start, _end in _member_spans(text, top):
        if key == "bindings" and text[start] == "{":
            return {k: text[s:e] for k, s, e in _member_spans(text, start)}
    return {}


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"duplicate key {key!r}")
        seen[key] = value
    return seen


def _migrate_v0(doc: dict[str, Any], where: str) -> dict[str, Any]:
    """Version 0 (pre-versioned): ``{"bindings", "global": id | null, "pens": {pen: id}}``."""
    unknown = sorted(set(doc) - {"bindings", "global", "pens"})
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)} in a version 0 file")
    selection: dict[str, str] = {}
    global_id = doc.get("global")
    if global_id is not None:
        if not isinstance(global_id, str):
            raise ConfigError(f"{where}: 'global' must be a binding id (a string)")
        selection["global"] = global_id
    pens = doc.get("pens", {})
    if not isinstance(pens, dict):
        raise ConfigError(f"{where}: 'pens' must be an object of Pen id -> binding id")
    for pen, binding_id in pens.items():
        if not isinstance(binding_id, str):
            raise ConfigError(f"{where}: pens.{pen} must be a binding id (a string)")
        try:
            key = Scope.pen(pen).key  # version 0 accepted ids in any case: normalise
        except ScopeError as exc:
            raise ConfigError(f"{where}: pens: {exc}") from exc
        if key in selection and selection[key] != binding_id:
            raise ConfigError(f"{where}: Pens {pen!r} and another id both normalise to {key}")
        selection[key] = binding_id
    return {"bindings": doc.get("bindings", {}), "selection": selection}


_MIGRATIONS: dict[int, Callable[[dict[str, Any], str], dict[str, Any]]] = {0: _migrate_v0}


def _detect_version(doc: dict[str, Any], where: str) -> int:
    if "schema_version" not in doc:
        return 0
    version = doc["schema_version"]
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise ConfigError(f"{where}: schema_version must be a non-negative integer")
    if version > CURRENT_SCHEMA:
        raise ConfigError(
            f"{where} has schema_version {version}, but this GOAT understands schema_version "
            f"{CURRENT_SCHEMA} at most; upgrade goat-core to use this file (it was left "
            "unchanged)",
            found=version,
            supported=CURRENT_SCHEMA,
        )
    return version


def load_config(home: GoatHome, *, decoders: Mapping[str, LegacyDecoder] | None = None) -> Config:
    """Read ``memory.json`` of ``home``; a missing file is an empty config.

    :param decoders: provider name -> legacy decoder (see :func:`legacy_decoders`). An entry
        of a provider without a decoder must be a valid binding.
    :raises ConfigError: unreadable or invalid JSON, a wrong shape (the message names the
        file and the problem), a newer ``schema_version``, or a decoder that raised.
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
        text = data.decode("utf-8")
        doc = json.loads(text, object_pairs_hook=_no_duplicates)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where} is not UTF-8 text (byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{where} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    except ValueError as exc:
        raise ConfigError(f"{where} is not valid: {exc}") from exc
    if not isinstance(doc, dict):
        raise ConfigError(f"{where} must hold a JSON object, not {type(doc).__name__}")

    version = _detect_version(doc, where)
    for step in range(version, CURRENT_SCHEMA):
        doc = _MIGRATIONS[step](doc, where)
    if version == CURRENT_SCHEMA:
        unknown = sorted(set(doc) - {"schema_version", "bindings", "selection"})
        if unknown:
            raise ConfigError(f"{where}: unknown top-level key(s) {', '.join(unknown)}")

    entries = doc.get("bindings", {})
    selection = doc.get("selection", {})
    if not isinstance(entries, dict):
        raise ConfigError(f"{where}: 'bindings' must be an object of binding id -> binding")
    if not isinstance(selection, dict) or not all(isinstance(v, str) for v in selection.values()):
        raise ConfigError(f"{where}: 'selection' must be an object of scope -> binding id")

    raw = _raw_entries(text)
    bindings: dict[str, Binding] = {}
    legacy: dict[str, LegacyBinding] = {}
    for binding_id, entry in entries.items():
        label = f"{where}: binding {binding_id!r}"
        if not isinstance(entry, dict):
            raise ConfigError(f"{label} must be an object")
        provider = entry.get("provider")
        if not isinstance(provider, str):
            raise ConfigError(f"{label} needs a 'provider' name")
        decoder = (decoders or {}).get(provider)
        reason = None
        if decoder is not None:
            try:
                reason = decoder(copy.deepcopy(entry))
            except Exception as exc:
                raise ConfigError(
                    f"{label}: the legacy decoder of provider {provider!r} failed: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
        if reason is not None:
            legacy[binding_id] = LegacyBinding(
                id=binding_id, provider=provider, reason=str(reason), raw=raw[binding_id]
            )
            continue
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
        if binding_id not in bindings and binding_id not in legacy:
            raise ConfigError(
                f"{where}: scope {scope_key} selects binding {binding_id!r}, which is not in "
                "'bindings'"
            )
    return Config(
        bindings=bindings,
        selection=dict(selection),
        legacy=legacy,
        migrated_from=version if version != CURRENT_SCHEMA else None,
    )


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
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return bool(parts.password or parts.username)


def _render(config: Config) -> bytes:
    marker = f"@@goat-legacy-{uuid.uuid4().hex}-"
    entries: dict[str, Any] = {}
    for binding_id in sorted({*config.bindings, *config.legacy}):
        if binding_id in config.legacy:
            entries[binding_id] = f"{marker}{binding_id}@@"
        else:
            entries[binding_id] = config.bindings[binding_id].model_dump(
                mode="json", exclude={"id"}
            )
    doc = {
        "schema_version": CURRENT_SCHEMA,
        "bindings": entries,
        "selection": dict(sorted(config.selection.items())),
    }
    text = json.dumps(doc, indent=2, ensure_ascii=False)
    for binding_id, entry in config.legacy.items():
        placeholder = json.dumps(f"{marker}{binding_id}@@", ensure_ascii=False)
        text = text.replace(placeholder, entry.raw, 1)
    return (text + "\n").encode("utf-8")


def write_owner_only(path: Path, data: bytes) -> None:
    """Atomically replace ``path`` with ``data``, owner-only (``0600``, whatever the umask).

    Uses :func:`goat_core.filestore.atomic_write` (same-folder dot-temp file, fsync, rename,
    folder fsync; on any failure the temp file is removed and ``path`` is unchanged). A
    folder this creates is ``0700``. An existing ``path`` with wider permissions is made
    ``0600`` first, so neither the temp file nor the result is ever group/world-readable.

    :raises OSError: the folder or file could not be written.
    """
    _make_private_dirs(path.parent)
    try:
        if stat.S_IMODE(os.stat(path).st_mode) != 0o600:
            os.chmod(path, 0o600)
    except FileNotFoundError:
        pass
    atomic_write(path, data, mode=0o600)


def _make_private_dirs(folder: Path) -> None:
    missing = []
    current = folder
    while not current.exists():
        missing.append(current)
        current = current.parent
    for item in reversed(missing):
        item.mkdir(mode=0o700, exist_ok=True)
        os.chmod(item, 0o700)  # mkdir's mode is filtered by the umask


def save_config(home: GoatHome, config: Config) -> Path:
    """Write ``config`` to ``home``'s ``memory.json`` atomically (0600); returns the path.

    Legacy entries are written back byte-for-byte. The file is always written at
    :data:`CURRENT_SCHEMA`.

    :raises ConfigError: a setting looks like a secret (secrets belong in the credential
        store), or the file could not be written (nothing changed).
    :raises StoreUnwritable: the home is full or read-only (exit 6; nothing changed).
    """
    problems = [p for b in config.bindings.values() for p in _secret_problems(b)]
    if problems:
        raise ConfigError(
            f"refusing to save {home.config_path}: {problems[0]}; secrets belong in the "
            "credential store (`goat bind ... --api-key-stdin`), never in memory.json"
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
