"""Which prompts skip automatic recall before a turn (:func:`is_trivial_prompt`). No pydantic:
a command hook, a process per prompt, asks it before anything else."""

from __future__ import annotations

import unicodedata

#: Prompts that never trigger automatic recall (compared case-insensitively, without
#: trailing ``.!?`` and surrounding whitespace). Slash commands (``/help``) skip too.
TRIVIAL_PROMPTS = frozenset(
    {
        "",
        "ok",
        "okay",
        "k",
        "thanks",
        "thank you",
        "thx",
        "ty",
        "yes",
        "no",
        "y",
        "n",
        "sure",
        "cool",
        "great",
        "nice",
        "ok thanks",
        "thanks!",
        "done",
        "got it",
        "perfect",
        "yep",
        "yeah",
        "nope",
        "lgtm",
        "hi",
        "hello",
        "hey",
        "bye",
        "goodbye",
    }
)


def is_trivial_prompt(prompt: str) -> bool:
    """Whether ``prompt`` skips automatic recall: empty or whitespace, an acknowledgement
    from :data:`TRIVIAL_PROMPTS`, or a slash command (``/help``)."""
    text = unicodedata.normalize("NFC", prompt).strip()
    if text.startswith("/"):
        return True
    return text.lower().rstrip(".!? ").strip() in TRIVIAL_PROMPTS
