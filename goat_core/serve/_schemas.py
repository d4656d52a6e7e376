"""The JSON schemas a served tool declares: the ``outputSchema`` its ``structuredContent``
matches, and the input-schema dialect every host accepts.

Every result is an object with ``scope``; a failure adds ``error`` (``type``, ``message``)
and a success the fields of its record (``goat_core/contract/_records.py``). Each output
schema says both: the success fields or ``error`` are required (``anyOf``).

Input schemas keep to the subset of JSON Schema that Gemini's function declarations accept
(:func:`dialect_problems`): one ``type`` per schema, never a type array or ``null``. An
optional argument is one left out of ``required``, never a nullable one.

No mcp import.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

_NULLABLE_STRING: dict[str, Any] = {"anyOf": [{"type": "string"}, {"type": "null"}]}
_STRINGS: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
_ERROR: dict[str, Any] = {
    "type": "object",
    "properties": {"type": {"type": "string"}, "message": {"type": "string"}},
    "required": ["type", "message"],
}
_ITEM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "title": {"type": "string"},
        "path": _NULLABLE_STRING,
        "score": {"type": "number"},
        "snippet": {"type": "string"},
        "snippet_spans": {
            "type": "array",
            "items": {"type": "array", "items": {"type": "integer"}},
        },
        "text": {"type": "string"},
    },
    "required": ["id", "title", "score", "snippet"],
}
_SUMMARY: dict[str, Any] = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "title": {"type": "string"}, "path": _NULLABLE_STRING},
    "required": ["id", "title"],
}
_RECEIPT: dict[str, Any] = {
    "status": {"type": "string", "enum": ["stored", "queued", "rejected", "unknown"]},
    "operation_id": _NULLABLE_STRING,
    "reason": _NULLABLE_STRING,
    "id": _NULLABLE_STRING,
    "path": _NULLABLE_STRING,
}

#: Per tool: the properties of a success and which of them it always has.
_SUCCESS: dict[str, tuple[dict[str, Any], list[str]]] = {
    "recall": (
        {
            "items": {"type": "array", "items": _ITEM},
            "complete": {"type": "boolean"},
            "degraded": _STRINGS,
            "note": {"type": "string"},
        },
        ["items", "complete", "degraded"],
    ),
    "remember": (_RECEIPT, ["status"]),
    "feedback": (_RECEIPT, ["status"]),
    "reflect": (
        {
            "text": {"type": "string"},
            "based_on": {"type": "array", "items": _ITEM},
            "degraded": _STRINGS,
            "note": {"type": "string"},
        },
        ["text", "based_on"],
    ),
    "pages": (
        {
            "items": {"type": "array", "items": _SUMMARY},
            "next_cursor": _NULLABLE_STRING,
            "complete": {"type": "boolean"},
            "degraded": _STRINGS,
        },
        ["items", "complete"],
    ),
    "show": (
        {
            "id": {"type": "string"},
            "title": {"type": "string"},
            "path": _NULLABLE_STRING,
            "frontmatter": {"type": "object"},
            "body": {"type": "string"},
            "etag": _NULLABLE_STRING,
            "note": {"type": "string"},
        },
        ["id", "title", "body"],
    ),
}


def output_schema(tool: str) -> dict[str, Any]:
    """The ``outputSchema`` of tool ``tool``: a core tool's record, or, for a provider's own
    tool (whose result is its own JSON object), ``scope`` and ``error`` only."""
    properties: dict[str, Any] = {"scope": {"type": "string"}, "store": _NULLABLE_STRING}
    properties["error"] = _ERROR
    schema: dict[str, Any] = {"type": "object", "properties": properties, "required": ["scope"]}
    if tool in _SUCCESS:
        fields, required = _SUCCESS[tool]
        properties.update(fields)
        schema["anyOf"] = [{"required": required}, {"required": ["error"]}]
    return copy.deepcopy(schema)


#: The keywords a Gemini function declaration's schema takes (its ``Schema`` object).
GEMINI_KEYWORDS = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "maxItems",
        "minItems",
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "example",
        "anyOf",
        "propertyOrdering",
        "default",
        "items",
        "minimum",
        "maximum",
        "additionalProperties",
    }
)
_GEMINI_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object"})


def dialect_problems(schema: Any, where: str = "") -> Iterator[str]:
    """What in an input schema a host dialect refuses: a type array or ``null`` type (Gemini
    CLI), or a keyword outside :data:`GEMINI_KEYWORDS`. Empty when every host takes it."""
    if not isinstance(schema, Mapping):
        return
    here = where or "the schema"
    kind = schema.get("type")
    if isinstance(kind, list):
        yield f"{here}: type array {kind} (one type per schema)"
    elif kind is not None and kind not in _GEMINI_TYPES:
        yield f"{here}: type {kind!r}"
    for key in schema:
        if key not in GEMINI_KEYWORDS:
            yield f"{here}: keyword {key!r}"
    for name, sub in (schema.get("properties") or {}).items():
        yield from dialect_problems(sub, f"{where}{name}")
    if isinstance(schema.get("items"), Mapping):
        yield from dialect_problems(schema["items"], f"{where}[]")
    for sub in schema.get("anyOf") or ():
        yield from dialect_problems(sub, where)
