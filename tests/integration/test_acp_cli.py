"""End to end: the installed `avatar` command on ACP providers (docs/design.md §3 output contract).

`chat` streams the answer to stdout and prints `session: <id> (<provider>, <how>)` and any
`notice: …` lines to stderr; `--resume ID` and `--continue` reopen the session (the next model
request carries the earlier turn); `session list --provider NAME` lists it (Gemini from disk).
Real codex-acp, Gemini CLI and claude-agent-acp run against the fake model server; the fake ACP
agent, configured as a `transport: acp` provider, covers file refusals and permissions.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.acp_agent import command as fake_agent_command
from tests.support.drive import Avatar, backdate_gemini
from tests.support.homes import REPO_ROOT, AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture
def avatar(agent_home: AgentHome) -> Avatar:
    return Avatar(agent_home, avatar_env(agent_home))


def last_request(server: FakeModelServer, api: str) -> str:
    return [r for r in server.requests_for(api) if r.is_main][-1].all_text()


@pytest.mark.parametrize(("provider", "api"), [("codex", "responses"), ("gemini", "gemini")])
def test_chat_resume_continue_list(
    avatar: Avatar, model_server: FakeModelServer, provider: str, api: str
) -> None:
    require_bridges({"codex": "codex-acp", "gemini": "gemini"}[provider])
    model_server.script(
        api,
        Reply.text("Scripted reply number one."),
        Reply.text("Scripted reply number two."),
        Reply.text("Scripted reply number three."),
    )
    first = avatar("-p", provider, "chat", "hello there")
    assert first.stdout == "Scripted reply number one.\n"
    sid, name, how = avatar.session(first)
    assert (name, how) == (provider, "new")
    assert avatar.notices(first) == []

    listed = avatar("session", "list", "--provider", provider, "--json")
    rows = json.loads(listed.stdout)
    assert [(r["id"], r["provider"]) for r in rows] == [(sid, provider)]

    backdate_gemini(avatar.home, provider, sid)
    again = avatar("-p", provider, "chat", "--resume", sid, "again")
    assert again.stdout == "Scripted reply number two.\n"
    assert avatar.session(again) == (sid, provider, "loaded")
    assert avatar.notices(again) == []
    sent = last_request(model_server, api)
    assert "hello there" in sent and "Scripted reply number one." in sent

    more = avatar("-p", provider, "chat", "--continue", "more")
    assert more.stdout == "Scripted reply number three.\n"
    assert avatar.session(more) == (sid, provider, "continued")
    sent = last_request(model_server, api)
    assert "hello there" in sent and "again" in sent and "Scripted reply number two." in sent


def test_resume_of_an_unknown_id_opens_new_with_notice(
    avatar: Avatar, model_server: FakeModelServer
) -> None:
    require_bridges("codex-acp")
    model_server.script("responses", Reply.text("Fresh start."))
    unknown = "01a20000-0000-7000-8000-000000000000"
    proc = avatar("-p", "codex", "chat", "--resume", unknown, "hi")
    assert proc.stdout == "Fresh start.\n"
    sid, _, how = avatar.session(proc)
    assert how == "new" and sid != unknown
    (notice,) = avatar.notices(proc)
    assert unknown in notice and f"opened a new session {sid}" in notice


def test_real_permission_request_denied_in_chat(
    avatar: Avatar, model_server: FakeModelServer
) -> None:
    require_bridges("claude-agent-acp")
    target = avatar.home.workdir / "made.txt"
    model_server.script(
        "anthropic",
        Reply.tool_call("Bash", {"command": f"touch {target}", "description": "make a file"}),
        Reply.text("I could not create it."),
    )
    proc = avatar("-p", "claude-acp", "chat", "create made.txt")
    assert proc.stdout == "I could not create it.\n"
    assert not target.exists()
    assert any("--permission allow" in n for n in avatar.notices(proc)), proc.stderr
    last = [r for r in model_server.requests_for("anthropic") if r.is_main][-1].messages()
    # The refusal follows the tool call (newer Claude Code may add a reminder after it).
    assert any(m.role == "tool" and "refused" in m.text.lower() for m in last[-3:])


def write_fake_provider(home: AgentHome, **options: object) -> None:
    """A `transport: acp` config entry running the fake ACP agent with `options`."""
    state = home.root / "fake-state"
    argv = fake_agent_command({"state_dir": str(state), **options})
    fake = {
        "transport": "acp",
        "command": argv,
        "env": {"PYTHONPATH": str(REPO_ROOT)},
        "state_dirs": [f"{state}/"],
    }
    config = {"providers": {"fake": fake}}
    (home.root / "avatar-config.yaml").write_text(json.dumps(config))


def test_fake_agent_files_and_permission(avatar: Avatar, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    inside = avatar.home.workdir / "notes.txt"
    inside.write_text("inside notes")
    write_fake_provider(
        avatar.home,
        permission=True,
        fs_read=str(secret),
        fs_write=str(tmp_path / "evil.txt"),
    )
    denied = avatar("-p", "fake", "chat", "do risky things")
    assert "permission: no" in denied.stdout
    assert (
        "read refused: read access to" in denied.stdout and "outside the session" in denied.stdout
    )
    assert "write refused" in denied.stdout and not (tmp_path / "evil.txt").exists()
    assert "top secret" not in denied.stdout
    assert any("--permission allow" in n for n in avatar.notices(denied)), denied.stderr

    write_fake_provider(avatar.home, permission=True, fs_read=str(inside))
    allowed = avatar("-p", "fake", "chat", "--permission", "allow", "again")
    assert "permission: yes" in allowed.stdout and "read ok: inside notes" in allowed.stdout
    assert avatar.notices(allowed) == []


def test_avatar_version_and_help_do_not_import_acp(avatar: Avatar) -> None:
    code = (
        "import sys; from avatar.cli import main\n"
        "for args in (['--version'], ['--help']):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "assert 'acp' not in sys.modules, 'acp imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=avatar.env, capture_output=True)
