"""codex's deletes delete and its forks fork (issue 31), with the real codex-acp against the
fake model server, through the installed `avatar` command.

codex-acp's `session/delete` only archives (the rollout moves to `archived_sessions/`, where
`codex unarchive` brings it back): `session delete` removes the rollout and codex's own rows
of the thread instead, so neither avatar nor codex itself lists it again, and resuming it
opens a new session with a notice. A fork codex-acp makes holds only its `session_meta`
(naming the parent's rollout and where its history ends there): it is still a session, shown
and resumed with every turn before the fork.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from pathlib import Path

import pytest

from avatar.engine.engine import Engine
from tests.support.drive import Avatar
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def _codex(home: AgentHome) -> Avatar:
    require_bridges("codex-acp")
    return Avatar(home, avatar_env(home), timeout=120)


def _files_of(home: AgentHome, sid: str) -> list[Path]:
    """Every file under CODEX_HOME named for session `sid` (rollouts, archived or not)."""
    assert home.codex_home is not None
    return [p for p in home.codex_home.rglob(f"*{sid}*") if "rollout" in p.name]


def _threads(home: AgentHome) -> set[str]:
    """The threads codex's state database holds."""
    assert home.codex_home is not None
    [state] = home.codex_home.glob("state_*.sqlite")
    with contextlib.closing(sqlite3.connect(state)) as db:
        return {row[0] for row in db.execute("SELECT id FROM threads")}


def _agent_lists(home: AgentHome) -> list[str]:
    """The sessions codex-acp itself lists (`session/list`)."""
    env = avatar_env(home)

    async def go() -> list[str]:
        engine = Engine.from_config(
            home.workdir, provider="codex", env=env, home=Path(env["AVATAR_HOME"])
        )
        try:
            agent = await engine.agent.start("codex")
            return [s.id for s in await agent.agent_sessions() or []]
        finally:
            await engine.close()

    return asyncio.run(go())


def test_delete_removes_the_rollout_and_codex_forgets_the_thread(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    avatar = _codex(agent_home)
    model_server.script("responses", "kept", "doomed")
    keep = avatar.session(avatar("-p", "codex", "chat", "keep me"))[0]
    doomed = avatar.session(avatar("-p", "codex", "chat", "delete me"))[0]
    assert _files_of(agent_home, doomed) and doomed in _threads(agent_home)

    done = avatar("session", "delete", doomed, "--yes")
    assert done.stderr == f"deleted codex session {doomed}\n"

    assert _files_of(agent_home, doomed) == []  # neither listed nor archived
    assert _threads(agent_home) == {keep}
    assert set(_agent_lists(agent_home)) == {keep}
    listed = avatar("-p", "codex", "session", "list", "--refresh", "--json").stdout
    assert [s["id"] for s in json.loads(listed)] == [keep]

    model_server.script("responses", "a new one")
    again = avatar("-p", "codex", "chat", "--resume", doomed, "hello again")
    sid, _, how = avatar.session(again)
    assert sid != doomed and how == "new" and again.stdout == "a new one\n"
    [notice] = avatar.notices(again)
    assert doomed in notice


def test_delete_of_a_session_a_fork_reads_is_refused(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    avatar = _codex(agent_home)
    model_server.script("responses", "one")
    parent = avatar.session(avatar("-p", "codex", "chat", "the word is HERON"))[0]
    fork = avatar("session", "fork", parent).stdout.strip()

    refused = avatar("session", "delete", parent, "--yes", code=1)
    assert refused.stderr.startswith(f"avatar: codex session {parent} holds the history of")
    assert fork in refused.stderr and len(refused.stderr.splitlines()) == 1
    assert _files_of(agent_home, parent) and parent in _threads(agent_home)


def test_a_fork_resumes_with_every_turn_before_it(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    avatar = _codex(agent_home)
    model_server.script("responses", "Noted the word.", "Noted the number.")
    parent = avatar.session(avatar("-p", "codex", "chat", "the word is HERON"))[0]
    avatar("chat", "--resume", parent, "the number is 47")

    forked = avatar("session", "fork", parent)
    fork = forked.stdout.strip()
    assert fork and fork != parent

    info = json.loads(avatar("session", "info", fork, "--json").stdout)
    assert info["messages"] == 4 and "files_gone" not in info
    # codex names a thread itself, from a model call after its first turn, when that call ends
    # before codex is left (the fake model names it so); else its first prompt titles it.
    assert info["title"] in {"the word is HERON", "Fake session title"}
    assert info["parent"] == f"codex/{parent}"

    model_server.script("responses", "HERON and 47.")
    went_on = avatar("chat", "--resume", fork, "what were they?")
    assert avatar.session(went_on) == (fork, "codex", "loaded")
    assert avatar.notices(went_on) == [] and went_on.stdout == "HERON and 47.\n"
    [asked] = [r for r in model_server.requests_for("responses") if r.is_main][-1:]
    said = [(m.role, m.text.strip()) for m in asked.messages()]
    for turn in (
        ("user", "the word is HERON"),
        ("assistant", "Noted the word."),
        ("user", "the number is 47"),
        ("assistant", "Noted the number."),
        ("user", "what were they?"),
    ):
        assert turn in said, said
    assert "context handed over" not in asked.all_text()
