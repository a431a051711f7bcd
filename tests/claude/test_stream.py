"""stream-json → events, and the command line, against real recorded Claude Code output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from avatar.bridges.claude.argv import (
    REQUIRED_FLAGS,
    build_argv,
    mcp_config,
    mcp_env,
    permission_mode,
)
from avatar.bridges.claude.stream import (
    StreamTranslator,
    permission_answer,
    tool_title,
    user_message,
)
from avatar.core.config import McpServer, ProviderConfig, Settings
from avatar.core.events import (
    BaseEvent,
    CommandsAvailable,
    Error,
    Notice,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    Usage,
)
from avatar.core.prompts import Prompt
from avatar.providers.registry import BUILTIN

FIXTURES = Path(__file__).parent / "fixtures"


def recorded(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURES / f"{name}.jsonl").read_text().splitlines()]


def translate(messages: list[dict[str, Any]], cancel_at: int | None = None) -> list[BaseEvent]:
    tr = StreamTranslator()
    out: list[BaseEvent] = []
    for i, msg in enumerate(messages):
        if msg.get("type", "").startswith("control_"):
            continue
        if cancel_at is not None and i >= cancel_at:
            tr.cancelled = True
        out += tr.feed(msg)
        if msg.get("type") == "result":
            tr.begin_turn()
    return out


def text(events: list[BaseEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def test_text_turn() -> None:
    events = translate(recorded("text-turn"))
    assert isinstance(events[0], CommandsAvailable) and events[0].commands
    assert text(events) == "Hello there, friend."  # streamed once, not repeated
    thinking = "".join(e.text for e in events if isinstance(e, ThinkingDelta))
    assert thinking == "Let me think."
    usage = next(e for e in events if isinstance(e, Usage))
    assert usage.output_tokens and usage.input_tokens and usage.cost_usd is not None
    assert usage.context_size and usage.context_used and usage.context_percent is not None
    assert events[-1] == TurnFinished(stop_reason="end_turn")


def test_tool_turns() -> None:
    events = translate(recorded("tool-turns"))
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [e.id for e in started] == ["toolu_1", "toolu_2"]
    assert started[0].name == "Bash" and started[0].kind == "execute"
    assert started[0].input == {"command": "touch made.txt", "description": "make a file"}
    assert started[0].title == "Bash: make a file"
    assert [(e.id, e.is_error) for e in finished] == [("toolu_1", False), ("toolu_2", True)]
    assert "denied" in finished[1].output
    assert text(events) == "Running it.Done.Understood."
    assert [e.stop_reason for e in events if isinstance(e, TurnFinished)] == ["end_turn"] * 2


def test_interrupted_turn() -> None:
    messages = recorded("interrupted-turn")
    first_result = next(i for i, m in enumerate(messages) if m.get("type") == "result")
    # The bridge marks the turn cancelled when it sends the interrupt.
    tr = StreamTranslator()
    events: list[BaseEvent] = []
    for i, msg in enumerate(messages[: first_result + 1]):
        if i == 3:
            tr.cancelled = True
        events += tr.feed(msg)
    assert events[-1] == TurnFinished(stop_reason="cancelled")
    assert not any(isinstance(e, (Error, Usage)) for e in events)  # zero usage is not shown
    assert text(events).startswith("w0 ")
    tr.begin_turn()
    after = [e for m in messages[first_result + 1 :] for e in tr.feed(m)]
    assert after[-1] == TurnFinished(stop_reason="end_turn")


def test_interrupted_result_without_the_flag_is_an_error() -> None:
    messages = recorded("interrupted-turn")
    result = next(m for m in messages if m.get("type") == "result")
    events = StreamTranslator().feed(result)
    assert isinstance(events[0], Error) and events[-1] == TurnFinished(stop_reason="error")
    assert "ede_diagnostic" not in events[0].message


def test_api_error_turn() -> None:
    events = translate(recorded("api-error-turn"))
    assert text(events) == ""  # the synthetic "API Error" message is not an answer
    [error] = [e for e in events if isinstance(e, Error)]
    assert error.message == "claude: API Error: 400 invalid model"
    assert events[-1] == TurnFinished(stop_reason="error")


def test_unstreamed_assistant_text_is_emitted() -> None:
    tr = StreamTranslator()
    msg = {
        "type": "assistant",
        "message": {"id": "m1", "content": [{"type": "text", "text": "hi"}]},
    }
    assert tr.feed(msg) == [TextDelta(text="hi")]


def test_values_of_the_wrong_type_never_reach_an_event() -> None:
    """Events are plain dataclasses: the translator is what keeps a number where text
    belongs (or text where a count belongs) out of them, so no renderer ever sees one."""
    tr = StreamTranslator()
    tr.feed({"type": "stream_event", "event": {"type": "message_start", "message": {"id": "m"}}})
    odd = [
        {"type": "stream_event", "event": {"type": "content_block_delta", "delta": d}}
        for d in ({"type": "text_delta", "text": 5}, {"type": "thinking_delta", "thinking": []})
    ]
    assert [e for m in odd for e in tr.feed(m)] == []
    block = {"type": "assistant", "message": {"id": "x", "content": [{"type": "text", "text": 1}]}}
    assert tr.feed(block) == []
    result = {
        "type": "result",
        "subtype": "success",
        "usage": {"input_tokens": "12", "output_tokens": 3, "cache_read_input_tokens": True},
        "modelUsage": {"m": {"contextWindow": "lots"}},
    }
    usage = next(e for e in tr.feed(result) if isinstance(e, Usage))
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (None, 3, None)
    assert usage.context_size is None


def test_subagent_messages_are_ignored_and_system_notices() -> None:
    tr = StreamTranslator()
    inner = {
        "type": "assistant",
        "parent_tool_use_id": "toolu_task",
        "message": {"id": "m", "content": [{"type": "text", "text": "inner"}]},
    }
    assert tr.feed(inner) == []
    retry = {
        "type": "system",
        "subtype": "api_retry",
        "attempt": 2,
        "max_retries": 10,
        "error_status": 529,
    }
    [notice] = tr.feed(retry)
    assert isinstance(notice, Notice) and "529" in notice.message and "2/10" in notice.message
    assert tr.feed({"type": "system", "subtype": "status"}) == []
    assert tr.feed({"type": "unknown-kind"}) == []


def test_a_compaction_says_its_counts_and_the_context_is_what_it_kept() -> None:
    tr = StreamTranslator()
    tr.context_size = 200_000
    meta = {"trigger": "manual", "pre_tokens": 91_000, "post_tokens": 2_547}
    said, usage = tr.feed(
        {"type": "system", "subtype": "compact_boundary", "compact_metadata": meta}
    )
    assert isinstance(said, Notice)
    assert said.message == "claude compacted the conversation: 91,000 → 2,547 tokens"
    assert usage == Usage(context_used=2_547, context_size=200_000)
    assert usage.turn_tokens is None  # the turn's tokens are not a compaction's business
    [bare] = tr.feed({"type": "system", "subtype": "compact_boundary"})
    assert isinstance(bare, Notice) and bare.message == "claude compacted the conversation"


@pytest.mark.parametrize(
    ("result", "stop"),
    [
        ({"subtype": "success", "stop_reason": "max_tokens"}, "max_tokens"),
        ({"subtype": "success", "stop_reason": "refusal"}, "refusal"),
        ({"subtype": "error_max_turns", "is_error": True}, "max_turn_requests"),
        ({"subtype": "error_during_execution", "is_error": True, "errors": ["boom"]}, "error"),
    ],
)
def test_result_stop_reasons(result: dict[str, Any], stop: str) -> None:
    events = StreamTranslator().feed({"type": "result", **result})
    assert events[-1] == TurnFinished(stop_reason=stop)  # type: ignore[arg-type]
    if stop == "error":
        assert any(isinstance(e, Error) and "boom" in e.message for e in events)


def test_user_message_line() -> None:
    line = user_message(Prompt("hi"))
    assert line["type"] == "user"
    assert line["message"] == {"role": "user", "content": [{"type": "text", "text": "hi"}]}


def test_permission_answer_and_titles() -> None:
    assert permission_answer(True, {"a": 1}) == {"behavior": "allow", "updatedInput": {"a": 1}}
    denied = permission_answer(False, {"a": 1})
    assert denied["behavior"] == "deny" and denied["message"]
    assert tool_title("Read", {"file_path": "/x/y.py"}) == "Read: /x/y.py"
    assert tool_title("Bash", {"command": "ls\nrm -rf /"}) == "Bash: ls"
    assert tool_title("Mystery", None) == "Mystery"


def test_permission_modes() -> None:
    # `allow` too: edits must reach avatar's scope check (acceptEdits would skip it).
    assert permission_mode(Settings(permission="allow"), "claude") == "default"
    assert permission_mode(Settings(permission="deny"), "claude") == "default"
    assert permission_mode(Settings(permission="ask"), "claude") == "default"
    cfg = Settings(permission="allow", providers={"claude": ProviderConfig(permission_mode="plan")})
    assert permission_mode(cfg, "claude") == "plan"


def test_mcp_config() -> None:
    assert mcp_config({}) is None
    servers = {
        "files": McpServer(command="npx", args=["-y", "srv"], env={"K": "v"}),
        "web": McpServer(url="http://127.0.0.1:9/mcp", headers={"A": "b"}),
        "events": McpServer(url="http://127.0.0.1:9/sse", type="sse"),
        "broken": McpServer(),
    }
    text = mcp_config(servers) or ""
    data = json.loads(text)
    # The command made absolute as for ACP agents; env values and headers are references to
    # variables in Claude Code's environment, so no secret is on its command line.
    assert data["mcpServers"]["files"] == {
        "type": "stdio",
        "command": shutil.which("npx") or "npx",
        "args": ["-y", "srv"],
        "env": {"K": "${AVATAR_MCP_0_0}"},
    }
    assert data["mcpServers"]["web"] == {
        "type": "http",
        "url": "http://127.0.0.1:9/mcp",
        "headers": {"A": "${AVATAR_MCP_1_0}"},
    }
    assert data["mcpServers"]["events"]["type"] == "sse"
    assert "broken" not in data["mcpServers"]
    assert mcp_env(servers) == {"AVATAR_MCP_0_0": "v", "AVATAR_MCP_1_0": "b"}
    assert mcp_env({}) == {}


def test_build_argv_everything() -> None:
    settings = Settings(permission="allow", mcp_servers={"files": McpServer(command="srv")})
    argv = build_argv(
        BUILTIN["claude"].command,
        "/bin/claude",
        settings=settings,
        provider="claude",
        model="claude-sonnet-4-5",
        system_prompt="Be brief.",
        add_dirs=["/a", "/b"],
        session_args=["--session-id", "u"],
    )
    assert argv[0] == "/bin/claude"
    joined = " ".join(argv)
    for flag in REQUIRED_FLAGS:
        assert " ".join(flag) in joined
    assert argv.count("-p") == 1
    assert "--include-partial-messages" in argv
    assert argv[argv.index("--permission-prompt-tool") + 1] == "stdio"
    assert argv[argv.index("--permission-mode") + 1] == "default"
    assert argv[argv.index("--model") + 1] == "claude-sonnet-4-5"
    assert argv[argv.index("--append-system-prompt") + 1] == "Be brief."
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--add-dir"] == ["/a", "/b"]
    assert (
        json.loads(argv[argv.index("--mcp-config") + 1])["mcpServers"]["files"]["command"] == "srv"
    )
    assert argv[-2:] == ["--session-id", "u"]


def test_build_argv_adds_required_flags_to_configured_args() -> None:
    argv = build_argv(
        ("claude", "--permission-mode", "plan"),
        "claude",
        settings=Settings(),
        provider="claude",
        model=None,
        system_prompt=None,
        add_dirs=[],
        session_args=[],
    )
    for flag in REQUIRED_FLAGS:
        assert " ".join(flag) in " ".join(argv)
    assert argv.count("--permission-mode") == 1 and "plan" in argv
    assert "--model" not in argv and "--append-system-prompt" not in argv
    assert "--mcp-config" not in argv
