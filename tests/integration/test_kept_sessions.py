"""A codex session stays loaded in the server after its chat (`avatar.server.kept`): the
follow-ups (`chat --resume ID`) join it where it runs instead of loading it again, `avatar ps`
shows it loaded since the first chat, and each follow-up prints what it prints without a
server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.drive import SESSION_LINE, avatar
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, Reply
from tests.support.served import serving

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


def _codex_home(
    model_server: FakeModelServer, tmp_path: Path, answers: int
) -> tuple[dict[str, str], Path]:
    """A home for codex on the fake model server, which answers `answer 1` … `answer N`; its
    environment and project."""
    require_bridges("codex-acp")
    home = AgentHome(tmp_path, model_server)
    env = avatar_env(home)
    env.pop("OPENAI_BASE_URL", None)
    replies = (Reply.text(f"answer {n}") for n in range(1, answers + 1))
    model_server.queue("responses").extend(replies)
    return env, home.workdir


def test_follow_ups_join_the_session_kept_loaded(
    model_server: FakeModelServer, tmp_path: Path
) -> None:
    env, cwd = _codex_home(model_server, tmp_path, answers=5)

    def ps() -> list[tuple[str, list[str], float]]:
        shown = json.loads(avatar(env, cwd, "ps", "--json").stdout)
        return [(s["session_id"], s["clients"], s["since"]) for s in shown]

    with serving(env, cwd):
        first = avatar(env, cwd, "-p", "codex", "chat", "one", timeout=120)
        assert first.returncode == 0, first.stderr
        found = SESSION_LINE.search(first.stderr)
        assert found
        session = found.group(1)
        [(listed, clients, since)] = ps()
        assert (listed, clients) == (session, [])  # loaded, without clients
        said = []
        for n in (2, 3, 4):
            run = avatar(env, cwd, "-p", "codex", "chat", "--resume", session, f"turn {n}")
            assert run.returncode == 0, run.stderr
            assert run.stdout == f"answer {n}\n"
            said.append(run.stderr)
        assert ps() == [(session, [], since)]  # the same session, loaded since the first chat
    alone = avatar(
        {**env, "AVATAR_NO_SERVER": "1"}, cwd, "-p", "codex", "chat", "--resume", session, "five"
    )
    assert alone.returncode == 0 and alone.stdout == "answer 5\n", alone.stderr
    assert said == [alone.stderr] * 3  # what a follow-up says, served or not


def test_a_resume_naming_another_agent_does_not_join_the_kept_session(
    model_server: FakeModelServer, tmp_path: Path
) -> None:
    """`-p gemini chat --resume ID` of a codex session kept loaded in the server says whose
    session it is and ends 2, as without a server: no answer from codex in its place."""
    env, cwd = _codex_home(model_server, tmp_path, answers=3)
    first = avatar(env, cwd, "-p", "codex", "chat", "one", timeout=120)
    found = SESSION_LINE.search(first.stderr)
    assert first.returncode == 0 and found, first.stderr
    session = found.group(1)
    alone = avatar(env, cwd, "-p", "gemini", "chat", "--resume", session, "two", timeout=120)
    assert alone.returncode == 2 and "belongs to codex, not gemini" in alone.stderr
    with serving(env, cwd):
        kept = avatar(env, cwd, "-p", "codex", "chat", "--resume", session, "two", timeout=120)
        assert kept.returncode == 0 and kept.stdout == "answer 2\n", kept.stderr
        served = avatar(env, cwd, "-p", "gemini", "chat", "--resume", session, "three", timeout=120)
        assert (served.returncode, served.stdout, served.stderr) == (2, "", alone.stderr)
        # and the session is not lost: its own agent resumes it
        again = avatar(env, cwd, "-p", "codex", "chat", "--resume", session, "three", timeout=120)
        assert again.returncode == 0 and again.stdout == "answer 3\n", again.stderr
