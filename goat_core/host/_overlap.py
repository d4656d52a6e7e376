"""Scopes are exclusive down to their folders: a store root bound to a scope may not be, hold
or sit inside the GOAT home or another scope's store root (docs/design.md, Bindings and
providers).

A Pen bound onto Global's folder, another Pen's folder or the GOAT home itself would read
and write another scope's notes (or GOAT's own index and config) as its own, so
:func:`check_root_overlap` refuses such a bind before anything is saved.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from goat_core.contract import Scope
from goat_core.contract._home import GoatHome
from goat_core.errors import PathError
from goat_core.host._config import Config


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _overlap(a: Path, b: Path) -> str | None:
    """How ``a`` meets ``b`` (``"is"``, ``"is inside"``, ``"holds"``), or ``None``."""
    if a == b:
        return "is"
    if b in a.parents:
        return "is inside"
    if a in b.parents:
        return "holds"
    return None


def bound_root(settings: Any) -> Path | None:
    """The explicit store root of a binding's settings (a validated settings model or the
    saved mapping), or ``None`` (no folder, or the scope's default store under the home)."""
    value = settings.get("root") if isinstance(settings, dict) else getattr(settings, "root", None)
    if isinstance(value, str) and value:
        value = Path(value)
    return value if isinstance(value, Path) else None


def check_root_overlap(home: GoatHome, config: Config, scope: Scope, settings: Any) -> None:
    """Refuse binding ``scope`` to a root that overlaps the GOAT home or another scope's root.

    :param settings: the new binding's validated settings (its ``root``, if any).
    :raises PathError: rule ``store-overlap``, naming the other scope or the home.
    """
    root = bound_root(settings)
    if root is None:
        return
    real = _real(root)
    for other, binding in config.scopes():
        if other == scope:
            continue
        theirs = bound_root(binding.settings)
        if theirs is None:
            continue
        how = _overlap(real, _real(theirs))
        if how is not None:
            where = "is already" if how == "is" else f"{how} {theirs},"
            raise PathError(
                f"store root {root} {where} the store of {other.key}: scopes are "
                "exclusive, so two scopes never share or nest their folders (rule store-overlap)",
                rule="store-overlap",
            )
    stores = _real(home.stores_dir)
    if stores == real or stores in real.parents:  # a default store GOAT keeps for a scope
        parts = real.relative_to(stores).parts
        owner = ""
        if parts[:1] == ("global",):
            owner = " (here, the store of global)"
        elif parts[:1] == ("pens",) and len(parts) > 1:
            owner = f" (here, the store of pen:{parts[1]})"
        how = "is" if stores == real else "is inside"
        raise PathError(
            f"store root {root} {how} {home.stores_dir}, the GOAT home's folder of default "
            f"stores{owner}: GOAT's own folders hold every scope's stores and indexes, never "
            "a scope's notes (rule store-overlap)",
            rule="store-overlap",
        )
    for name, folder in (("config", home.config_dir), ("data", home.data_dir)):
        how = _overlap(real, _real(folder))
        if how is None:
            continue
        raise PathError(
            f"store root {root} {how} the GOAT home's {name} folder {folder}: GOAT's own "
            "folders hold every scope's stores and indexes, never a scope's notes "
            "(rule store-overlap)",
            rule="store-overlap",
        )
