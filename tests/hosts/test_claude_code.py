"""The GOAT plugin inside the real Claude Code (``$GOAT_CLAUDE_CODE``), offline.

Each test is one ``claude -p`` run against the loopback fake Messages API: the plugin's
prompt hook must put the project's memory into the model's first request, and the plugin's
MCP server must answer the model's ``recall`` call from the same scope; with the plugin
option ``scope_pin`` set, both must serve the pinned Pen instead.
"""

from __future__ import annotations

import json

from .conftest import (
    DERIVED_SENTINEL,
    PINNED_PEN,
    PINNED_SENTINEL,
    ClaudeCode,
    Run,
    mcp_tool_name,
)
from .fake_anthropic import (
    FakeAnthropic,
    Recorded,
    call_tool_then_text,
    reply_text,
    request_text,
    tool_results,
)

RECALL = mcp_tool_name("recall")


def first_turn(run: Run) -> Recorded:
    """The first main-loop request, or a failure that shows what happened."""
    assert run.returncode == 0, f"claude -p failed\n{run.report()}"
    turns = run.fake.main_requests()
    assert turns, f"Claude Code sent no model request\n{run.report()}"
    return turns[0]


def recall_result(run: Run) -> str:
    """The text of the tool_result Claude Code sent back for the fake model's recall call."""
    turns = run.fake.main_requests()
    assert len(turns) >= 2, (
        f"expected a second model request carrying the {RECALL} result\n{run.report()}"
    )
    first = turns[0].body
    assert RECALL in [t.get("name") for t in first.get("tools") or []], (
        f"{RECALL} is not among the tools offered to the model\n{run.report()}"
    )
    results = tool_results(turns[1].body)
    assert results, f"the second model request holds no tool_result\n{run.report()}"
    result = results[0]
    content = json.dumps(result.get("content"))
    assert not result.get("is_error"), f"the recall call failed: {content}\n{run.report()}"
    return content


def assert_no_hook_error(run: Run) -> None:
    errors = run.hook_errors()
    assert not errors, "hook errors in the debug log:\n" + "\n".join(errors) + "\n" + run.report()


def test_hook_puts_project_memory_into_first_request(
    claude_code: ClaudeCode, fake_api: FakeAnthropic
) -> None:
    fake_api.script = reply_text("noted")
    run = claude_code.prompt(fake_api, "What is the project sentinel?")
    sent = request_text(first_turn(run).body)
    assert_no_hook_error(run)
    assert DERIVED_SENTINEL in sent, (
        f"the project Pen's memory ({DERIVED_SENTINEL}) is not in the first model request\n"
        f"{run.report()}"
    )
    assert PINNED_SENTINEL not in sent, f"another Pen's memory leaked in\n{run.report()}"


def test_recall_tool_serves_project_memory(
    claude_code: ClaudeCode, fake_api: FakeAnthropic
) -> None:
    fake_api.script = call_tool_then_text("__recall", {"query": "project sentinel"})
    run = claude_code.prompt(fake_api, "Recall the project sentinel.", allowed_tools=[RECALL])
    first_turn(run)
    content = recall_result(run)
    assert DERIVED_SENTINEL in content, (
        f"the recall result does not hold the project Pen's memory: {content}\n{run.report()}"
    )
    assert PINNED_SENTINEL not in content, f"recall served another Pen\n{run.report()}"


def test_scope_pin_option_pins_hook_and_server(
    claude_code: ClaudeCode, fake_api: FakeAnthropic
) -> None:
    claude_code.configure(scope_pin=f"pen:{PINNED_PEN}")
    fake_api.script = call_tool_then_text("__recall", {"query": "pinned sentinel"})
    run = claude_code.prompt(fake_api, "Recall the sentinel.", allowed_tools=[RECALL])
    sent = request_text(first_turn(run).body)
    assert_no_hook_error(run)
    assert PINNED_SENTINEL in sent, (
        f"with scope_pin=pen:{PINNED_PEN} the hook did not recall the pinned Pen\n{run.report()}"
    )
    assert DERIVED_SENTINEL not in sent, (
        f"with scope_pin set the hook still recalled the derived Pen\n{run.report()}"
    )
    derived = claude_code.derived_pen()
    assert derived not in sent, (
        f"with scope_pin set a hook still named the derived Pen {derived}\n{run.report()}"
    )
    content = recall_result(run)
    assert PINNED_SENTINEL in content, (
        f"with scope_pin set the server did not serve the pinned Pen: {content}\n{run.report()}"
    )
    assert DERIVED_SENTINEL not in content, (
        f"with scope_pin set the server still served the derived Pen\n{run.report()}"
    )


def test_session_start_receipt_reaches_the_model(
    claude_code: ClaudeCode, fake_api: FakeAnthropic
) -> None:
    """The SessionStart hook's receipt: the scope, how it was derived, the GOAT home."""
    fake_api.script = reply_text("noted")
    run = claude_code.prompt(fake_api, "hello there, what do you know?")
    sent = request_text(first_turn(run).body)
    assert_no_hook_error(run)
    pen = claude_code.derived_pen()
    for line in (
        f"GOAT memory: Pen `{pen}` memory (pen:{pen}), derived from the",
        f"GOAT home: {claude_code.goat_home} (from $GOAT_HOME).",
        "Memory: bound to markdown; use the recall and remember tools.",
    ):
        assert line in sent, f"receipt line {line!r} not in the first request\n{run.report()}"


def test_a_session_gets_each_note_once(claude_code: ClaudeCode, fake_api: FakeAnthropic) -> None:
    """Two prompts of one session about the same note: the hook gives it with the first
    only (the server keeps what each session_id was given)."""
    fake_api.script = reply_text("noted")
    ask = "What is the project sentinel?"
    run = claude_code.prompt(fake_api, ask, more=[f"{ask} Tell me again."])
    turns = run.fake.main_requests()
    assert run.returncode == 0 and len(turns) >= 2, run.report()
    assert_no_hook_error(run)
    first, second = (request_text(t.body) for t in turns[:2])
    given = first.count(DERIVED_SENTINEL)
    assert given >= 1, f"the first prompt got no memory\n{run.report()}"
    # the second request carries the first turn's context; the hook added nothing more
    assert second.count(DERIVED_SENTINEL) == given, (
        f"the second prompt was given the same note again\n{run.report()}"
    )
