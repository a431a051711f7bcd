"""`avatar acp` as an ACP client sees it (docs/design.md §12), over a project with sessions of
claude, codex and gemini (cloned from the real agents' files) and the native agent against the
fake model server: the list and its pages, bad requests answered and the connection going on,
a native turn and its permission question, avatar's slash commands, and an ACP session that
moved (a fork) reopening where it went.

The real agents and real clients: tests/integration/test_acp_face*.py.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.library.helpers import Library, make_library
from tests.support.acp_client import AcpClient, AcpError, allow, text
from tests.support.model_server import FakeModelServer, Reply

AVATAR = str(Path(sys.executable).parent / "avatar")


@pytest.fixture
def lib(tmp_path: Path) -> Library:
    return make_library(tmp_path, n=20)  # 60 sessions: more than a page of 50


def env_of(lib: Library, server: FakeModelServer | None = None) -> dict[str, str]:
    env = {
        **lib.synth.env,
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "AVATAR_HOME": str(lib.avatar_home),
        "AVATAR_CONFIG": str(lib.root / "no-config.yaml"),
    }
    if server is not None:
        env |= {"OPENAI_BASE_URL": server.openai_base_url, "OPENAI_API_KEY": "test"}
    return env


def client(lib: Library, server: FakeModelServer | None = None, **how: Any) -> AcpClient:
    running = AcpClient(
        [AVATAR, "-p", "native", "acp"], env=env_of(lib, server), cwd=lib.cwd, **how
    )
    running.initialize()
    return running


def new_session(acp: AcpClient, cwd: Path) -> str:
    sid: str = acp.request("session/new", {"cwd": str(cwd), "mcpServers": []})["sessionId"]
    return sid


def test_list_pages_every_providers_sessions(lib: Library) -> None:
    with client(lib) as acp:
        first = acp.request("session/list", {"cwd": str(lib.cwd)})
        assert len(first["sessions"]) == 50 and first["nextCursor"] == "50"
        second = acp.request("session/list", {"cwd": str(lib.cwd), "cursor": first["nextCursor"]})
        assert len(second["sessions"]) == 10 and "nextCursor" not in second
        listed = first["sessions"] + second["sessions"]
        assert len({s["sessionId"] for s in listed}) == 60
        assert {s["_meta"]["provider"] for s in listed} == {"claude", "codex", "gemini"}
        assert all(s["title"].endswith(f"({s['_meta']['provider']})") for s in listed)
        stamps = [s["updatedAt"] for s in listed]
        assert stamps == sorted(stamps, reverse=True)  # newest first
        with pytest.raises(AcpError) as bad:
            acp.request("session/list", {"cwd": str(lib.cwd), "cursor": "not-a-cursor"})
        assert bad.value.code == -32602


def test_bad_requests_are_answered_and_the_agent_goes_on(lib: Library) -> None:
    with client(lib) as acp:
        assert acp.proc.stdin is not None
        acp.proc.stdin.write(b"this is no JSON\n[1, 2]\n")  # (junk: skipped, nothing ends)
        acp.proc.stdin.flush()
        asked = {
            ("session/frobnicate", ()): -32601,
            ("session/prompt", ("sessionId", "no-such-session")): -32002,
            ("session/new", ("cwd", "relative/dir")): -32602,
            ("session/load", ("sessionId", "")): -32602,
        }
        for (method, pair), code in asked.items():
            params = dict([pair]) if pair else {}
            if method == "session/prompt":
                params["prompt"] = [text("hi")]
            with pytest.raises(AcpError) as failed:
                acp.request(method, params)
            assert failed.value.code == code, (method, failed.value.message)
        assert len(acp.request("session/list", {"cwd": str(lib.cwd)})["sessions"]) == 50


def test_a_native_turn_its_permission_question_and_the_commands(
    lib: Library, model_server: FakeModelServer
) -> None:
    write = Reply.tool_call("write", {"path": "out.txt", "content": "written\n"})
    model_server.script("chat", write, Reply.text("Could not write it."))
    with client(lib, model_server) as acp:  # (its permission answer: deny)
        sid = new_session(acp, lib.cwd)
        answer = acp.request("session/prompt", {"sessionId": sid, "prompt": [text("Write it.")]})
        assert answer["stopReason"] == "end_turn"
        assert acp.text(sid) == "Could not write it."
        [asked] = acp.asked
        assert asked["sessionId"] == sid and asked["toolCall"]["kind"] == "edit"
        assert not (lib.cwd / "out.txt").exists()
        [started] = acp.of(sid, "tool_call")
        assert started["content"][0] == {
            "type": "diff",
            "path": str(lib.cwd / "out.txt"),
            "oldText": None,
            "newText": "written\n",
        }
        [offered] = acp.of(sid, "available_commands_update")[:1]
        names = [c["name"] for c in offered["availableCommands"]]
        assert names[:6] == ["provider", "sessions", "fork", "compact", "status", "rewind"]

        status = acp.request("session/prompt", {"sessionId": sid, "prompt": [text("/status")]})
        assert status["stopReason"] == "end_turn"
        said = acp.text(sid)
        assert "agent: native" in said and f"session: {sid} (new)" in said
    # The command went to nobody: the model was asked twice, for the one turn.
    assert len(model_server.requests_for("chat")) == 2


def test_an_acp_session_reopens_where_it_went(lib: Library, model_server: FakeModelServer) -> None:
    """A `/fork` moves the ACP session to the fork; loading its id later opens the fork."""
    model_server.script("chat", "First answer.")
    with client(lib, model_server) as acp:
        sid = new_session(acp, lib.cwd)
        acp.request("session/prompt", {"sessionId": sid, "prompt": [text("Start.")]})
        acp.request("session/prompt", {"sessionId": sid, "prompt": [text("/fork")]})
        forked = acp.text(sid).split(" into native session ")[1].split()[0]
        assert forked != sid
    with client(lib, model_server) as acp:
        params = {"sessionId": sid, "cwd": str(lib.cwd), "mcpServers": []}
        acp.request("session/load", params)
        assert acp.text(sid, "user_message_chunk") == "Start."  # (the fork's history)
        acp.request("session/prompt", {"sessionId": sid, "prompt": [text("/status")]})
        assert f"session: {forked} (" in acp.text(sid)


def test_rewind_from_the_client(lib: Library, model_server: FakeModelServer) -> None:
    """`/rewind 2` after a turn that wrote a file: the file is gone, the conversation goes on
    from before that turn (the model no longer sees it), and the ACP session's id, loaded
    again, opens the rewound conversation."""
    write = Reply.tool_call("write", {"path": "made.txt", "content": "made\n"})
    model_server.script("chat", "First answer.", write, "Written.", "Next answer.")
    with client(lib, model_server, answer=allow) as acp:
        sid = new_session(acp, lib.cwd)
        for said in ("Start.", "Write the file."):
            acp.request("session/prompt", {"sessionId": sid, "prompt": [text(said)]})
        assert (lib.cwd / "made.txt").read_text() == "made\n"
        acp.request("session/prompt", {"sessionId": sid, "prompt": [text("/rewind 2")]})
        said = acp.text(sid).split("Written.", 1)[1]
        assert said.startswith("rewind: 0 files restored, 1 removed\n"), said
        assert "rewind: native's own fork of session" in said
        assert not (lib.cwd / "made.txt").exists()
        acp.request("session/prompt", {"sessionId": sid, "prompt": [text("Go on.")]})
    last = model_server.requests_for("chat")[-1].all_text()
    assert "Start." in last and "Go on." in last
    assert "Write the file." not in last
    with client(lib, model_server) as acp:
        params = {"sessionId": sid, "cwd": str(lib.cwd), "mcpServers": []}
        acp.request("session/load", params)
        users = [u["content"]["text"] for u in acp.of(sid, "user_message_chunk")]
        assert users == ["Start.", "Go on."], users


def test_what_opening_said_reaches_the_client(lib: Library, model_server: FakeModelServer) -> None:
    """A notice said while a session opens (here: the project's `.avatar.yaml` is not
    trusted) is a message the client shows, after the history `session/load` replays."""
    model_server.script("chat", "First answer.")
    with client(lib, model_server) as acp:
        sid = new_session(acp, lib.cwd)
        acp.request("session/prompt", {"sessionId": sid, "prompt": [text("Start.")]})
        assert acp.text(sid) == "First answer."  # (no project config: nothing to say)
    config = lib.cwd / ".avatar.yaml"
    config.write_text('providers:\n  codex: {command: ["sh", "-c", "exit 1"]}\n')
    with client(lib, model_server) as acp:
        params = {"sessionId": sid, "cwd": str(lib.cwd), "mcpServers": []}
        acp.request("session/load", params)
        said = acp.text(sid)
    assert said == (
        f"First answer.notice: {config} is not trusted: ignored providers.codex.command; "
        "run `avatar trust` to apply them (or --trust for this run)\n"
    )


def test_a_cancel_stops_the_turn(lib: Library, model_server: FakeModelServer) -> None:
    release = threading.Event()
    model_server.script("chat", Reply.text("one two three four").held(release))
    try:
        with client(lib, model_server) as acp:
            sid = new_session(acp, lib.cwd)
            asked = acp.start("session/prompt", {"sessionId": sid, "prompt": [text("Count.")]})
            while not acp.of(sid, "agent_message_chunk"):  # (the turn is under way)
                acp.read()
            acp.notify("session/cancel", {"sessionId": sid})
            assert acp.answer_to(asked)["stopReason"] == "cancelled"
    finally:
        release.set()


def test_the_scope_decides_before_the_client_is_asked(
    lib: Library, model_server: FakeModelServer
) -> None:
    """A write outside the project is refused by the scope: the client is never asked, even
    one that would allow everything, and nothing is written."""
    outside = lib.root / "outside.txt"
    write = Reply.tool_call("write", {"path": str(outside), "content": "pwned\n"})
    model_server.script("chat", write, Reply.text("Refused."))
    with client(lib, model_server, answer=allow) as acp:
        sid = new_session(acp, lib.cwd)
        acp.request("session/prompt", {"sessionId": sid, "prompt": [text("Write it.")]})
        assert acp.asked == []
    assert not outside.exists()


def test_files_are_avatars_own_never_the_clients(
    lib: Library, model_server: FakeModelServer
) -> None:
    """The client offers fs and terminal (`initialize`); the native agent's write, allowed, is
    made by avatar in the project: the client is asked the permission question only."""
    write = Reply.tool_call("write", {"path": "made.txt", "content": "made\n"})
    model_server.script("chat", write, Reply.text("Done."))
    with client(lib, model_server, answer=allow) as acp:
        sid = new_session(acp, lib.cwd)
        acp.request("session/prompt", {"sessionId": sid, "prompt": [text("Write it.")]})
        assert acp.called == ["session/request_permission"]
    assert (lib.cwd / "made.txt").read_text() == "made\n"


KEY = "sk-proj-" + "Zq8v" * 12  # an OpenAI key's shape, and the value of OPENAI_API_KEY


def test_no_secret_reaches_the_client_from_the_library(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """A key said in a session is masked in the list's titles and in the replayed history."""
    lib = make_library(tmp_path, n=1, secrets={"OPENAI_API_KEY": KEY})
    model_server.script("chat", f"Your key {KEY} is noted.")
    env = {**env_of(lib, model_server), "OPENAI_API_KEY": KEY}
    argv = [AVATAR, "-p", "native", "acp"]
    with AcpClient(argv, env=env, cwd=lib.cwd) as acp:
        acp.initialize()
        sid = new_session(acp, lib.cwd)
        acp.request("session/prompt", {"sessionId": sid, "prompt": [text(f"My key is {KEY}")]})
    with AcpClient(argv, env=env, cwd=lib.cwd) as acp:
        acp.initialize()
        listed = acp.request("session/list", {"cwd": str(lib.cwd)})["sessions"]
        [mine] = [s for s in listed if s["sessionId"] == sid]
        acp.request("session/load", {"sessionId": sid, "cwd": str(lib.cwd), "mcpServers": []})
        replayed = acp.text(sid, "user_message_chunk") + acp.text(sid)
        assert "My key is" in replayed and "is noted" in replayed
        assert KEY not in replayed and KEY not in mine["title"]
