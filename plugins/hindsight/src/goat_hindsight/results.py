"""Validation of tool results from Hindsight's single-bank MCP endpoint (no I/O, no mcp).

Hindsight 1.1.0 answers every tool with exactly one text block holding the compact JSON of
its result plus ``structuredContent`` holding the same object (as recorded from the real
server). It reports failures two ways: argument errors and unknown tools as ``isError: true``
with a plain-text block, and errors inside a tool as a normal result whose object carries
``"error"`` or ``"status": "error"``. Both are tool rejections (:class:`ToolRejected`);
anything that is not a well-formed object is a :class:`ProtocolViolation`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from goat_hindsight.errors import BankNotFound, MemoryNotFound, ProtocolViolation, ToolRejected

__all__ = ["check_payload", "parse_result", "shape_of"]

_MAX_SHOWN = 300


def _short(text: str) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= _MAX_SHOWN else one_line[: _MAX_SHOWN - 1] + "…"


class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class RetainAck(_Loose):
    status: str
    operation_id: str


class Scores(_Loose):
    final: float | None = None


class RecallHit(_Loose):
    id: str
    text: str
    scores: Scores | None = None
    context: str | None = None
    fact_type: str | None = None


class RecallAnswer(_Loose):
    results: list[RecallHit]


class ReflectAnswer(_Loose):
    text: str


class MemoryItem(_Loose):
    id: str
    text: str
    context: str | None = None
    date: str | None = None
    fact_type: str | None = None
    type: str | None = None


class MemoryList(_Loose):
    items: list[MemoryItem]
    total: int
    limit: int | None = None
    offset: int | None = None


class BankInfo(_Loose):
    bank_id: str
    name: str | None = None


class OperationInfo(_Loose):
    status: str
    operation_id: str | None = None
    error_message: str | None = None


_SHAPES: dict[str, type[_Loose]] = {
    "retain": RetainAck,
    "recall": RecallAnswer,
    "reflect": ReflectAnswer,
    "list_memories": MemoryList,
    "get_memory": MemoryItem,
    "get_bank": BankInfo,
    "get_operation": OperationInfo,
}


def shape_of(tool: str) -> type[_Loose]:
    """The pydantic model a payload of ``tool`` must fit (extra keys allowed)."""
    return _SHAPES[tool]


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name} in JSON")


def parse_result(
    tool: str,
    *,
    is_error: bool,
    texts: Sequence[str],
    structured: Any,
    bank_id: str,
    server: str,
) -> dict[str, Any]:
    """Accept a tool result or raise a typed error.

    :param texts: the text of every text content block, in order.
    :param structured: the result's ``structuredContent`` (``None`` when absent).
    :returns: the structured object, checked against the tool's shape.
    :raises ToolRejected: ``isError`` or an error payload (a well-formed rejection).
    :raises BankNotFound: the error payload says the bank does not exist.
    :raises MemoryNotFound: ``get_memory`` of an unknown or malformed id.
    :raises ProtocolViolation: no structured object, a text block that is not the same
        JSON object, non-finite numbers, or a wrong shape.
    """
    if is_error:
        shown = _short(" ".join(texts)) or "no message"
        raise ToolRejected(f"Hindsight rejected `{tool}`: {shown}", reason=shown, tool=tool)
    if structured is None:
        raise ProtocolViolation(f"`{tool}` answered without structured content (a JSON object)")
    if not isinstance(structured, dict):
        raise ProtocolViolation(
            f"`{tool}` answered structured content that is a {type(structured).__name__}, "
            "not a JSON object"
        )
    for text in texts:
        try:
            decoded = json.loads(text, parse_constant=_refuse_constant)
        except ValueError:
            raise ProtocolViolation(
                f"`{tool}` answered a text block that is not JSON (malformed or truncated)"
            ) from None
        if decoded != structured:
            raise ProtocolViolation(
                f"`{tool}` answered a text block that disagrees with its structured content"
            )
    if not texts and not _finite(structured):
        raise ProtocolViolation(f"`{tool}` answered a non-finite number")
    check_payload(tool, structured, bank_id=bank_id, server=server)
    try:
        model = _SHAPES[tool].model_validate(structured)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "result"
        raise ProtocolViolation(
            f"`{tool}` answered a result of the wrong shape ({where}: {first['msg']})"
        ) from None
    if isinstance(model, BankInfo) and model.bank_id != bank_id:
        raise ProtocolViolation(
            f"`get_bank` answered bank {model.bank_id!r}, not the bound bank {bank_id!r}"
        )
    return structured


def check_payload(tool: str, payload: dict[str, Any], *, bank_id: str, server: str) -> None:
    """Raise for an error payload inside a normal result (``{"error": ...}`` or
    ``{"status": "error", ...}``); see :func:`parse_result`."""
    error = payload.get("error")
    status = payload.get("status")
    if error is None and status != "error":
        return
    message = error if error is not None else payload.get("message", "status is error")
    shown = _short(message if isinstance(message, str) else json.dumps(message))
    lowered = shown.lower()
    if "bank" in lowered and "not found" in lowered:
        raise BankNotFound(
            f"bank `{bank_id}` not found on `{server}` (GOAT never creates a bank: create it "
            "on the Hindsight server first, then check again)",
            bank_id=bank_id,
        )
    if tool == "get_memory" and ("not found" in lowered or "invalid memory_id" in lowered):
        raise MemoryNotFound(f"not found in bank `{bank_id}`: {shown}", bank_id=bank_id)
    raise ToolRejected(f"Hindsight rejected `{tool}`: {shown}", reason=shown, tool=tool)
