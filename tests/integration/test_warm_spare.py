"""A warm codex agent opens its next session ahead (`ACPBridge.warm_up`, quirk
`lazy_session_files`): the next chat through the server takes it, so no `session/new` waits on
the way to the answer, and a session opened ahead and never used leaves nothing behind: not in
codex's own store, not in avatar's list, not after the server stops. Back to back, each chat
runs on the codex-acp that ran the one before, its session opened while that one ran. Claude's
next process starts while a long first turn still runs, and the next chat runs on it."""

from __future__ import annotations

import json
import threading
import time
import uuid
from pathlib import Path

import pytest

from tests.support.drive import SESSION_LINE, avatar, start
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, Reply
from tests.support.served import command_line, descendants, processes_with, serving
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


def opened_at(session_id: str) -> float:
    """When codex made session `session_id` (a UUIDv7: its first 48 bits are the time in ms)."""
    return (uuid.UUID(session_id).int >> 80) / 1000


def rollouts(home: AgentHome) -> list[Path]:
    """Codex's own session files in this home."""
    return sorted((home.home / ".codex" / "sessions").rglob("*.jsonl"))


def test_the_session_opened_ahead_is_the_next_one_and_leaves_nothing_unused(
    model_server: FakeModelServer, tmp_path: Path
) -> None:
    require_bridges("codex-acp")
    home = AgentHome(tmp_path, model_server)
    env = avatar_env(home)
    env.pop("OPENAI_BASE_URL", None)
    said: list[str] = []
    asked: list[float] = []
    with serving(env, home.workdir):
        for turn in ("first", "second", "third"):
            model_server.script("responses", Reply.text(f"answer to {turn}"))
            time.sleep(4)  # a person between two commands: the server warms the next agent
            asked.append(time.time())
            run = avatar(env, home.workdir, "-p", "codex", "chat", turn, timeout=120)
            assert run.returncode == 0, run.stderr
            assert run.stdout == f"answer to {turn}\n"
            found = SESSION_LINE.search(run.stderr)
            assert found
            said.append(found.group(1))
        listed = avatar(env, home.workdir, "session", "list", "--json")
    assert len(set(said)) == 3
    # The first chat's session was made for it; the next two were open before they came.
    assert opened_at(said[0]) >= asked[0] - 0.01
    assert opened_at(said[1]) < asked[1] and opened_at(said[2]) < asked[2]
    ids = {s["id"] for s in json.loads(listed.stdout)}
    assert ids == set(said)  # nothing opened ahead and unused is listed
    assert len(rollouts(home)) == 3  # nor written by codex, also after the server stopped
    after = avatar(env, home.workdir, "session", "list", "--json")
    assert {s["id"] for s in json.loads(after.stdout)} == set(said)


def codex_agents(server: int) -> list[int]:
    """The codex-acp processes the server runs (the top of each walled tree)."""
    return [p for p in processes_with("codex-acp") if p in descendants(server)]


def test_back_to_back_one_shots_run_on_the_agent_already_running(
    model_server: FakeModelServer, tmp_path: Path
) -> None:
    """One chat right after another: each runs on the codex-acp that ran the one before
    (several sessions on one agent), its session opened while the one before ran."""
    require_bridges("codex-acp")
    home = AgentHome(tmp_path, model_server)
    env = avatar_env(home)
    env.pop("OPENAI_BASE_URL", None)
    model_server.queue("responses").extend(Reply.text(f"answer {n}") for n in range(6))
    with serving(env, home.workdir) as server:
        for _ in range(2):  # the first starts an agent, the second runs on the warm one
            run = avatar(env, home.workdir, "-p", "codex", "chat", "hi", timeout=120)
            assert run.returncode == 0, run.stderr
        running = set(codex_agents(server.pid))  # (the first chat's too: its session is kept)
        asked, said = [], []
        for n in range(2, 6):  # back to back
            asked.append(time.time())
            run = avatar(env, home.workdir, "-p", "codex", "chat", "hi", timeout=120)
            assert run.returncode == 0 and run.stdout == f"answer {n}\n", run.stderr
            found = SESSION_LINE.search(run.stderr)
            assert found
            said.append(found.group(1))
            assert set(codex_agents(server.pid)) == running  # no agent started for it
        ahead = [opened_at(s) < when for when, s in zip(asked, said, strict=True)]
        # Open before it was asked for: each, but for one at most (on two busy cores a
        # session/new can take longer than the turn before it and the next client's start).
        assert sum(ahead) >= len(ahead) - 1, ahead


def test_a_gemini_session_opened_ahead_is_the_next_one_and_its_file_goes_unused(
    model_server: FakeModelServer, tmp_path: Path
) -> None:
    """Gemini CLI writes a session's file at session/new (quirk `empty_session_files`): the
    warm agent opens the next session ahead all the same, the next chat runs on it, and the
    one opened for a chat that never came leaves no file once the server stops."""
    require_bridges("gemini")
    home = AgentHome(tmp_path, model_server)
    env = avatar_env(home)
    said: list[str] = []
    seen: list[set[str]] = []
    with serving(env, home.workdir):
        for turn in ("first", "second"):
            model_server.script("gemini", Reply.text(f"answer to {turn}"))
            run = avatar(env, home.workdir, "-p", "gemini", "chat", turn, timeout=120)
            assert run.returncode == 0 and run.stdout == f"answer to {turn}\n", run.stderr
            found = SESSION_LINE.search(run.stderr)
            assert found
            said.append(found.group(1)[:8])
            time.sleep(4)  # a person between two commands: the server warms the next session
            seen.append(set(gemini_files(home)))
    assert said[1] in seen[0]  # the second chat ran on a session opened before it came
    [ahead] = seen[1] - seen[0]  # (the agent runs: only the next session is new)
    assert ahead not in set(gemini_files(home))  # unused, its file is gone
    assert said[0] in gemini_files(home) and said[1] in gemini_files(home)


def gemini_files(home: AgentHome) -> list[str]:
    """The short ids of Gemini's session files in this home."""
    files = (home.home / ".gemini" / "tmp").glob("*/chats/session-*.json*")
    return [f.name.rsplit("-", 1)[1].split(".")[0] for f in files]


def claude_sessions(server: int) -> set[str]:
    """The sessions of the claude processes the server runs (their `--session-id`)."""
    found: set[str] = set()
    for pid in descendants(server):
        words = command_line(pid).split()
        if "--session-id" in words and any(w.endswith("claude") for w in words):
            found.add(words[words.index("--session-id") + 1])
    return found


def test_a_long_first_turn_does_not_hold_back_the_next_claude(
    model_server: FakeModelServer, tmp_path: Path
) -> None:
    """A one-shot whose turn outlasts `REFILL_WITHIN` (a real model's turn of seconds): the
    server starts the next session's claude while that turn still runs, and the chat a script
    sends right after it runs on that claude (it used to start only once the turn ended, and
    the next chat waited for claude's boot)."""
    require_bridges("claude")
    home = AgentHome(tmp_path, model_server)
    env = avatar_env(home)
    release = threading.Event()
    model_server.script(
        "anthropic",
        Reply.text("A long answer.", chunks=["A long ", "answer."]).held(release),
        Reply.text("The next one."),
    )
    with serving(env, home.workdir) as server:
        first = start(env, home.workdir, "-p", "claude", "chat", "take your time")
        try:
            wait_until(
                lambda: len(claude_sessions(server.pid)) == 2,
                timeout=30,
                what="a second claude while the first turn runs",
            )
            assert first.poll() is None  # (still held: the turn runs)
        finally:
            release.set()
        out, err = first.communicate(timeout=120)
        assert first.returncode == 0 and out == "A long answer.\n", err
        found = SESSION_LINE.search(err)
        assert found
        [ahead] = claude_sessions(server.pid) - {found.group(1)}
        run = avatar(env, home.workdir, "-p", "claude", "chat", "next", timeout=120)
    assert run.returncode == 0 and run.stdout == "The next one.\n", run.stderr
    found = SESSION_LINE.search(run.stderr)
    assert found and found.group(1) == ahead
