"""Model-facing memory tools: one context, validated arguments, JSON results."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from goat_core.contract import Access, ModelTool, PolicyGate, Scope
from goat_core.errors import ConfigError, ScopeError
from goat_core.host import FORBIDDEN_ARGUMENTS, Chat, GoatHome, MemoryHost, memory_tools

HERE = Path(__file__).parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import reference_provider as ref  # noqa: E402

pytestmark = pytest.mark.anyio
BANK = ref.BANK
registry = ref.make_registry


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def host(tmp_path: Path) -> Any:
    h = MemoryHost(
        home=GoatHome.at(tmp_path / "home"),
        registry=registry(ref.markdown_plugin, ref.bank_plugin),
    )
    yield h
    await h.aclose()


def _property_names(schema: Any) -> set[str]:
    names: set[str] = set()
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "properties":
                names |= set(value)
            names |= _property_names(value)
    elif isinstance(schema, list):
        for value in schema:
            names |= _property_names(value)
    return names


async def test_definitions_follow_declared_capabilities(host: MemoryHost) -> None:
    tools = memory_tools(host.context_for(Chat()))
    assert tools.names == ("recall", "remember", "reflect", "feedback", "count_notes")
    by_name = {d.name: d for d in tools.definitions}
    assert by_name["recall"].annotations == {"readOnlyHint": True, "destructiveHint": False}
    assert by_name["remember"].annotations == {"readOnlyHint": False, "destructiveHint": False}
    assert by_name["count_notes"].read_only
    for definition in tools.definitions:
        schema = definition.input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert not _property_names(schema) & FORBIDDEN_ARGUMENTS
    assert tools.to_json()[0]["inputSchema"]["required"] == ["query"]
    await host.bind(Scope.pen("b"), "reference_bank", BANK, connect=False)
    bank_tools = memory_tools(host.context_for(Chat("b")))
    assert bank_tools.names == ("recall", "remember", "reflect", "count_notes")
    assert "shared bank `team`" in bank_tools.definitions[0].description


async def test_calls_return_the_same_truth_as_the_api(host: MemoryHost) -> None:
    await host.bind(Scope.pen("p"), "markdown", {})
    tools = host.context_for(Chat("p")).tools()
    stored = await tools.call("remember", {"text": "the model remembers plums", "title": "Plums"})
    assert stored["status"] == "stored" and stored["scope"] == "pen:p"
    assert stored["store"] == "Pen `p` memory"
    recalled = await tools.call("recall", {"query": "plums"})
    assert recalled["scope"] == "pen:p" and recalled["complete"] is True
    assert recalled["degraded"] == [] and "quoted data" in recalled["note"]
    assert [i["title"] for i in recalled["items"]] == ["Plums"]
    assert (await host.context_for(Chat()).recall("plums")).items == ()  # Global untouched
    fb = await tools.call("feedback", {"text": "good", "on": "Plums"})
    assert fb["status"] == "stored"
    reflection = await tools.call("reflect", {"query": "plums?"})
    assert reflection["scope"] == "pen:p"
    assert await tools.call("count_notes", {}) == {"count": 2}


async def test_queued_receipts_stay_queued(host: MemoryHost) -> None:
    await host.bind(Scope.global_(), "reference_bank", BANK, connect=False)
    result = await host.context_for(Chat()).tools().call("remember", {"text": "later"})
    assert result["status"] == "queued" and result["operation_id"]


@pytest.mark.parametrize(
    ("name", "arguments", "error", "message"),
    [
        ("recall", {"query": "x", "scope": "global"}, "BadInput", "scope: Extra inputs"),
        ("recall", {"query": "x", "pen": "other"}, "BadInput", "pen: Extra inputs"),
        ("recall", {}, "BadInput", "query: Field required"),
        ("recall", {"query": "x", "limit": 500}, "BadInput", "limit: Input should be less"),
        ("remember", {"text": ""}, "BadInput", "text: String should have at least 1"),
        ("remember", {"text": "x" * 20_001}, "TooLarge", "at most 20000"),
        ("count_notes", {"path": "/etc"}, "BadInput", "unknown argument(s): path"),
        ("delete_everything", {}, "NotFound", "no memory tool named 'delete_everything'"),
    ],
)
async def test_bad_calls_return_errors_not_tracebacks(
    host: MemoryHost, name: str, arguments: dict[str, Any], error: str, message: str
) -> None:
    result = await host.context_for(Chat()).tools().call(name, arguments)
    assert set(result) == {"error"}
    assert result["error"]["type"] == error
    assert message in result["error"]["message"]
    assert "Traceback" not in result["error"]["message"]


async def test_non_object_arguments(host: MemoryHost) -> None:
    result = await host.context_for(Chat()).tools().call("recall", ["x"])  # type: ignore[arg-type]
    assert result == {"error": {"type": "BadInput", "message": "arguments must be a JSON object"}}


async def test_tools_of_a_scope_without_memory(host: MemoryHost) -> None:
    tools = memory_tools(host.context_for(Chat("nobody")))
    assert tools.definitions == () and "no binding" in (tools.reason or "")
    result = await tools.call("recall", {"query": "x"})
    assert result["error"]["type"] == "NotFound"


async def test_tools_take_exactly_one_context(host: MemoryHost) -> None:
    with pytest.raises(TypeError, match="exactly one scope"):
        memory_tools([host.context_for(Chat())])  # type: ignore[arg-type]


def _provider_with_tool(tool: ModelTool) -> Any:
    cls = type("ToolProvider", (ref.ReferenceProvider,), {"model_tools": lambda self: [tool]})
    _spec, plugin = ref._make("markdown", cls)
    return plugin


async def _noop(arguments: dict[str, Any], gate: PolicyGate) -> dict[str, Any]:
    return {}


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"path": {"type": "string"}}},
        {
            "type": "object",
            "properties": {
                "opts": {"type": "object", "properties": {"bank_id": {"type": "string"}}}
            },
        },
        {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"URL": {"type": "string"}}},
                }
            },
        },
    ],
)
async def test_provider_tool_with_scope_argument_is_refused(
    tmp_path: Path, schema: dict[str, Any]
) -> None:
    plugin = _provider_with_tool(
        ModelTool("sneaky", "reach elsewhere", schema, _noop, access=Access.READ)
    )
    host = MemoryHost(home=GoatHome.at(tmp_path), registry=registry(plugin))
    with pytest.raises(ScopeError, match="tool 'sneaky' takes argument"):
        memory_tools(host.context_for(Chat()))
    await host.aclose()


@pytest.mark.parametrize("name", ["recall", "Bad-Name"])
async def test_provider_tool_names_are_checked(tmp_path: Path, name: str) -> None:
    plugin = _provider_with_tool(
        ModelTool(name, "d", {"type": "object"}, _noop, access=Access.READ)
    )
    host = MemoryHost(home=GoatHome.at(tmp_path), registry=registry(plugin))
    with pytest.raises(ConfigError):
        memory_tools(host.context_for(Chat()))
    await host.aclose()


async def test_provider_tool_failure_is_an_error_result(tmp_path: Path) -> None:
    async def boom(arguments: dict[str, Any], gate: PolicyGate) -> dict[str, Any]:
        raise RuntimeError("secret internals")

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    plugin = _provider_with_tool(ModelTool("boom", "fails", schema, boom, access=Access.READ))
    host = MemoryHost(home=GoatHome.at(tmp_path), registry=registry(plugin))
    tools = memory_tools(host.context_for(Chat()))
    assert await tools.call("boom", {"n": 1}) == {
        "error": {"type": "InternalError", "message": "tool boom failed (RuntimeError)"}
    }
    assert (await tools.call("boom", {}))["error"]["message"] == ("missing required argument(s): n")
    assert (await tools.call("boom", {"n": "1"}))["error"]["message"] == (
        "argument 'n' must be of type integer"
    )
    assert (await tools.call("boom", {"n": True}))["error"]["type"] == "BadInput"
    await host.aclose()
