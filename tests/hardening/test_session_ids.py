"""Session ids with `/`, `..`, NUL, glob characters or control characters are refused at every
front door: command-line flags and arguments, the Python API (and so the REPL's `/resume`),
and ids an agent hands out. A refusal is one `avatar:` line; nothing is read or written
outside `$AVATAR_HOME`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from avatar.core.errors import UsageError
from avatar.engine.engine import Engine
from avatar.native.store.manager import SessionManager
from tests.support.drive import avatar
from tests.support.model_server import FakeModelServer

BAD = ["a/b", "../x", "..", "a*", "[ab]", "a?", ".hidden", "x.jsonl", "-rf", "a\nb", "a\x1bb"]
HOSTILE = Path(__file__).with_name("hostile_agent.py")


@pytest.mark.parametrize("bad", BAD)
def test_chat_resume_refuses_bad_ids(avatar_env: dict[str, str], tmp_path: Path, bad: str) -> None:
    out = avatar(avatar_env, tmp_path, "-p", "native", "chat", "--resume", bad, "hi")
    assert out.returncode == 2
    assert out.stderr == f"avatar: invalid session id {bad!r}\n"


DOORS = [
    ("chat", "-s", "{id}", "hi"),
    ("chat", "--from", "{id}", "hi"),
    ("repl", "--resume", "{id}"),
    ("session", "info", "--", "{id}"),
    ("session", "show", "--", "{id}"),
    ("session", "delete", "--yes", "--", "{id}"),
    ("session", "fork", "--", "{id}"),
    ("session", "rename", "--", "{id}", "name"),
    ("session", "export", "--", "{id}"),
]


@pytest.mark.parametrize("door", DOORS, ids=[" ".join(d[:2]) for d in DOORS])
@pytest.mark.parametrize("bad", ["../x", "a*"])
def test_every_command_refuses_bad_ids(
    avatar_env: dict[str, str], tmp_path: Path, door: tuple[str, ...], bad: str
) -> None:
    args = [a.format(id=bad) for a in door]
    out = avatar(avatar_env, tmp_path, "-p", "native", *args)
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("avatar: invalid session id ") and out.stderr.count("\n") == 1


@pytest.mark.parametrize("bad", [*BAD, "a\0b", "\0"])
async def test_the_python_api_refuses_bad_ids(tmp_path: Path, bad: str) -> None:
    engine = Engine.from_config(tmp_path, home=tmp_path / "home", env={})
    with pytest.raises(UsageError, match="invalid session id"):
        engine.find(bad)
    with pytest.raises(UsageError, match="invalid session id"):
        await engine.agent.resume(bad, "native")  # the REPL's /resume
    with pytest.raises(UsageError, match="invalid session id"):
        SessionManager(tmp_path / "home").create(tmp_path, model=None, session_id=bad)
    assert not (tmp_path / "home" / "sessions").exists() or not any(
        p.name != ".index.jsonl" for p in (tmp_path / "home" / "sessions").rglob("*.*")
    )


@pytest.mark.parametrize("bad", ["../../../escaped", "a/b", "a\x1b[31mb", "*"])
def test_an_agent_handing_out_a_bad_id_is_refused(
    avatar_env: dict[str, str], tmp_path: Path, bad: str
) -> None:
    config = Path(avatar_env["AVATAR_CONFIG"])
    command = json.dumps([sys.executable, str(HOSTILE)])
    config.write_text(f"providers:\n  hostile: {{transport: acp, command: {command}}}\n")
    out = avatar({**avatar_env, "HOSTILE_SESSION_ID": bad}, tmp_path, "-p", "hostile", "chat", "hi")
    assert out.returncode == 1
    assert out.stderr == f"avatar: hostile: the agent gave an invalid session id {bad!r}\n"
    assert "\x1b" not in out.stderr + out.stdout  # nothing the terminal would interpret
    home = Path(avatar_env["AVATAR_HOME"])
    assert not list(home.parent.rglob("escaped*"))


@pytest.mark.parametrize(
    ("flag", "name"), [("--resume", "--resume"), ("-s", "--session-id"), ("--from", "--from")]
)
def test_an_empty_session_id_is_a_usage_error(
    avatar_env: dict[str, str], tmp_path: Path, model_server: FakeModelServer, flag: str, name: str
) -> None:
    """`--resume ""` (a variable that was never set) must not quietly start a new session."""
    out = avatar(avatar_env, tmp_path, "-p", "native", "chat", flag, "", "hi")
    assert (out.returncode, out.stderr) == (2, f"avatar: {name}: the session id is empty\n")
    assert model_server.requests_for("chat") == []
    assert not list(Path(avatar_env["AVATAR_HOME"]).glob("sessions/*/*.jsonl"))
