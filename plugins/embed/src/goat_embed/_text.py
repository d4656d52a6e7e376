"""Text as the tokenizers take it."""

from __future__ import annotations


def encodable(text: str) -> str:
    """``text`` with what UTF-8 cannot encode (a lone surrogate: an undecodable argv byte, a
    JSON ``"\\ud800"``) replaced by ``?``; tokenizers refuse such a string (``TypeError``,
    ``UnicodeEncodeError``)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text
