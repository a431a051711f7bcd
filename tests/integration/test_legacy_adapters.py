"""The ACP adapters avatar pinned before their makers moved them (@zed-industries codex-acp
0.16 and claude-agent-acp 0.23, installed by `cd bridges/legacy && npm ci`) still chat,
resume by id and continue, as users who installed them last year have them on PATH.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_acp_cli import last_request
from tests.support.drive import Avatar
from tests.support.homes import REPO_ROOT, AgentHome, avatar_env
from tests.support.model_server import FakeModelServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

LEGACY_BIN = REPO_ROOT / "bridges" / "legacy" / "node_modules" / ".bin"


@pytest.mark.parametrize(
    ("provider", "program", "api"),
    [("codex", "codex-acp", "responses"), ("claude-acp", "claude-agent-acp", "anthropic")],
)
def test_old_adapter_resumes_and_continues(
    tmp_path: Path, model_server: FakeModelServer, provider: str, program: str, api: str
) -> None:
    if not (LEGACY_BIN / program).exists():
        pytest.skip("old adapters not installed: cd bridges/legacy && npm ci")
    # The old codex core knows models by last year's names (a newer one earns a warning).
    agent_home = AgentHome(tmp_path / "agent", model_server, codex_model="gpt-5.4")
    env = avatar_env(agent_home)
    config = {"providers": {provider: {"executable": str(LEGACY_BIN / program)}}}
    (agent_home.root / "avatar-config.yaml").write_text(json.dumps(config))
    avatar = Avatar(agent_home, env)
    model_server.script(api, "Old one.", "Old two.", "Old three.")

    first = avatar("-p", provider, "chat", "hello from the past")
    assert first.stdout == "Old one.\n"
    sid, _, how = avatar.session(first)
    assert how == "new"
    again = avatar("-p", provider, "chat", "--resume", sid, "again")
    assert again.stdout == "Old two.\n" and avatar.session(again)[2] in ("loaded", "resumed")
    assert "hello from the past" in last_request(model_server, api)
    more = avatar("-p", provider, "chat", "--continue", "more")
    assert more.stdout == "Old three.\n" and avatar.session(more)[0] == sid
    assert "again" in last_request(model_server, api)
