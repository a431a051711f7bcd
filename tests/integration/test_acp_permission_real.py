"""The real codex-acp asks before it edits, and avatar checks the scope before it answers
(docs/design.md §10): an edit outside the project or of a protected path is rejected under
`--permission allow` and the file stays as it was; an edit inside the project is the policy's
to answer. The model (the fake server) asks codex for `apply_patch` through `exec_command`,
which codex applies itself as a file change after asking `session/request_permission`.

Codex asks only in a mode whose approvals go to the client: avatar sets `read-only` (its
`permission_mode` in the provider table). In codex-acp's own default mode ("agent") a model
reviews the request and approves it without asking anyone: then the outside file changed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import git_attack
from tests.support.drive import Avatar
from tests.support.homes import AgentHome, avatar_env, persistent_tmpdir, require_bridges
from tests.support.model_server import FakeModelServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture
def home(tmp_path: Path, model_server: FakeModelServer) -> Iterator[AgentHome]:
    require_bridges("codex-acp")
    # Codex offers its tools for a gpt-5 name, and runs them only with CODEX_HOME off /tmp.
    with persistent_tmpdir() as codex_home:
        home = AgentHome(
            tmp_path / "agent", model_server, codex_home=codex_home, codex_model="gpt-5.4"
        )
        # The door, without the wall behind it: inside avatar's walls under `allow`, codex runs
        # in its full-access mode and asks nothing (tests/integration/test_agent_walls.py shows
        # the walls keep the outside); here its agent runs unwalled, as where the kernel has no
        # Landlock, and every edit it wants comes to avatar as a permission request.
        write_scope(home)
        yield home


def write_scope(home: AgentHome, **scope: object) -> None:
    """avatar's config for the test: `scope`, with codex's process left outside the walls."""
    config = {"scope": {**scope, "sandbox": "commands"}}
    (home.root / "avatar-config.yaml").write_text(json.dumps(config))


#: What each file holds before codex is asked to change its one line (a config file must load).
BEFORE = "default_model: gpt-4o\n"


def patch_call(target: Path) -> Reply:
    patch = f"*** Begin Patch\n*** Update File: {target}\n@@\n-{BEFORE}+pwned\n*** End Patch\n"
    return Reply.tool_call("exec_command", {"cmd": f"apply_patch <<'EOF'\n{patch}EOF\n"})


def permission_events(stdout: str) -> list[dict[str, object]]:
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    return [e for e in events if e["type"] == "permission"]


@pytest.mark.parametrize("where", ["outside", ".git/hooks/pre-commit", ".avatar.yaml"])
def test_codex_edit_outside_or_protected_is_rejected_under_allow(
    home: AgentHome, model_server: FakeModelServer, where: str
) -> None:
    target = home.root / "outside.txt" if where == "outside" else home.workdir / where
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(BEFORE)
    model_server.script("responses", patch_call(target))
    avatar = Avatar(home, avatar_env(home))
    # Codex's one reject option for a file change is "cancel": the turn stops there (130).
    proc = avatar("-p", "codex", "chat", "--json", "--permission", "allow", "edit it", code=130)
    assert target.read_text() == BEFORE
    [asked] = permission_events(proc.stdout)
    assert asked["decision"] == "deny" and asked["kind"] == "edit"
    reason = str(asked["reason"])
    assert ("outside the session" in reason) if where == "outside" else "protected" in reason
    [notice] = avatar.notices(proc)
    assert notice.startswith("notice: denied codex's request 'Edit files'") and reason in notice


def test_codex_cannot_plant_a_commondir_under_allow(
    home: AgentHome, model_server: FakeModelServer
) -> None:
    """The commondir attack (`tests/support/git_attack.py`) as one patch codex asks to apply:
    refused, so the user's next `git status` runs nothing."""
    git_attack.init(home.workdir)
    marker = home.root / "fsmonitor-ran"
    patch = git_attack.patch(home.workdir, marker)
    call = Reply.tool_call("exec_command", {"cmd": f"apply_patch <<'EOF'\n{patch}EOF\n"})
    model_server.script("responses", call)
    avatar = Avatar(home, avatar_env(home))
    proc = avatar("-p", "codex", "chat", "--json", "--permission", "allow", "edit it", code=130)
    [asked] = permission_events(proc.stdout)
    assert asked["decision"] == "deny" and "protected" in str(asked["reason"])
    assert not (home.workdir / ".git" / "commondir").exists()
    assert not git_attack.users_git_status_runs_it(home.workdir, marker)


def test_codex_edit_inside_is_the_policys_to_answer(
    home: AgentHome, model_server: FakeModelServer
) -> None:
    target = home.workdir / "notes.txt"
    target.write_text(BEFORE)
    avatar = Avatar(home, avatar_env(home))
    # Denied, the turn ends at codex's "cancel": no second model request to answer.
    model_server.script("responses", patch_call(target))
    denied = avatar("-p", "codex", "chat", "--json", "edit it", code=130)  # ask = deny in chat
    assert target.read_text() == BEFORE
    assert [e["decision"] for e in permission_events(denied.stdout)] == ["deny"]
    model_server.script("responses", patch_call(target), Reply.text("done"))
    allowed = avatar("-p", "codex", "chat", "--json", "--permission", "allow", "edit it")
    assert target.read_text() == "pwned\n"
    assert [e["decision"] for e in permission_events(allowed.stdout)] == ["allow"]


def test_codex_command_outside_the_allow_list_is_rejected(
    home: AgentHome, model_server: FakeModelServer
) -> None:
    """A command codex asks to run outside its own sandbox must pass scope.shell_commands."""
    marker = home.root / "made-by-codex"
    write_scope(home, shell_commands=["ls"])
    escalated = {"cmd": f"touch {marker}", "sandbox_permissions": "require_escalated"}
    call = Reply.tool_call("exec_command", {**escalated, "justification": "needed"})
    model_server.script("responses", call)
    avatar = Avatar(home, avatar_env(home))
    # The reject option avatar picks (codex's first) cancels the turn, as for a file change.
    proc = avatar("-p", "codex", "chat", "--json", "--permission", "allow", "touch it", code=130)
    assert not marker.exists()
    [asked] = permission_events(proc.stdout)
    assert asked["decision"] == "deny" and "'touch' is not allowed" in str(asked["reason"])


def test_codex_starts_its_sessions_in_the_asking_mode_without_a_request(
    home: AgentHome, model_server: FakeModelServer
) -> None:
    """codex-acp takes the mode of its sessions from INITIAL_AGENT_MODE (`mode_env` in the
    provider table): avatar gives it `read-only` there and sends no `session/set_config_option`
    to set it, on a one-shot (the SDK-free bridge) and on a resumed session (the full one);
    and codex asks before an edit, which it does only in that mode."""
    sent = home.root / "sent.jsonl"
    tap = Path(__file__).parents[1] / "support" / "acp_tap.py"
    config = {
        "scope": {"sandbox": "commands"},
        "providers": {"codex": {"command": [sys.executable, str(tap), str(sent), "codex-acp"]}},
    }
    (home.root / "avatar-config.yaml").write_text(json.dumps(config))
    target = home.workdir / "notes.txt"
    target.write_text(BEFORE)
    avatar = Avatar(home, avatar_env(home))
    model_server.script("responses", patch_call(target))
    first = avatar("-p", "codex", "chat", "--json", "edit it", code=130)  # ask = deny in chat
    model_server.script("responses", patch_call(target))
    session = next(e for e in map(json.loads, first.stdout.splitlines()) if e["type"] == "session")
    again = avatar(
        "-p", "codex", "chat", "--json", "--resume", session["session_id"], "again", code=130
    )
    assert target.read_text() == BEFORE
    for proc in (first, again):
        assert [e["decision"] for e in permission_events(proc.stdout)] == ["deny"]
    methods = [json.loads(line).get("method") for line in sent.read_text().splitlines()]
    assert methods.count("session/prompt") == 2 and "session/load" in methods
    assert "session/set_config_option" not in methods and "session/set_mode" not in methods


# How the model asks each agent to write a file (the agent asks avatar before it writes).
WRITES = {
    "claude-acp": ("anthropic", "Write", lambda p: {"file_path": str(p), "content": "made\n"}),
    "gemini": ("gemini", "write_file", lambda p: {"file_path": str(p), "content": "made\n"}),
}


@pytest.mark.parametrize("provider", list(WRITES))
def test_real_agents_requests_are_checkable_and_allowed_inside(
    model_server: FakeModelServer, tmp_path: Path, provider: str
) -> None:
    """What claude-agent-acp and Gemini really send when they ask to write a file names it
    where the door looks (issue 30 denies what it cannot check): a file inside the project
    is the permission policy's to answer, and written under `--permission allow`."""
    require_bridges("claude-agent-acp" if provider == "claude-acp" else "gemini")
    home = AgentHome(tmp_path / "agent", model_server)
    write_scope(home)
    target = home.workdir / "made.txt"
    api, tool, args = WRITES[provider]
    model_server.script(api, Reply.tool_call(tool, args(target)), Reply.text("done"))
    avatar = Avatar(home, avatar_env(home))
    proc = avatar("-p", provider, "chat", "--json", "--permission", "allow", "write it")
    assert [e["decision"] for e in permission_events(proc.stdout)] == ["allow"], proc.stderr
    assert target.read_text() == "made\n"
