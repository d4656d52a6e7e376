"""What the stateful test opens and how the suite shows text (cheap: the pytest plugin
imports it for its summary), and what a contract test is doing now (for the deadline)."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from goat_core.contract import Scope
from goat_core.errors import ScopeError

__all__ = ["ACTIVITY", "STATEFUL_PEN_CANDIDATES", "codepoints", "stateful_scopes"]

#: What a contract test is doing now, when it says so (``ACTIVITY["now"]``): the deadline
#: names it when the test's own await chain does not reach the provider.
ACTIVITY: dict[str, str | None] = {"now": None}

#: Pen ids the stateful test tries to open at once, besides Global (look-alikes, and an
#: NFC/NFD twin). Those the Pen rule refuses are skipped, and the run says which.
STATEFUL_PEN_CANDIDATES = ("a", "ab", "a_b", "a%b", "a.b", "a-b", "caf\u00e9", "cafe\u0301")


def codepoints(text: str) -> str:
    """``text`` as code points, saying whether it is NFC: ``'é' = U+00E9 (NFC)``."""
    form = (
        "NFC"
        if unicodedata.is_normalized("NFC", text)
        else "NFD"
        if unicodedata.is_normalized("NFD", text)
        else "neither NFC nor NFD"
    )
    shown = text if len(text) <= 40 else text[:40] + "..."
    wanted = {
        i
        for i, c in enumerate(shown)
        for i in ((i - 1, i) if unicodedata.combining(c) else (i,))
        if ord(c) > 0x7E
    }
    points = " ".join(f"U+{ord(shown[i]):04X}" for i in sorted(wanted) if i >= 0)
    return f"{shown!r} ({form}{': ' + points if points else ''})"


def stateful_scopes(
    candidates: Iterable[str] = STATEFUL_PEN_CANDIDATES,
) -> tuple[list[Scope], list[str]]:
    """Global and each candidate Pen the Pen rule accepts (twins that normalise to one id
    are one scope), and one line per refused candidate saying why."""
    scopes = [Scope.global_()]
    refused = []
    for raw in candidates:
        try:
            scope = Scope.pen(raw)
        except ScopeError as exc:
            refused.append(f"{codepoints(raw)}: {exc}")
            continue
        if scope not in scopes:
            scopes.append(scope)
    return scopes, refused
