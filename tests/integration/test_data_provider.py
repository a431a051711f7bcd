"""A provider that is only a data entry: qwen-code, shipped in avatar/providers/providers.toml with
no code of its own, installed here from npm and pointed at the fake model server (its
OpenAI-compatible mode), answers, lists and resumes through avatar like any built-in agent.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from avatar.providers.registry import shipped
from tests.integration.test_acp_cli import last_request
from tests.support.drive import Avatar
from tests.support.homes import BRIDGES_BIN, REPO_ROOT, AgentHome, avatar_env
from tests.support.model_server import FakeModelServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

EXTRA = REPO_ROOT / "bridges" / "extra"  # git-ignored: agents installed by tests
PACKAGE = "@qwen-code/qwen-code@0.24.4"


@pytest.fixture(scope="module")
def qwen_bin() -> str:
    """qwen-code installed from npm (once per checkout) with the Node pinned in bridges/."""
    program = EXTRA / "node_modules" / ".bin" / "qwen"
    if not program.exists():
        EXTRA.mkdir(parents=True, exist_ok=True)
        # The user's own npm setup (registry, certificates), with the pinned Node first.
        env = {**os.environ, "PATH": f"{BRIDGES_BIN}:{os.environ.get('PATH', '')}"}
        out = subprocess.run(
            ["npm", "install", "--prefix", str(EXTRA), "--no-audit", "--no-fund", PACKAGE],
            capture_output=True,
            text=True,
            timeout=540,
            env=env,
        )
        assert out.returncode == 0 and program.exists(), out.stderr[-2000:]
    return str(program.parent)


def test_a_data_entry_agent_answers_lists_and_resumes(
    qwen_bin: str, agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    spec = shipped()["qwen-code"]
    assert spec.bridge == "avatar.bridges.acp.bridge:ACPBridge" and spec.store is None  # data only
    env = avatar_env(
        agent_home, OPENAI_MODEL="qwen3-coder", OPENAI_BASE_URL=model_server.openai_base_url
    )
    env["PATH"] = f"{env['PATH']}:{qwen_bin}"  # installed as a user would: found on PATH
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
