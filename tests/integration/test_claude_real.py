"""The real Claude Code (bridges/) behind ClaudeBridge and the `avatar` CLI, offline.

Every test talks to the fake model server through a throw-away HOME (tests.support). What is
checked is what the model sees: a resumed, continued or forked session must carry the earlier
turns in the model's next request. The transcripts the CLI writes are then read back with
ClaudeStore (real-file tests for the reader).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from avatar.bridges.base import BridgeContext, OpenMode, OpenRequest
from avatar.bridges.claude.bridge import ClaudeBridge
from avatar.core.config import Scope, Settings
from avatar.core.events import (
    BaseEvent,
    Error,
    PermissionRequested,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
)
from avatar.providers.registry import BUILTIN
from avatar.sessions.claude import ClaudeStore, project_slug
from tests.support.drive import SESSION_LINE, avatar
from tests.support.homes import AgentHome, require_bridges
from tests.support.model_server import FakeModelServer, RecordedRequest, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


@pytest.fixture(autouse=True)
def _needs_claude() -> None:
    require_bridges("claude")


class Harness:
    """A ClaudeBridge factory on one fake HOME, with a switchable permission answer."""

    def __init__(self, home: AgentHome, settings: Settings | None = None) -> None:
        self.home = home
        self.settings = settings or Settings()
        self.allow = False
        self.asked: list[PermissionRequested] = []

    async def _permission(self, request: PermissionRequested) -> bool:
        self.asked.append(request)
        return self.allow

    def bridge(self, cwd: Path | None = None) -> ClaudeBridge:
        """A bridge built the way the engine builds one: with a reader of Claude's store."""
        ctx = BridgeContext(
            spec=BUILTIN["claude"],
            cwd=cwd or self.home.workdir,
            settings=self.settings,
            avatar_home=self.home.root / "avatar-home",
            env=self.home.env,
            store=self.store(),
            permission=self._permission,
        )
        return ClaudeBridge(ctx)

    def store(self) -> ClaudeStore:
        return ClaudeStore("claude", self.home.env, self.home.root / "avatar-home")

    def request(self, mode: OpenMode, session_id: str) -> OpenRequest:
        """A resume or fork of a session the store resolved, as the engine asks for one."""
        return OpenRequest.of(mode, self.store().locate(session_id))


async def turn(bridge: ClaudeBridge, prompt: str) -> list[BaseEvent]:
    return [e async for e in bridge.send(prompt)]


def answer(events: list[BaseEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def last_main(server: FakeModelServer) -> RecordedRequest:
    return server.requests_for("anthropic")[-1]


def said(request: RecordedRequest) -> str:
    """Everything in the conversation the model was sent (no system prompt)."""
    return "\n".join(request.conversation_texts())


async def test_new_resume_continue_fork(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    h = Harness(agent_home)
    model_server.anthropic.append("First answer.", "Second answer.")

    a = h.bridge()
    await a.start()
    started = await a.open(OpenRequest("new"))
    assert started.how == "new"
    try:
        first = await turn(a, "hello, remember 42")
        assert answer(first) == "First answer."
        assert first[-1] == TurnFinished(stop_reason="end_turn")
        second = await turn(a, "second turn")  # same process, same session
        assert answer(second) == "Second answer."
        assert "hello, remember 42" in said(last_main(model_server))
    finally:
        await a.stop()
    sid = started.session_id

    b = h.bridge()
    resumed = await b.open(h.request("resume", sid))
    try:
        assert (resumed.how, resumed.session_id) == ("resumed", sid)
        await turn(b, "after resume")
        seen = said(last_main(model_server))
        assert "hello, remember 42" in seen and "second turn" in seen
    finally:
        await b.stop()

    c = h.bridge()
    cont = await c.open(OpenRequest("continue"))
    try:
        assert (cont.how, cont.session_id) == ("continued", sid)
        await turn(c, "after continue")
        assert "after resume" in said(last_main(model_server))
    finally:
        await c.stop()

    d = h.bridge()
    forked = await d.open(h.request("fork", sid))
    try:
        assert forked.how == "forked" and forked.session_id != sid
        await turn(d, "inside the fork")
        seen = said(last_main(model_server))
        assert "hello, remember 42" in seen and "after continue" in seen
    finally:
        await d.stop()

    # The files Claude Code wrote, read back by ClaudeStore.
    store = h.store()
    sessions = {s.id: s for s in store.list(agent_home.workdir)}
    assert set(sessions) == {sid, forked.session_id}
    parent = sessions[sid]
    assert parent.title == "hello, remember 42"
    assert parent.messages == 8
    assert parent.cwd == os.path.realpath(agent_home.workdir)
    assert parent.model and parent.created and parent.updated and parent.created <= parent.updated
    child = sessions[forked.session_id]
    assert child.messages == 10 and child.title == "hello, remember 42"
    texts = [m.text for m in store.transcript(forked.session_id).messages]
    assert texts[:2] == ["hello, remember 42", "First answer."]
    assert "inside the fork" in texts
    parent_texts = [m.text for m in store.transcript(sid).messages]
    assert "inside the fork" not in parent_texts
    roles = [m.role for m in store.transcript(sid).messages]
    assert roles == ["user", "assistant"] * 4


async def test_fork_without_a_turn_is_kept(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    h = Harness(agent_home)
    a = h.bridge()
    parent = await a.open(OpenRequest("new"))
    await turn(a, "parent turn")
    await a.stop()

    f = h.bridge()
    forked = await f.open(h.request("fork", parent.session_id))
    await f.stop()  # `avatar session fork ID`: open, print the id, stop

    r = h.bridge()
    resumed = await r.open(h.request("resume", forked.session_id))
    assert resumed.session_id == forked.session_id and resumed.how == "resumed"
    await turn(r, "child turn")
    await r.stop()
    assert "parent turn" in said(last_main(model_server))


async def test_interrupt_mid_stream_leaves_a_resumable_session(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    h = Harness(agent_home)
    model_server.anthropic.append(Reply.slow_text([f"word{i} " for i in range(40)], delay=0.2))
    bridge = h.bridge()
    started = await bridge.open(OpenRequest("new"))
    try:
        events: list[BaseEvent] = []
        async for event in bridge.send("tell me a long story"):
            events.append(event)
            if isinstance(event, TextDelta) and sum(isinstance(e, TextDelta) for e in events) == 1:
                asyncio.get_running_loop().create_task(bridge.cancel())
        assert events[-1] == TurnFinished(stop_reason="cancelled")
        assert "word39" not in answer(events)  # cut short: the full answer takes 8 s
        assert not any(isinstance(e, Error) for e in events)
        story = last_main(model_server)
        assert story.wait_finished(10) and story.disconnected
        # The same process takes the next turn.
        after = await turn(bridge, "short answer now")
        assert answer(after) == "Hello from the fake LLM."
    finally:
        await bridge.stop()

    again = h.bridge()
    resumed = await again.open(h.request("resume", started.session_id))
    try:
        await turn(again, "are you still there")
    finally:
        await again.stop()
    assert resumed.how == "resumed"
    seen = said(last_main(model_server))
    assert "tell me a long story" in seen and "word0" in seen and "short answer now" in seen


async def test_crash_mid_turn_then_recover(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    h = Harness(agent_home)
    model_server.anthropic.append(Reply.slow_text(["a ", "b ", "c ", "d "], delay=1.0))
    bridge = h.bridge()
    await bridge.open(OpenRequest("new"))
    try:
        events: list[BaseEvent] = []
        async for event in bridge.send("first"):
            events.append(event)
            if isinstance(event, TextDelta) and bridge.process_pid is not None:
                os.killpg(bridge.process_pid, signal.SIGKILL)
        errors = [e for e in events if isinstance(e, Error)]
        assert errors and "claude exited" in errors[0].message
        after = await turn(bridge, "second")  # restarted with --resume
        assert answer(after) == "Hello from the fake LLM."
        assert "first" in said(last_main(model_server))
    finally:
        await bridge.stop()


async def test_tools_ask_avatars_permission(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    h = Harness(agent_home)
    target = agent_home.workdir / "made.txt"
    model_server.anthropic.append(
        Reply.tool_call("Bash", {"command": f"touch {target}", "description": "make a file"}),
        "Made it.",
        Reply.tool_call("Bash", {"command": f"rm {target}", "description": "remove it"}),
        "Could not.",
    )
    bridge = h.bridge()
    await bridge.open(OpenRequest("new"))
    try:
        h.allow = True
        allowed = await turn(bridge, "make a file")
        h.allow = False
        denied = await turn(bridge, "now remove it")
    finally:
        await bridge.stop()
    assert target.exists()  # the allowed command ran, the denied one did not
    for events, decision in ((allowed, "allow"), (denied, "deny")):
        [start] = [e for e in events if isinstance(e, ToolCallStarted)]
        [perm] = [e for e in events if isinstance(e, PermissionRequested)]
        [done] = [e for e in events if isinstance(e, ToolCallFinished)]
        assert start.name == "Bash" and start.kind == "execute" and start.id == done.id
        assert perm.decision == decision and perm.title.startswith("Bash:")
        assert done.is_error is (decision == "deny")
    assert answer(allowed).endswith("Made it.")
    messages = h.store().transcript(h.store().list(None)[0].id).messages
    assert [m.role for m in messages][:4] == ["user", "assistant", "tool", "assistant"]
    assert messages[1].tool_calls[0].name == "Bash"


async def test_the_scope_refuses_before_asking(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    h = Harness(agent_home, Settings(scope=Scope(shell_commands=["ls"])))
    h.allow = True  # the policy would allow it: the scope alone refuses
    target = agent_home.workdir / "never.txt"
    model_server.anthropic.append(
        Reply.tool_call("Bash", {"command": f"touch {target}", "description": "make a file"}),
        "Could not.",
    )
    bridge = h.bridge()
    await bridge.open(OpenRequest("new"))
    try:
        events = await turn(bridge, "make a file")
    finally:
        await bridge.stop()
    assert not target.exists() and h.asked == []
    [perm] = [e for e in events if isinstance(e, PermissionRequested)]
    [done] = [e for e in events if isinstance(e, ToolCallFinished)]
    assert perm.decision == "deny" and perm.reason and "touch" in perm.reason
    assert done.is_error and perm.reason in done.output
    assert answer(events).endswith("Could not.")


@pytest.mark.parametrize("allow_protected", [[], [".git/hooks"]], ids=["protected", "allowed"])
async def test_a_write_to_git_hooks_is_refused_unless_allowed(
    agent_home: AgentHome, model_server: FakeModelServer, allow_protected: list[str]
) -> None:
    """Claude Code's own Write tool asks first; avatar's answer refuses a protected path even
    when the policy allows everything, unless `scope.allow_protected` names it."""
    h = Harness(agent_home, Settings(scope=Scope(allow_protected=allow_protected)))
    h.allow = True
    hook = agent_home.workdir / ".git/hooks/pre-commit"
    hook.parent.mkdir(parents=True)
    write = {"file_path": str(hook), "content": "#!/bin/sh\ntouch pwned\n"}
    model_server.anthropic.append(Reply.tool_call("Write", write), "Done.")
    bridge = h.bridge()
    await bridge.open(OpenRequest("new"))
    try:
        events = await turn(bridge, "add a hook")
    finally:
        await bridge.stop()
    [perm] = [e for e in events if isinstance(e, PermissionRequested)]
    if allow_protected:
        assert perm.decision == "allow" and hook.read_text() == write["content"]
    else:
        assert perm.decision == "deny" and "protected path" in (perm.reason or "")
        assert not hook.exists() and h.asked == []


async def test_project_slug_matches_claude(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    h = Harness(agent_home)
    odd = agent_home.root / "my.project_dir v2" / ("deep-" * 45)
    odd.mkdir(parents=True)
    assert len(str(odd)) > 200
    bridge = h.bridge(cwd=odd)
    started = await bridge.open(OpenRequest("new"))
    await turn(bridge, "in a long odd path")
    await bridge.stop()
    expected = agent_home.claude_dir / "projects" / project_slug(os.path.realpath(odd))
    assert (expected / f"{started.session_id}.jsonl").is_file()
    assert [s.id for s in h.store().list(odd)] == [started.session_id]
    # Resumed from another directory: claude only finds it from its own project directory.
    elsewhere = h.bridge(cwd=agent_home.workdir)
    resumed = await elsewhere.open(h.request("resume", started.session_id))
    await turn(elsewhere, "resumed from elsewhere")
    await elsewhere.stop()
    assert resumed.how == "resumed" and resumed.cwd == str(odd)
    assert "in a long odd path" in said(last_main(model_server))


# ----- through the avatar CLI -------------------------------------------------------------------


def session_line(stderr: str) -> tuple[str, str, str]:
    match = SESSION_LINE.search(stderr)
    assert match, stderr
    return match.group(1), match.group(2), match.group(3)


def test_cli_chat_resume_continue_fork(
    agent_home: AgentHome, avatar_env: dict[str, str], model_server: FakeModelServer
) -> None:
    cwd = agent_home.workdir
    model_server.anthropic.append("Hi from claude.")
    p = avatar(avatar_env, cwd, "-p", "claude", "chat", "hello")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "Hi from claude."
    sid, provider, how = session_line(p.stderr)
    assert (provider, how) == ("claude", "new")

    p = avatar(avatar_env, cwd, "-p", "claude", "chat", "--resume", sid[:8], "again")
    assert p.returncode == 0, p.stderr
    assert session_line(p.stderr) == (sid, "claude", "resumed")
    assert "hello" in said(last_main(model_server))

    p = avatar(avatar_env, cwd, "-p", "claude", "chat", "--continue", "third")
    assert p.returncode == 0, p.stderr
    assert session_line(p.stderr) == (sid, "claude", "continued")
    assert "again" in said(last_main(model_server))

    p = avatar(avatar_env, cwd, "session", "fork", sid)
    assert p.returncode == 0, p.stderr
    fork_id = p.stdout.strip()
    assert fork_id != sid and session_line(p.stderr) == (fork_id, "claude", "forked")
    shown = avatar(avatar_env, cwd, "session", "show", fork_id)
    assert shown.returncode == 0, shown.stderr
    for text in ("hello", "again", "third"):
        assert text in shown.stdout

    p = avatar(avatar_env, cwd, "chat", "--resume", fork_id, "fourth")  # no -p: found by id
    assert p.returncode == 0, p.stderr
    assert session_line(p.stderr) == (fork_id, "claude", "resumed")
    assert "third" in said(last_main(model_server))

    listed = avatar(avatar_env, cwd, "session", "list", "--provider", "claude", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {r["id"]: r for r in json.loads(listed.stdout)}
    assert rows[sid]["messages"] == 6 and rows[fork_id]["messages"] == 8
    assert rows[sid]["title"] == "hello"


def test_cli_interrupt_then_resume(
    agent_home: AgentHome, avatar_env: dict[str, str], model_server: FakeModelServer
) -> None:
    cwd = agent_home.workdir
    model_server.anthropic.append(Reply.slow_text([f"part{i} " for i in range(40)], delay=0.25))
    proc = subprocess.Popen(
        ["avatar", "-p", "claude", "chat", "a long one"],
        env=avatar_env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.read(6)  # the answer has started
        assert first.startswith("part0")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    sid, _, _ = session_line(err)
    assert "part39" not in first + out

    p = avatar(avatar_env, cwd, "-p", "claude", "chat", "--resume", sid, "go on")
    assert p.returncode == 0, p.stderr
    seen = said(last_main(model_server))
    assert "a long one" in seen and "part0" in seen
