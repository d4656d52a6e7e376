"""The Pen id rules of docs/design.md, Scopes: normalising a given id and deriving one from a
project. No pydantic: the ``goat`` command's fast path (goat_core/cli/_fast.py) uses it."""

from __future__ import annotations

import hashlib
import re
import unicodedata

from goat_core.errors import ScopeError

#: Pen ids after NFC normalisation and lowercasing (docs/design.md, Scopes).
PEN_ID_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


def normalize_pen_id(raw: str) -> str:
    """Return the canonical Pen id for ``raw`` or raise :class:`ScopeError` naming the rule.

    Rule (docs/design.md, Scopes): NFC-normalise, lowercase, then the whole id must match
    ``[a-z0-9][a-z0-9._-]{0,63}`` (1 to 64 ASCII characters). Nothing is stripped or
    replaced, so an invalid id is rejected, never widened to another scope.

    :raises ScopeError: empty, whitespace, ``/``, ``:``, ``%``, non-ASCII, too long, or a
        first character that is not a letter or digit.
    """
    if not isinstance(raw, str):
        raise ScopeError(f"Pen id must be a string, got {type(raw).__name__}")
    value = unicodedata.normalize("NFC", raw).lower()
    if PEN_ID_PATTERN.fullmatch(value):
        return value
    if not value:
        rule = "it is empty"
    elif len(value) > 64:
        rule = f"it is {len(value)} characters long (at most 64)"
    elif not value.isascii():
        rule = "it contains non-ASCII characters"
    elif not value[0].isalnum():
        rule = "it must start with a letter or digit"
    else:
        bad = sorted({c for c in value if not (c.isalnum() or c in "._-")})
        rule = "it contains " + ", ".join(repr(c) for c in bad)
    raise ScopeError(
        f"invalid Pen id {raw!r}: {rule}; Pen ids match [a-z0-9][a-z0-9._-]{{0,63}} "
        "after NFC normalisation and lowercasing"
    )


def derive_pen_id(basename: str, identity: str) -> str:
    """Derive a Pen id from a project's folder name and its identity string.

    The result is ``<basename slug>-<first 8 hex of sha256(identity)>`` (docs/design.md,
    Scopes), so two repos or folders with the same name but different identities never share
    a Pen. The slug keeps ``[a-z0-9._-]`` after NFKD folding and lowercasing, maps every other
    run to ``-``, and is cut to 55 characters so the whole id stays within 64.
    """
    folded = unicodedata.normalize("NFKD", basename).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9._-]+", "-", folded.lower()).strip("-._")[:55].strip("-._")
    digest = hashlib.sha256(identity.encode("utf-8")).hexdigest()[:8]
    return normalize_pen_id(f"{slug or 'project'}-{digest}")
