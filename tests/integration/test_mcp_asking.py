"""`avatar mcp --allow-prompt` (docs/design.md §12): the caller asks another agent through
`open_session` and `prompt`, under the permission policy `avatar mcp --permission` names
(`ask`, where nobody can answer, denies and says which flag allows it, as in `chat`), and a
cancelled call interrupts the agent's turn. Driven by the tests' stdlib MCP client against
the fake model server: the native agent (in-process), and the real codex-acp."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.mcp_client import McpClient
from tests.support.model_server import FakeModelServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def asker(home: AgentHome, *flags: str) -> McpClient:
    argv = ["avatar", "-p", "native", "mcp", "--allow-prompt", *flags]
    client = McpClient(argv, env=avatar_env(home), cwd=home.workdir, timeout=120)
    client.initialize()
    return client


def write_then_say(model_server: FakeModelServer, path: str, said: str) -> None:
    model_server.chat.append(
        Reply.tool_call("write", {"path": path, "content": "written\n"}), Reply.text(said)
    )


@pytest.mark.parametrize(("flags", "written"), [((), False), (("--permission", "allow"), True)])
def test_prompt_runs_a_turn_under_the_permission_given(
    agent_home: AgentHome, model_server: FakeModelServer, flags: tuple[str, ...], written: bool
) -> None:
    write_then_say(model_server, "asked.txt", "All done.")
    with asker(agent_home, *flags) as client:
        text, failed = client.call("prompt", {"text": "write asked.txt"})
        assert not failed, text
        answer, _, rest = text.partition("\n\n")
        assert answer == "All done."
        sid = rest.splitlines()[0].removeprefix("session: ").removesuffix(" (native)")
        assert (agent_home.workdir / "asked.txt").exists() is written
        denied = "nobody can answer a permission prompt here; use --permission allow"
        assert (denied in text) is not written, text

        # The same session again: the model sees the first turn.
        model_server.chat.append(Reply.text("Still here."))
        text, failed = client.call("prompt", {"text": "and now?", "session": sid[:8]})
        assert not failed and text.startswith("Still here.\n\nsession: " + sid), text
        assert "write asked.txt" in model_server.requests_for("chat")[-1].all_text()


def test_open_session_seeds_a_handoff(agent_home: AgentHome, model_server: FakeModelServer) -> None:
    model_server.chat.append(Reply.text("Ledger noted."))
    with asker(agent_home) as client:
        first, _ = client.call("prompt", {"text": "remember the ledger rule"})
        source = first.split("session: ")[1].split(" ")[0]
        opened, failed = client.call("open_session", {"from_session": source})
        assert not failed, opened
        info = json.loads(opened)
        assert info["provider"] == "native" and info["session"] != source
        model_server.chat.append(Reply.text("I have the context."))
        text, _ = client.call("prompt", {"text": "go on", "session": info["session"]})
        assert text.startswith("I have the context.")
        assert "remember the ledger rule" in model_server.requests_for("chat")[-1].all_text()


def test_a_cancelled_prompt_stops_the_turn(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    release = threading.Event()
    model_server.chat.append(Reply.text("a long answer").held(release))
    with asker(agent_home) as client:
        client.send(
            {
                "jsonrpc": "2.0",
                "id": "long",
                "method": "tools/call",
                "params": {"name": "prompt", "arguments": {"text": "talk"}},
            }
        )
        model_server.wait_for_request(lambda r: r.api == "chat")
        client.notify("notifications/cancelled", {"requestId": "long"})
        # The server goes on: the next request is answered, the cancelled one never.
        assert client.request("ping")["result"] == {}
        release.set()
        model_server.chat.append(Reply.text("Next one."))
        text, failed = client.call("prompt", {"text": "again"})
        assert not failed and text.startswith("Next one."), text
        assert "long" not in client.early


def test_prompt_asks_the_real_codex(agent_home: AgentHome, model_server: FakeModelServer) -> None:
    require_bridges("codex-acp")
    model_server.script("responses", "Codex here.")
    with asker(agent_home) as client:
        text, failed = client.call("prompt", {"text": "who are you?", "provider": "codex"})
        assert not failed, text
        assert text.startswith("Codex here.\n\nsession: ") and text.endswith(" (codex)"), text
        sid = text.split("session: ")[1].split(" ")[0]
        listed, _ = client.call("list_sessions", {"provider": "codex"})
        assert sid in [s["id"] for s in json.loads(listed)["sessions"]]
    assert not (Path(agent_home.workdir) / "asked.txt").exists()
