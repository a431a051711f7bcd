"""A return never repeats (issue 31): what is handed to a session returned to leaves out every
turn it holds already, whether it got it by a handoff, by an `--import`, or said it itself —
the real codex-acp as the session returned to, the native agent and fake ACP agents as the
legs in between, against the fake model server, whose log shows what codex was sent."""

from __future__ import annotations

import asyncio
import json

import pytest

from avatar.engine.engine import Engine
from tests.integration.test_switch_chain import engine_for, main_requests, say
from tests.support.acp_agent import provider_entry
from tests.support.homes import AgentHome, require_bridges
from tests.support.model_server import FakeModelServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

N1 = "NATIVE-ONE: sketch the tokenizer"
N2 = "NATIVE-TWO: name the tokens"
X1 = "CODEX-ONE: add a fuzz test"
F1 = "FAKE-ONE: document the grammar"
G1 = "OTHER-ONE: list the edge cases"
BACK = "BACK-ON-CODEX: what is left?"


def _fakes(home: AgentHome) -> None:
    """Two more ACP agents for the legs between (`fake`, `other`)."""
    providers = {
        name: provider_entry(
            home.root / f"{name}-state", load=True, list=True, quote_first_line=True
        )
        for name in ("fake", "other")
    }
    (home.root / "avatar-config.yaml").write_text(json.dumps({"providers": providers}))


def _on_codex(home: AgentHome, server: FakeModelServer, chain: list[tuple[str, str, bool]]) -> str:
    """Run `chain` (provider, what to say there, import into it) in one engine, the last
    step a return to codex with BACK; the text of codex's last request."""
    require_bridges("codex-acp")
    _fakes(home)
    server.default_text = "Done."

    async def go() -> None:
        engine: Engine = engine_for(home, chain[0][0])
        try:
            await engine.open()
            await say(engine, chain[0][1])
            for provider, words, imported in chain[1:]:
                await engine.switch_provider(provider, imported=imported)
                await say(engine, words)
            back = await engine.switch_provider("codex")
            assert back.how in ("loaded", "resumed")  # a return, not a new session
            await say(engine, BACK)
        finally:
            await engine.close()

    asyncio.run(go())
    return main_requests(server, "codex")[-1]


def test_a_turn_codex_got_by_handoff_is_not_handed_back(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    chain = [("native", N1, False), ("codex", X1, False), ("fake", F1, False), ("other", G1, False)]
    sent = _on_codex(agent_home, model_server, chain)
    assert sent.count(f"USER: {N1}") == 1  # in the handoff that opened codex's session only
    assert f"USER: {X1}" not in sent and F1 in sent and G1 in sent and BACK in sent


def test_a_turn_codex_got_by_import_is_not_handed_back(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    chain = [("native", N1, False), ("codex", X1, True), ("native", N2, False), ("fake", F1, False)]
    sent = _on_codex(agent_home, model_server, chain)
    assert N1 in sent and f"USER: {N1}" not in sent  # a message of codex's own since the import
    assert f"USER: {X1}" not in sent and N2 in sent and F1 in sent and BACK in sent


def test_codex_s_own_turn_is_not_handed_back_through_an_import(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    chain = [("codex", X1, False), ("native", N1, True), ("fake", F1, False)]
    sent = _on_codex(agent_home, model_server, chain)
    assert X1 in sent and f"USER: {X1}" not in sent  # codex said it: in its history only
    assert N1 in sent and F1 in sent and BACK in sent
