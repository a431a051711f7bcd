"""Every script in `examples/` runs on the public API against the fake model server.

The native agent answers through the fake server's chat-completions API; the ACP examples run
the real codex-acp from `bridges/`.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.homes import REPO_ROOT, AgentHome, require_bridges
from tests.support.model_server import FakeModelServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

EXAMPLES = REPO_ROOT / "examples"


def run(
    env: dict[str, str], cwd: Path, script: str, *args: str
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=150,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, f"{script} {args}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def test_every_example_is_tested() -> None:
    tested = {"one_shot.py", "stream_events.py", "sessions.py", "switch_provider.py"}
    assert {p.name for p in EXAMPLES.glob("*.py")} == tested


def test_one_shot_native(
    avatar_env: dict[str, str], agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.script("chat", "Hello from the example.")
    out = run(avatar_env, agent_home.workdir, "one_shot.py", "-p", "native", "say hello")
    assert out.stdout.strip() == "Hello from the example."
    assert re.search(r"session \S+ on native", out.stderr)
    assert model_server.requests_for("chat")[0].last_user_text() == "say hello"


def test_stream_events_shows_tools_and_asks_the_handler(
    avatar_env: dict[str, str], agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    work = agent_home.workdir
    model_server.script(
        "chat",
        Reply.tool_call("write", {"path": "notes/todo.txt", "content": "buy milk\n"}),
        Reply.tool_call("write", {"path": "secret.txt", "content": "x"}),
        "Wrote the note; the other file was refused.",
    )
    out = run(avatar_env, work, "stream_events.py", "-p", "native", "write the files")
    assert (work / "notes" / "todo.txt").read_text() == "buy milk\n"
    assert not (work / "secret.txt").exists()  # the handler denied it
    lines = out.stdout.splitlines()
    assert any(line.startswith("[permission]") and line.endswith("-> allow") for line in lines)
    assert any(line.startswith("[permission]") and line.endswith("-> deny") for line in lines)
    assert "[tool] done" in lines and "[tool] failed" in lines
    assert "[answer] Wrote the note; the other file was refused." in lines
    assert lines[-1] == "[finished] end_turn"


def test_sessions_lists_and_resumes_across_providers(
    avatar_env: dict[str, str], agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("codex-acp")
    work = agent_home.workdir
    model_server.script("responses", "codex heard PELICAN", "codex again")
    model_server.script("chat", "native heard OSPREY", "native again")
    codex = run(avatar_env, work, "one_shot.py", "-p", "codex", "the word is PELICAN")
    native = run(avatar_env, work, "one_shot.py", "-p", "native", "the word is OSPREY")
    codex_id = re.search(r"session (\S+) on codex", codex.stderr).group(1)  # type: ignore[union-attr]
    native_id = re.search(r"session (\S+) on native", native.stderr).group(1)  # type: ignore[union-attr]

    listing = run(avatar_env, work, "sessions.py").stdout
    assert codex_id in listing and native_id in listing
    found = run(avatar_env, work, "sessions.py", "--search", "pelican").stdout
    assert codex_id in found and native_id not in found and "PELICAN" in found

    # A prefix, no provider named: the id finds codex, and codex sees its earlier turn.
    resumed = run(avatar_env, work, "sessions.py", "--resume", codex_id[:13], "which word?")
    assert f"codex session {codex_id}" in resumed.stdout
    assert "PELICAN" in model_server.requests_for("responses")[-1].all_text()

    cont = run(avatar_env, work, "sessions.py", "--continue", "-p", "native", "again?")
    assert f"continued native session {native_id}" in cont.stdout
    assert "OSPREY" in model_server.requests_for("chat")[-1].all_text()


def test_switch_provider_hands_the_conversation_over(
    avatar_env: dict[str, str], agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("codex-acp")
    model_server.script("chat", "Nice to meet you, Ada.")
    model_server.script("responses", "Your name is Ada.")
    out = run(
        avatar_env,
        agent_home.workdir,
        "switch_provider.py",
        "native",
        "codex",
        "my name is Ada",
        "what is my name?",
    )
    assert "Your name is Ada." in out.stdout
    first_on_codex = model_server.requests_for("responses")[0].all_text()
    assert "what is my name?" in first_on_codex and "my name is Ada" in first_on_codex
