"""Where GOAT keeps its files: one home, from ``GOAT_HOME`` or the platform directories.

With ``GOAT_HOME`` (or ``--home DIR``) set, everything lives under it::

    <home>/memory.json          bindings and scope selection (never a secret)
    <home>/credentials.json     owner-only fallback credential store (0600, dir 0700)
    <home>/data/stores/global   the embedded default Global markdown store
    <home>/data/stores/pens/<pen_id>
    <home>/data/index/          search indexes, keyed by a hash of the store's real path
    <home>/data/locks/          cross-process lock files (never beside notes)

Without it, ``memory.json`` and ``credentials.json`` go to the platform config dir and the
rest to the platform data dir (``platformdirs``, app name ``goat-memory``).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # no pydantic on the goat command's fast path (goat_core/cli/_fast.py)
    from goat_core.contract._scope import Scope

APP_NAME = "goat-memory"
#: :attr:`GoatHome.source` of the platform directories.
PLATFORM_DEFAULT = "platform default"


@dataclass(frozen=True)
class GoatHome:
    """Resolved GOAT directories. Build with :meth:`from_env` or :meth:`at`; creates nothing."""

    config_dir: Path
    data_dir: Path
    #: Where the home came from: ``--home``, ``$GOAT_HOME``, ``platform default`` or
    #: ``given`` (:meth:`at`). Never part of equality.
    source: str = field(default="given", compare=False)

    @classmethod
    def at(cls, home: str | os.PathLike[str], *, source: str = "given") -> GoatHome:
        root = Path(home).expanduser().absolute()
        return cls(config_dir=root, data_dir=root / "data", source=source)

    @classmethod
    def from_env(cls, home: str | os.PathLike[str] | None = None) -> GoatHome:
        """``home`` if given, else ``$GOAT_HOME``, else the platform directories."""
        if home is not None and str(home):
            return cls.at(home, source="--home")
        chosen = os.environ.get("GOAT_HOME") or None
        if chosen:
            return cls.at(chosen, source="$GOAT_HOME")
        return cls.platform_default()

    @classmethod
    def platform_default(cls) -> GoatHome:
        """The platform directories, whatever the environment says."""
        import platformdirs  # only when no home is set

        return cls(
            config_dir=Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)),
            data_dir=Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)),
            source=PLATFORM_DEFAULT,
        )

    @property
    def is_platform_default(self) -> bool:
        """Neither ``--home`` nor ``$GOAT_HOME`` chose it (a host that starts servers without
        the user's environment lands here)."""
        return self.source == PLATFORM_DEFAULT

    def describe(self) -> str:
        """``<config dir> (from <source>)``, e.g. ``/home/me/g (from $GOAT_HOME)``."""
        return f"{self.config_dir} (from {self.source})"

    @property
    def config_path(self) -> Path:
        return self.config_dir / "memory.json"

    @property
    def credentials_path(self) -> Path:
        return self.config_dir / "credentials.json"

    @property
    def stores_dir(self) -> Path:
        return self.data_dir / "stores"

    @property
    def index_dir(self) -> Path:
        return self.data_dir / "index"

    @property
    def lock_dir(self) -> Path:
        return self.data_dir / "locks"

    def default_store_dir(self, scope: Scope) -> Path:
        """The default store folder of a scope (used by file providers without ``root``)."""
        if scope.pen_id is None:
            return self.stores_dir / "global"
        return self.stores_dir / "pens" / scope.pen_id

    def store_key(self, root: Path) -> str:
        """A stable 16-hex key for a store root (its resolved real path)."""
        real = os.path.realpath(root)
        return hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]

    def index_path(self, root: Path, name: str = "search") -> Path:
        """The index file of a store: ``<index_dir>/<store key>-<name>.sqlite``."""
        return self.index_dir / f"{self.store_key(root)}-{name}.sqlite"

    def lock_path(self, root: Path, name: str = "store") -> Path:
        """The lock file guarding a store's read-modify-write cycles."""
        return self.lock_dir / f"{self.store_key(root)}-{name}.lock"
