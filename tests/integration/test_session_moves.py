"""Sessions that move, with the real agent CLIs against the fake model server (issue 12):

- `session export --archive` of a claude, a codex, a gemini and a native session, `session
  import` under another HOME and another project path, then `chat --resume` there: the model's
  next request carries the earlier turns;
- `session fork ID --at 2` of a claude session: the fork's next request carries exactly the
  first two messages, and the parent's file is unchanged.
"""

from __future__ import annotations

import json
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.support.drive import SESSION_LINE, avatar, backdate_gemini
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

PROVIDERS = (
    ("claude", "anthropic"),
    ("codex", "responses"),
    ("gemini", "gemini"),
    ("native", "chat"),
)


def started(p: subprocess.CompletedProcess[str]) -> tuple[str, str, str]:
    assert p.returncode == 0, p.stderr
    match = SESSION_LINE.search(p.stderr)
    assert match, p.stderr
    return match.group(1), match.group(2), match.group(3)


def said(server: FakeModelServer, api: str) -> str:
    return "\n".join(server.requests_for(api)[-1].conversation_texts())


def test_archives_round_trip_to_another_home_and_project(
    tmp_path: Path, agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("claude", "codex-acp", "gemini")
    env, cwd = avatar_env(agent_home), agent_home.workdir
    made: dict[str, str] = {}
    for provider, api in PROVIDERS:
        model_server.script(api, f"{provider} remembers the plum")
        sid, name, how = started(avatar(env, cwd, "-p", provider, "chat", f"{provider}: plum"))
        assert (name, how) == (provider, "new")
        made[provider] = sid
        backdate_gemini(agent_home, provider, sid)  # no wait for Gemini's same-minute reload

    # Another machine: a new HOME (agents' stores), AVATAR_HOME and project path.
    other = AgentHome(tmp_path / "elsewhere", model_server)
    other_env = avatar_env(other)
    project = other.workdir / "moved-project"
    project.mkdir()
    for provider, sid in made.items():
        archive = tmp_path / f"{provider}.tar.gz"
        packed = avatar(env, cwd, "session", "export", sid, "--archive", str(archive))
        assert packed.returncode == 0, packed.stderr
        with tarfile.open(archive) as tar:
            manifest = json.load(tar.extractfile("manifest.json"))  # type: ignore[arg-type]
        assert manifest["format"] == 1 and manifest["provider"] == provider

        restored = avatar(other_env, project, "session", "import", str(archive))
        assert restored.returncode == 0, restored.stderr
        assert restored.stdout.strip() == sid
    again = avatar(other_env, project, "session", "import", str(tmp_path / "claude.tar.gz"))
    assert again.returncode == 2 and again.stderr.startswith("avatar: ")
    assert "already exists here; not overwritten" in again.stderr

    listed = json.loads(avatar(other_env, project, "session", "list", "--json").stdout)
    assert {(r["provider"], r["id"]) for r in listed} == {(p, s) for p, s in made.items()}
    assert {r["cwd"] for r in listed} == {str(project.resolve())}

    for provider, api in PROVIDERS:
        sid = made[provider]
        model_server.script(api, "still here")
        resumed = avatar(other_env, project, "chat", "--resume", sid, "what fruit?")
        got_id, got_provider, how = started(resumed)
        assert (got_id, got_provider) == (sid, provider) and how in ("resumed", "loaded")
        assert f"{provider}: plum" in said(model_server, api), provider
        assert f"{provider} remembers the plum" in said(model_server, api), provider

    # A fork at a message is refused where the provider cannot make one.
    refused = avatar(env, cwd, "session", "fork", made["codex"], "--at", "1")
    assert refused.returncode == 1
    assert refused.stderr == "avatar: cannot fork at a message on codex\n"


def test_claude_fork_at_two_messages(agent_home: AgentHome, model_server: FakeModelServer) -> None:
    require_bridges("claude")
    env, cwd = avatar_env(agent_home), agent_home.workdir
    model_server.script("anthropic", "First answer.", "Second answer.", "Third answer.")
    sid, _, _ = started(avatar(env, cwd, "-p", "claude", "chat", "first question"))
    started(avatar(env, cwd, "chat", "--resume", sid, "second question"))
    parent = next(agent_home.claude_dir.glob(f"projects/*/{sid}.jsonl"))
    before = parent.read_bytes()

    fork = avatar(env, cwd, "session", "fork", sid, "--at", "2")
    fork_id = fork.stdout.strip()
    assert started(fork) == (fork_id, "claude", "forked") and fork_id != sid
    assert parent.read_bytes() == before
    shown = avatar(env, cwd, "session", "show", fork_id).stdout
    assert "── 2. assistant\nFirst answer." in shown and "── 3." not in shown
    listed = json.loads(avatar(env, cwd, "session", "list", "--json").stdout)
    assert {r["id"]: r.get("parent") for r in listed}[fork_id] == f"claude/{sid}"

    resumed = avatar(env, cwd, "chat", "--resume", fork_id, "third question")
    assert started(resumed) == (fork_id, "claude", "resumed")
    texts = [t for t in model_server.requests_for("anthropic")[-1].conversation_texts() if t]
    spoken = [t for t in texts if "question" in t or "answer" in t.lower()]
    assert spoken[0].endswith("first question") and spoken[1] == "First answer."
    assert spoken[-1].endswith("third question") and len(spoken) == 3
    assert "second question" not in "\n".join(texts) and "Second answer." not in texts
    assert parent.read_bytes() == before
