"""What the real ACP agents send when they ask permission can be checked by the door (issue 30
denies what cannot): each request as captured from claude-agent-acp, Gemini CLI and codex-acp
names its paths, command and directory where `avatar.bridges.acp.permission` looks — Gemini's
command only in its title and its directory in the content's text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from avatar.bridges.acp.permission import CallFacts, scope_refusal
from avatar.core.config import Scope
from avatar.policy.scope import ScopePolicy


def _shapes(work: Path) -> dict[str, dict[str, object]]:
    """Permission requests as the real agents send them (captured from claude-agent-acp,
    Gemini CLI and codex-acp against the fake model server; paths made this test's)."""
    new, old = str(work / "new.txt"), str(work / "old.txt")
    diff = {"type": "diff", "path": new, "oldText": None, "newText": "hi\n"}
    return {
        "claude-acp Write": {
            "toolCallId": "t1", "kind": "edit", "title": "Write new.txt",
            "rawInput": {"file_path": new, "content": "/dist\n"},
            "content": [diff], "locations": [{"path": new}],
        },
        "claude-acp Read": {
            "toolCallId": "t2", "kind": "read", "title": f"Read {old}",
            "rawInput": {"file_path": old}, "content": [], "locations": [{"path": old}],
        },
        "claude-acp Bash": {
            "toolCallId": "t3", "kind": "execute", "title": f"touch {work}/made",
            "rawInput": {"command": f"touch {work}/made", "description": "make"},
            "content": [{"type": "content", "content": {"type": "text", "text": "make"}}],
        },
        "claude-acp MCP": {
            "toolCallId": "t4", "kind": "other", "title": "mcp__stamp__stamp",
            "rawInput": {"text": "hello"}, "content": [],
        },
        "gemini write_file": {
            "toolCallId": "g1", "kind": "edit", "title": "Writing to new.txt",
            "content": [diff], "locations": [{"path": new}],
        },
        "gemini shell": {
            "toolCallId": "g2", "kind": "execute", "title": f"touch {work}/made",
            "content": [{"type": "content",
                         "content": {"type": "text", "text": f"[in {work}] (make)"}}],
            "locations": [],
        },
        "gemini MCP": {
            "toolCallId": "g3", "kind": "other", "title": "stamp (stamp MCP Server)",
            "content": [{"type": "content", "content": {"type": "text", "text": '{"text":"x"}'}}],
        },
        "codex edit": {
            "toolCallId": "c1", "kind": "edit", "title": "Edit files", "locations": [{"path": old}],
        },
        "codex command": {
            "toolCallId": "c2", "kind": "execute", "title": f"touch {work}/x",
            "rawInput": {"command": f"touch {work}/x", "cwd": str(work)},
        },
    }  # fmt: skip


@pytest.mark.parametrize("agent", list(_shapes(Path("/w"))))
def test_what_the_real_agents_send_can_be_checked(tmp_path: Path, agent: str) -> None:
    request = _shapes(tmp_path)[agent]
    facts = CallFacts.of(request)
    assert facts.unchecked() is None
    policy = ScopePolicy(Scope(shell_commands=["touch"]), tmp_path)
    assert scope_refusal(policy, facts) is None  # inside the project: the policy's to answer
    if facts.kind == "execute":
        assert facts.command() == f"touch {tmp_path}/made" or facts.cwd() == str(tmp_path)


def test_gemini_commands_are_checked_by_their_title_and_directory(tmp_path: Path) -> None:
    shell = _shapes(tmp_path)["gemini shell"]
    policy = ScopePolicy(Scope(shell_commands=["ls"]), tmp_path)
    assert "'touch' is not allowed" in (scope_refusal(policy, CallFacts.of(shell)) or "")
    elsewhere = json.loads(json.dumps(shell).replace(f"[in {tmp_path}]", "[in /etc]"))
    refused = scope_refusal(ScopePolicy(Scope(), tmp_path), CallFacts.of(elsewhere))
    assert "outside the session's directories" in (refused or "")
