"""NativeBridge: capabilities, open modes, fork/delete/list, model switch, secrets, store."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from avatar.bridges.base import OpenRequest
from avatar.core.config import Settings
from avatar.core.errors import SessionNotFoundError, UsageError
from avatar.core.events import Notice, PermissionRequested, ToolCallFinished, TurnFinished, Usage
from avatar.native.agent.prompt import build_system_prompt, find_instructions
from avatar.native.store.session_store import NativeStore
from avatar.native.tools import default_tools
from avatar.policy.permissions import Answer
from tests.native.helpers import make_bridge, run_turn
from tests.support.model_server import FakeModelServer, Reply


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "project"
    p.mkdir()
    return p


async def test_capabilities_all_true(
    project: Path, tmp_path: Path, model_server: FakeModelServer
) -> None:
    b = make_bridge(project, tmp_path / "h", model_server)
    await b.start()
    caps = b.session_capabilities
    assert caps.names() == ["list", "load", "resume", "continue_last", "fork", "delete", "cancel"]


async def test_explicit_session_id_creates_then_resumes(
    project: Path, tmp_path: Path, model_server: FakeModelServer
) -> None:
    home = tmp_path / "h"
    b = make_bridge(project, home, model_server)
    await b.start()
    first = await b.open(OpenRequest("new", "my-chat"))
    assert (first.session_id, first.how) == ("my-chat", "new")
    await run_turn(b, "remember 42")
    await b.stop()
    b = make_bridge(project, home, model_server)
    await b.start()
    again = await b.open(OpenRequest("new", "my-chat"))
    assert (again.session_id, again.how) == ("my-chat", "resumed")
    await run_turn(b, "what number?")
    await b.stop()
    assert "remember 42" in model_server.requests_for("chat")[-1].all_text()
    with pytest.raises(UsageError, match="invalid session id"):
        await b.open(OpenRequest("new", "../../etc/passwd"))


async def test_engine_resolved_session_is_not_looked_up_again(
    project: Path, tmp_path: Path, model_server: FakeModelServer
) -> None:
    home = tmp_path / "h"
    b = make_bridge(project, home, model_server)
    await b.start()
    sid = (await b.open(OpenRequest("new"))).session_id
    await run_turn(b, "remember 42")
    info = NativeStore("native", {}, home).find(sid)[0]

    def no_lookup(id_or_prefix: str) -> None:
        raise AssertionError(f"looked up {id_or_prefix} again")

    b.manager.resolve = no_lookup
    resumed = await b.open(OpenRequest.of("resume", info))
    assert (resumed.session_id, resumed.how) == (sid, "resumed")
    forked = await b.open(OpenRequest.of("fork", info))
    assert forked.how == "forked" and forked.session_id != sid
    await run_turn(b, "what number?")
    assert "remember 42" in model_server.requests_for("chat")[-1].all_text()
    await b.stop()


async def test_model_in_use_is_the_resolved_full_id(
    project: Path, tmp_path: Path, model_server: FakeModelServer
) -> None:
    b = make_bridge(project, tmp_path / "h", model_server, model="gpt-4o")
    assert b.model_in_use is None  # nothing resolved before start()
    await b.start()
    assert b.model_in_use == "openai/gpt-4o"
    await b.open(OpenRequest("new"))
    await b.set_model("claude-haiku")
    assert b.model_in_use == "anthropic/claude-haiku-4-5"
    await b.stop()


async def test_resume_errors(project: Path, tmp_path: Path, model_server: FakeModelServer) -> None:
    b = make_bridge(project, tmp_path / "h", model_server)
    await b.start()
    with pytest.raises(SessionNotFoundError):
        await b.open(OpenRequest("resume", "01NOPE"))


async def test_continue_without_sessions_starts_new_with_notice(
    project: Path, tmp_path: Path, model_server: FakeModelServer
) -> None:
    events: list[object] = []
    b = make_bridge(project, tmp_path / "h", model_server, events=events)
    await b.start()
    started = await b.open(OpenRequest("continue"))
    assert started.how == "new"
    assert any(isinstance(e, Notice) and "continue" in e.message for e in events)
    await b.stop()


async def test_fork_list_delete(
    project: Path, tmp_path: Path, model_server: FakeModelServer
) -> None:
    home = tmp_path / "h"
    b = make_bridge(project, home, model_server)
    await b.start()
    parent = (await b.open(OpenRequest("new"))).session_id
    await run_turn(b, "the parent question")
    forked = await b.open(OpenRequest("fork", parent))
    assert forked.how == "forked" and forked.session_id != parent
    await run_turn(b, "a question only in the fork")
    assert "the parent question" in model_server.requests_for("chat")[-1].all_text()
    # Listing and deleting are the engine's, through the provider's store.
    store = NativeStore("native", {}, home)
    listed = sorted(store.list(project), key=lambda s: s.updated or 0, reverse=True)
    assert {s.id for s in listed} == {parent, forked.session_id}
    assert listed[0].id == forked.session_id and listed[0].messages == 4
    assert listed[0].title == "the parent question" and listed[0].provider == "native"
    await b.stop()
    store.delete(store.locate(forked.session_id))
    assert [s.id for s in store.list(project)] == [parent]
    transcript = store.transcript(parent)
    assert [m.role for m in transcript.messages] == ["user", "assistant"]
    assert "a question only in the fork" not in str(transcript)


async def test_store_transcript_with_tools(
    project: Path, tmp_path: Path, model_server: FakeModelServer
) -> None:
    home = tmp_path / "h"
    model_server.script(
        "chat", Reply.tool_call("ls", {"path": "."}, id="call_1"), Reply.text("empty")
    )
    b = make_bridge(project, home, model_server)
    await b.start()
    sid = (await b.open(OpenRequest("new"))).session_id
    await run_turn(b, "list")
    await b.stop()
    store = NativeStore("native", {}, home)
    t = store.transcript(sid)
    assert [m.role for m in t.messages] == ["user", "assistant", "tool", "assistant"]
    assert t.messages[1].tool_calls[0].name == "ls" and t.messages[2].tool_call_id == "call_1"
    assert t.info.id == sid and t.info.messages == 3
    assert store.find(sid[:12])[0].id == sid
    info = store.list(project)[0]
    assert info.to_public()["model"] == "openai/gpt-4o" and info.created and info.updated
    assert store.list(tmp_path / "elsewhere") == []
    store.delete(info)
    assert store.list(None) == []


@pytest.mark.parametrize("answer", [False, "deny"])
async def test_denied_permission_is_a_tool_error(
    project: Path, tmp_path: Path, model_server: FakeModelServer, answer: Answer | bool
) -> None:
    # Handlers answer in the policy's words or as a bool: both deny here (one handler type).
    async def deny(request: PermissionRequested) -> Answer | bool:
        return answer

    model_server.script(
        "chat", Reply.tool_call("write", {"path": "x.txt", "content": "x"}), Reply.text("ok")
    )
    b = make_bridge(project, tmp_path / "h", model_server, permission=deny)
    await b.start()
    await b.open(OpenRequest("new"))
    events = await run_turn(b, "write x")
    await b.stop()
    assert not (project / "x.txt").exists()
    perm = [e for e in events if isinstance(e, PermissionRequested)]
    assert perm and perm[0].decision == "deny" and perm[0].kind == "edit"
    finished = next(e for e in events if isinstance(e, ToolCallFinished))
    assert finished.is_error and "permission denied" in finished.output
    assert "permission denied" in model_server.requests_for("chat")[1].all_text()


async def test_reads_never_ask(
    project: Path, tmp_path: Path, model_server: FakeModelServer
) -> None:
    asked: list[object] = []

    async def record(request: PermissionRequested) -> bool:
        asked.append(request)
        return True

    (project / "a.txt").write_text("A\n")
    model_server.script(
        "chat",
        Reply.tool_call("read", {"path": "a.txt"})
        + Reply.tool_call("ls", {})
        + Reply.tool_call("grep", {"pattern": "A"})
        + Reply.tool_call("find", {"pattern": "*.txt"}),
        Reply.text("ok"),
    )
    b = make_bridge(project, tmp_path / "h", model_server, permission=record)
    await b.start()
    await b.open(OpenRequest("new"))
    await run_turn(b, "look")
    await b.stop()
    assert asked == []


async def test_secrets_never_reach_session_files(
    project: Path, tmp_path: Path, model_server: FakeModelServer
) -> None:
    home = tmp_path / "h"
    secret = "sk-test-secret-123456"
    (project / "keys.txt").write_text(f"key={secret}\n")
    model_server.script(
        "chat",
        Reply.tool_call("bash", {"command": "echo key=[$OPENAI_API_KEY]"})
        + Reply.tool_call("read", {"path": "keys.txt"}),
        Reply.text("ok"),
    )
    b = make_bridge(project, home, model_server)
    await b.start()
    await b.open(OpenRequest("new"))
    events = await run_turn(b, "show me the key")
    await b.stop()
    outputs = [e.output for e in events if isinstance(e, ToolCallFinished)]
    assert outputs[0] == "key=[]"  # the tool's shell never gets the key
    for path in home.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(), path
    assert "[redacted]" in model_server.requests_for("chat")[1].all_text()
    assert model_server.requests_for("chat")[0].headers["authorization"] == f"Bearer {secret}"


async def test_set_model_and_usage(
    project: Path, tmp_path: Path, model_server: FakeModelServer
) -> None:
    home = tmp_path / "h"
    model_server.script("chat", Reply.text("one").with_usage(1000, 100))
    model_server.script("anthropic", Reply.text("two"))
    b = make_bridge(project, home, model_server)
    b.env["ANTHROPIC_BASE_URL"] = model_server.url
    b.env["ANTHROPIC_API_KEY"] = "k"
    await b.start()
    sid = (await b.open(OpenRequest("new"))).session_id
    events = await run_turn(b, "first")
    usage = [e for e in events if isinstance(e, Usage)][-1]
    assert (usage.input_tokens, usage.output_tokens) == (1000, 100)
    assert usage.cost_usd == pytest.approx((1000 * 2.5 + 100 * 10) / 1e6)
    assert usage.context_size == 128_000 and usage.context_used >= 1100
    await b.set_model("claude-haiku")
    await run_turn(b, "second")
    status = b.status()
    assert status["model"] == "anthropic/claude-haiku-4-5" and status["cost"].startswith("$")
    await b.stop()
    assert "first" in model_server.requests_for("anthropic")[0].all_text()
    listed = NativeStore("native", {}, home).list(project)
    assert listed[0].id == sid and listed[0].model == "anthropic/claude-haiku-4-5"
    with pytest.raises(UsageError, match="unknown model"):  # a typo of a catalog model
        await b.set_model("gpt-4p")


async def test_unknown_model_fails_at_start(
    project: Path, tmp_path: Path, model_server: FakeModelServer
) -> None:
    b = make_bridge(project, tmp_path / "h", model_server, model="gpt-9000")
    with pytest.raises(UsageError, match="unknown model 'gpt-9000'"):
        await b.start()


async def test_provider_error_ends_the_turn_with_error(
    project: Path, tmp_path: Path, model_server: FakeModelServer
) -> None:
    model_server.script("chat", Reply.error(401, "bad key"))
    b = make_bridge(project, tmp_path / "h", model_server)
    await b.start()
    await b.open(OpenRequest("new"))
    events = await run_turn(b, "hi")
    await b.stop()
    assert events[-2].type == "error" and "HTTP 401" in events[-2].message
    assert isinstance(events[-1], TurnFinished) and events[-1].stop_reason == "error"


def test_system_prompt(tmp_path: Path) -> None:
    top = tmp_path / "repo"
    sub = top / "pkg"
    sub.mkdir(parents=True)
    (top / "AGENTS.md").write_text("Use tabs.")
    (sub / "CLAUDE.md").write_text("Package rules.")
    assert find_instructions(sub)[-2:] == [top / "AGENTS.md", sub / "CLAUDE.md"]
    prompt = build_system_prompt(sub, default_tools(), ["Review only."])
    assert f"Working directory: {sub}" in prompt
    assert "- bash: Run a shell command" in prompt and "- ls:" in prompt
    assert prompt.index("Use tabs.") < prompt.index("Package rules.") < prompt.index("Review only.")


async def test_preset_system_prompt_is_added(
    project: Path, tmp_path: Path, model_server: FakeModelServer
) -> None:
    b = make_bridge(
        project,
        tmp_path / "h",
        model_server,
        settings=Settings(system_prompt="Review only; no edits."),
    )
    await b.start()
    await b.open(OpenRequest("new"))
    await run_turn(b, "hi")
    await b.stop()
    assert "Review only; no edits." in model_server.requests_for("chat")[0].system_text()


def test_listing_reads_the_index_not_the_files(tmp_path: Path) -> None:
    """Listing reads the index, not the session files (how long 10,000 take is measured by
    `benchmarks/native.py`)."""
    from benchmarks.native import make_many_sessions

    home = tmp_path / "h"
    make_many_sessions(home, 200)
    store = NativeStore("native", {}, home)
    assert len(store.list(None)) == 200  # (the first listing may build the index)
    with _opened() as opened:
        assert len(store.list(None)) == 200
    files = [Path(p) for p in opened if (home / "sessions") in Path(p).parents]
    assert files and all(f.name == ".index.jsonl" for f in files), files[:3]


_OPENING: list[list[str]] = []


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event == "open" and _OPENING and isinstance(args[0], str):
        _OPENING[-1].append(args[0])


@contextlib.contextmanager
def _opened() -> Iterator[list[str]]:
    """Every file this process opens meanwhile (an audit hook: it sees opens in any module)."""
    if not _HOOKED:
        sys.addaudithook(_audit)
        _HOOKED.append(True)
    _OPENING.append([])
    try:
        yield _OPENING[-1]
    finally:
        _OPENING.pop()


_HOOKED: list[bool] = []
