"""`avatar acp` through the tests' stdlib ACP client (`tests/support/acp_client.py`), over
sessions the real agents made against the fake model server (docs/design.md §12):
`session/list` gives every provider's sessions of the project, and `session/load` of a
Gemini session replays its turns before answering, then goes on in it.

The Gemini session is made by Gemini CLI alone (`gemini --acp`, driven by the same stdlib
client), so avatar has no record or copy of it: what is replayed comes from the session file
Gemini wrote (read by avatar's Gemini store; were that to fail, from Gemini's own replay at
its `session/load`, which avatar keeps as the conversation this run saw)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.acp_client import AcpClient, text
from tests.support.drive import Avatar, backdate_gemini
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]

AVATAR = str(Path(sys.executable).parent / "avatar")


def test_list_has_three_providers_and_a_gemini_session_loads_with_its_turns(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("codex-acp", "claude", "gemini")
    env = avatar_env(agent_home)
    run = Avatar(agent_home, env)
    said = {"gemini": "Keep the amber lantern lit.", "codex": "Codex words.", "claude": "Hi."}
    model_server.script("gemini", "The amber lantern stays lit.")
    gemini_argv = [agent_home.bin("gemini"), "--acp"]
    with AcpClient(gemini_argv, env=agent_home.env, cwd=agent_home.workdir, timeout=200) as own:
        own.initialize()
        new = {"cwd": str(agent_home.workdir), "mcpServers": []}
        gemini = own.request("session/new", new)["sessionId"]
        asked = {"sessionId": gemini, "prompt": [text(said["gemini"])]}
        assert own.request("session/prompt", asked)["stopReason"] == "end_turn"
    [written] = agent_home.gemini_dir.glob(f"tmp/*/chats/session-*-{gemini[:8]}.jsonl")
    assert said["gemini"] in written.read_text()
    backdate_gemini(agent_home, "gemini", gemini)  # (its load then waits for no clock minute)
    model_server.script("responses", "Codex answer.")
    codex, _, _ = run.session(run("-p", "codex", "chat", said["codex"]))
    model_server.script("anthropic", "Claude answer.")
    claude, _, _ = run.session(run("-p", "claude", "chat", said["claude"]))
    # avatar has no record or copy of the Gemini session: only Gemini's file holds it.
    kept = [p for p in Path(env["AVATAR_HOME"]).rglob("*") if p.is_file()]
    assert not [p for p in kept if gemini.encode() in p.read_bytes()], kept

    with AcpClient([AVATAR, "acp"], env=env, cwd=agent_home.workdir, timeout=200) as client:
        client.initialize()
        listed = client.request("session/list", {"cwd": str(agent_home.workdir)})["sessions"]
        by_id = {s["sessionId"]: s for s in listed}
        assert {gemini, codex, claude} <= set(by_id), listed
        assert by_id[gemini]["_meta"]["provider"] == "gemini"
        assert by_id[codex]["title"].endswith("(codex)")

        loaded = client.request(
            "session/load",
            {"sessionId": gemini, "cwd": str(agent_home.workdir), "mcpServers": []},
        )
        provider = next(o for o in loaded["configOptions"] if o["id"] == "provider")
        assert provider["currentValue"] == "gemini"
        # Replayed before the answer: the user's words, then Gemini's.
        kinds = [u["sessionUpdate"] for u in client.of(gemini)]
        assert kinds[:2] == ["user_message_chunk", "agent_message_chunk"], kinds
        assert client.text(gemini, "user_message_chunk") == said["gemini"]
        # Then, when it was made within the same clock minute, the notice of the wait for
        # Gemini's same-minute bug (docs/design.md §2): what opening it said.
        replayed, _, notice = client.text(gemini).partition("notice: ")
        assert replayed == "The amber lantern stays lit."
        waited = f"gemini cannot load session {gemini} before the clock minute turns"
        assert notice == "" or notice.startswith(waited), notice

        model_server.script("gemini", "Still lit.")
        answer = client.request(
            "session/prompt", {"sessionId": gemini, "prompt": [text("Is it lit?")]}
        )
        assert answer["stopReason"] == "end_turn"
        assert client.text(gemini).endswith("Still lit.")
    # Gemini got its own history back: the first words are in the next request.
    assert said["gemini"] in model_server.requests_for("gemini")[-1].all_text()
