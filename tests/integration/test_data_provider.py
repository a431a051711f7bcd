"""A provider that is only a data entry: qwen-code, shipped in avatar/providers/providers.toml with
no code of its own, pinned in bridges/ and pointed at the fake model server (its
OpenAI-compatible mode), answers, lists and resumes through avatar like any built-in agent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from avatar.providers.registry import shipped
from tests.integration.test_acp_cli import last_request
from tests.support.drive import Avatar
from tests.support.homes import AgentHome, avatar_env, bridges_installed, require_bridges
from tests.support.model_server import FakeModelServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


def test_a_data_entry_agent_answers_lists_and_resumes(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    # qwen-code is pinned in bridges/ with the other agents: the suite downloads nothing.
    require_bridges()
    assert bridges_installed("qwen"), "bridges/ is older than its lock: run (cd bridges && npm ci)"
    spec = shipped()["qwen-code"]
    assert spec.bridge == "avatar.bridges.acp.bridge:ACPBridge" and spec.store is None  # data only
    env = avatar_env(
        agent_home, OPENAI_MODEL="qwen3-coder", OPENAI_BASE_URL=model_server.openai_base_url
    )
    # As a careful user sets it up offline: no usage statistics, no background memory writer
    # (its extra model calls would take the scripted replies meant for the conversation).
    settings = Path(env["HOME"]) / ".qwen" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(
        json.dumps(
            {
                "memory": {"enableManagedAutoMemory": False},
                "privacy": {"usageStatisticsEnabled": False},
            }
        )
    )
    avatar = Avatar(agent_home, env)
    model_server.script("chat", "Noted: KESTREL.", "It was KESTREL.")

    providers = {r["name"]: r for r in json.loads(avatar("providers", "--json").stdout)}
    assert providers["qwen-code"]["found"] and providers["qwen-code"]["version"] == "0.24.4"

    first = avatar("-p", "qwen-code", "chat", "remember KESTREL")
    assert first.stdout.strip() == "Noted: KESTREL."
    sid, provider, how = avatar.session(first)
    assert (provider, how) == ("qwen-code", "new")

    listed = json.loads(avatar("session", "list", "--provider", "qwen-code", "--json").stdout)
    assert [s["id"] for s in listed] == [sid] and listed[0]["title"] == "remember KESTREL"

    # No -p: the prefix finds the qwen-code session; qwen loads its own history.
    again = avatar("chat", "--resume", sid[:8], "which bird?")
    assert again.stdout.strip() == "It was KESTREL."
    assert avatar.session(again)[:2] == (sid, "qwen-code")
    assert "remember KESTREL" in last_request(model_server, "chat")
    # What the agent reported at its start is what `providers` now says it can do.
    providers = {r["name"]: r for r in json.loads(avatar("providers", "--json").stdout)}
    assert {"load", "list", "resume"} <= set(providers["qwen-code"]["capabilities"])
