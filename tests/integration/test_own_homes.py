"""Each agent's own home stays true (issue 22, acceptance 4), with the real agent CLIs against
the fake model server: `avatar session rename` on codex shows in codex's own list (codex-acp's
`session/list`, which reads codex's state database), on gemini in `gemini --list-sessions`;
`avatar session delete` on gemini removes the session from Gemini CLI's own list and leaves no
session file behind.
"""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest

from tests.integration.test_acp_real import bridge_for
from tests.support.drive import Avatar
from tests.support.homes import AgentHome, avatar_env, require_bridges

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture
def avatar(agent_home: AgentHome) -> Avatar:
    return Avatar(agent_home, avatar_env(agent_home))


def _codex_titles(home: AgentHome) -> dict[str, str | None]:
    """codex's own list of this project's sessions (codex-acp `session/list`): id → title."""

    async def go() -> dict[str, str | None]:
        bridge = bridge_for("codex", home, [])
        await bridge.start()
        try:
            return {s.id: s.title for s in await bridge.agent_sessions() or []}
        finally:
            await bridge.stop()

    return asyncio.run(go())


def _gemini_list(home: AgentHome) -> str:
    """`gemini --list-sessions` in the project, as a user would run it."""
    out = subprocess.run(
        [home.bin("gemini"), "--list-sessions"],
        env=home.env,
        cwd=home.workdir,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_rename_on_codex_shows_in_codex_s_own_list(avatar: Avatar) -> None:
    require_bridges("codex-acp")
    sid = avatar.session(avatar("-p", "codex", "chat", "explain the parser"))[0]
    assert _codex_titles(avatar.home)[sid] == "explain the parser"
    avatar("session", "rename", sid, "Parser tour")
    assert _codex_titles(avatar.home)[sid] == "Parser tour"


def test_rename_and_delete_on_gemini_reach_gemini_s_own_list(avatar: Avatar) -> None:
    require_bridges("gemini")
    keep = avatar.session(avatar("-p", "gemini", "chat", "first question here"))[0]
    doomed = avatar.session(avatar("-p", "gemini", "chat", "second question here"))[0]
    before = _gemini_list(avatar.home)
    assert keep in before and doomed in before

    avatar("session", "rename", keep, "Kept for later")
    listed = [line for line in _gemini_list(avatar.home).splitlines() if keep in line]
    assert len(listed) == 1 and "Kept for later" in listed[0], listed

    chats = next(avatar.home.gemini_dir.glob("tmp/*/chats"))
    files = {p.name for p in chats.iterdir() if doomed[:8] not in p.name}
    gone = avatar("session", "delete", doomed, "--yes")
    assert gone.stderr == f"deleted gemini session {doomed}\n"
    after = _gemini_list(avatar.home)
    assert keep in after and doomed not in after
    # No empty session file left by asking: the other files are exactly as before.
    assert {p.name for p in chats.iterdir()} == files


def test_a_claude_fork_knows_its_parent(avatar: Avatar) -> None:
    require_bridges("claude")
    sid = avatar.session(avatar("-p", "claude", "chat", "the colour is TEAL"))[0]
    forked = avatar("session", "fork", sid)
    new = forked.stdout.strip()
    assert forked.stdout == new + "\n" and new != sid
    info = json.loads(avatar("session", "info", new, "--json").stdout)
    assert info["parent"] == f"claude/{sid}"
    tree = avatar("session", "list", "--tree").stdout
    assert tree.index(sid) < tree.index(new)
    assert "the colour is TEAL" in avatar("session", "show", new).stdout
