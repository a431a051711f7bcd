"""A prompt that is not UTF-8 (a Latin-1 terminal, a binary file piped in) is refused with one
line and exit 2 before any session is made; nothing is sent and nothing is written."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from avatar.core.errors import UsageError, utf8_text
from tests.support.homes import AgentHome
from tests.support.model_server import FakeModelServer


@pytest.mark.parametrize("via", ["argument", "stdin"])
def test_a_prompt_that_is_not_utf8_is_refused_before_a_session_exists(
    avatar_env: dict[str, str],
    agent_home: AgentHome,
    model_server: FakeModelServer,
    via: str,
) -> None:
    prompt = b"caf\xe9 au lait"
    args = [b"avatar", b"-p", b"native", b"chat", prompt if via == "argument" else b"-"]
    out = subprocess.run(
        args,
        env=avatar_env,
        cwd=agent_home.workdir,
        input=prompt if via == "stdin" else b"",
        capture_output=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert out.stderr.decode() == (
        "avatar: the prompt is not valid UTF-8 (byte 0xe9 at character 4); send it in UTF-8\n"
    )
    assert model_server.requests_for("chat") == []
    sessions = Path(avatar_env["AVATAR_HOME"]) / "sessions"
    assert not sessions.exists() or not any(sessions.rglob("*.jsonl"))


def test_the_engine_refuses_it_too() -> None:
    """The same check guards every front door: it sits where each turn's prompt passes."""
    assert utf8_text("café") == "café"
    with pytest.raises(UsageError, match="byte 0xff at character 2"):
        utf8_text("a\udcffb")
