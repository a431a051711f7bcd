"""Avatar's own copy of every turn: when an agent cannot reopen a session (its file corrupted
or gone), `chat --resume` says so and opens a new session seeded with the earlier turns, and
`session show` reads the copy; a turn killed midway (avatar and agent SIGKILLed) keeps its
prompt in the copy and the next resume carries the earlier turns."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from avatar.bridges.acp import quirks as acp_quirks
from avatar.sessions.records import SessionRecords
from avatar.sessions.types import SessionInfo
from tests.support.drive import backdate_gemini, run_avatar, talk
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

API = {"codex": "responses", "gemini": "gemini"}
BINARY = {"codex": "codex-acp", "gemini": "gemini"}


def _session_files(home: AgentHome, provider: str, sid: str) -> list[Path]:
    if provider == "gemini":
        return acp_quirks.gemini_session_files(home.env, sid)
    return list((Path(home.env["HOME"]) / ".codex" / "sessions").rglob(f"rollout-*{sid}.jsonl"))


# codex-acp answers a load of a deleted rollout as a success (and then fails every prompt with
# "thread not found"): avatar sees the files are gone and opens a new session itself.
@pytest.mark.parametrize(
    ("provider", "damage"), [("gemini", "corrupt"), ("gemini", "delete"), ("codex", "delete")]
)
def test_a_lost_session_reopens_seeded_from_avatars_copy(
    agent_home: AgentHome, model_server: FakeModelServer, provider: str, damage: str
) -> None:
    require_bridges(BINARY[provider])
    model_server.script(API[provider], "Noted.", "Noted too.", "OSPREY and FALCON.")
    sid = talk(agent_home, provider, ("remember OSPREY", "and FALCON"))
    files = _session_files(agent_home, provider, sid)
    assert files
    for path in files:
        if damage == "corrupt":
            path.write_bytes(b"\x00garbage{{{\n")
        else:
            path.unlink()

    out = run_avatar(agent_home, "chat", "--resume", sid, "which birds?")
    assert out.returncode == 0, out.stderr
    assert "OSPREY and FALCON." in out.stdout
    assert f"could not reopen session {sid}" in out.stderr
    first = [r for r in model_server.requests_for(API[provider]) if r.is_main][-1].all_text()
    assert "remember OSPREY" in first and "and FALCON" in first and "which birds?" in first

    shown = run_avatar(agent_home, "session", "show", sid)
    assert shown.returncode == 0, shown.stderr
    assert "remember OSPREY" in shown.stdout and "Noted too." in shown.stdout


@pytest.mark.parametrize("provider", ["gemini", "codex"])
def test_a_turn_killed_midway_is_kept_and_carried(
    agent_home: AgentHome, model_server: FakeModelServer, provider: str
) -> None:
    """avatar and its agent SIGKILLed in the middle of an answer: avatar's copy still has the
    prompt, and the next `chat --resume` opens a session whose request carries the earlier
    turns."""
    require_bridges(BINARY[provider])
    api = API[provider]
    model_server.script(api, "Noted.", Reply.slow_text(["never "] * 200, delay=0.2), "Both.")
    sid = talk(agent_home, provider, ["remember OSPREY"])
    backdate_gemini(agent_home, provider, sid)
    start = len(model_server.requests)
    child = subprocess.Popen(
        ["avatar", "chat", "--resume", sid, "and FALCON"],
        env=avatar_env(agent_home),
        cwd=agent_home.workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        model_server.wait_for_request(lambda r: "and FALCON" in r.all_text(), 60, start=start)
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    backdate_gemini(agent_home, provider, sid)

    copy = SessionRecords(Path(avatar_env(agent_home)["AVATAR_HOME"]))
    texts = [m.text for m in copy.transcript(SessionInfo(sid, provider)).messages]
    assert texts[:2] == ["remember OSPREY", "Noted."] and texts[-1] == "and FALCON"

    out = run_avatar(agent_home, "chat", "--resume", sid, "which birds?")
    assert out.returncode == 0, out.stderr
    assert "Both." in out.stdout
    last = [r for r in model_server.requests_for(api) if r.is_main][-1].all_text()
    assert "remember OSPREY" in last and "which birds?" in last
