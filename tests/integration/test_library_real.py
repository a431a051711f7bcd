"""The session library with the real agent CLIs: one project, a session on claude, codex, gemini
and native, each saying its own word.

`avatar session search WORD` finds each; `chat --resume <the id it printed>` reopens the right
session and the model's next request carries the earlier turn. Renaming a claude session
writes Claude Code's own title entry and shows in `session list`; a renamed gemini session
shows in avatar. `prune --dry-run` deletes nothing; `prune --yes` deletes exactly what it
listed.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from avatar.sessions.claude import claude_dir, project_slug
from tests.support.drive import SESSION_LINE, avatar, backdate_gemini
from tests.support.homes import AgentHome, avatar_env, bridges_installed, require_bridges
from tests.support.model_server import FakeModelServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

WORDS = {"claude": "aardvark", "codex": "bison", "gemini": "chinchilla", "native": "dugong"}


@dataclass
class Project:
    home: AgentHome
    server: FakeModelServer
    env: dict[str, str]
    sessions: dict[str, str]  # provider → session id

    def avatar(self, *args: str) -> subprocess.CompletedProcess[str]:
        return avatar(self.env, self.home.workdir, *args, timeout=120)

    def last_request(self) -> str:
        """The text of the model request made last (side requests aside)."""
        return [r for r in self.server.requests if r.is_main][-1].all_text()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    if not bridges_installed("claude", "codex-acp", "gemini"):
        require_bridges("claude", "codex-acp", "gemini")
    root = tmp_path_factory.mktemp("library")
    with FakeModelServer() as server:
        home = AgentHome(root, server)
        proj = Project(home, server, avatar_env(home), {})
        for provider, word in WORDS.items():
            p = proj.avatar("-p", provider, "chat", f"remember the {word} please")
            assert p.returncode == 0, f"{provider}: {p.stderr}"
            match = SESSION_LINE.search(p.stderr)
            assert match and match.group(2) == provider, p.stderr
            proj.sessions[provider] = match.group(1)
        yield proj


@pytest.mark.parametrize("provider", list(WORDS))
def test_search_finds_each_and_its_id_resumes_it(project: Project, provider: str) -> None:
    word = WORDS[provider]
    p = project.avatar("session", "search", word, "--json")
    assert p.returncode == 0, p.stderr
    [hit] = json.loads(p.stdout)
    assert (hit["provider"], hit["id"]) == (provider, project.sessions[provider])
    assert word in hit["snippet"]
    backdate_gemini(project.home, provider, hit["id"])
    again = project.avatar("chat", "--resume", hit["id"], "which animal was it?")
    assert again.returncode == 0, again.stderr
    match = SESSION_LINE.search(again.stderr)
    assert match and match.groups()[:2] == (hit["id"], provider), again.stderr
    assert "which animal" in project.last_request()
    assert word in project.last_request()  # the earlier turn went to the model


def test_rename_claude_and_gemini(project: Project) -> None:
    claude = project.sessions["claude"]
    p = project.avatar("session", "rename", claude[:8], "Aardvark study")
    assert p.returncode == 0, p.stderr
    listing = project.avatar("session", "list")
    assert "Aardvark study" in listing.stdout, listing.stdout
    transcript = (
        claude_dir(project.home.env, project.home.home)
        / "projects"
        / project_slug(str(project.home.workdir))
        / f"{claude}.jsonl"
    )
    entries = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert {"type": "custom-title", "customTitle": "Aardvark study", "sessionId": claude} in entries
    # Claude Code still resumes the transcript with the entry in it.
    again = project.avatar("chat", "--resume", claude, "still there?")
    assert again.returncode == 0, again.stderr
    match = SESSION_LINE.search(again.stderr)
    assert match and match.groups()[:2] == (claude, "claude"), again.stderr
    assert "aardvark" in project.last_request()

    gemini = project.sessions["gemini"]
    assert project.avatar("session", "rename", gemini, "Chinchilla notes").returncode == 0
    rows = {r["id"]: r for r in json.loads(project.avatar("session", "list", "--json").stdout)}
    assert rows[gemini]["name"] == "Chinchilla notes"
    assert rows[claude]["name"] == "Aardvark study"
    found = json.loads(project.avatar("session", "search", "notes", "--json").stdout)
    assert [h["id"] for h in found] == [gemini]


def _tree(*roots: Path) -> dict[str, bytes]:
    return {
        str(p): p.read_bytes()
        for root in roots
        for p in root.rglob("*")
        if p.is_file() and p.name != ".index.jsonl"  # the native index notes deletions
    }


def test_prune_dry_run_then_yes(project: Project) -> None:
    stores = (project.home.home, Path(project.env["AVATAR_HOME"]) / "sessions")
    before = _tree(*stores)
    dry = project.avatar("session", "prune", "--older-than", "0d", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    listed = {line.split()[1] for line in dry.stdout.splitlines()}
    assert listed == set(project.sessions.values())
    assert _tree(*stores) == before
    yes = project.avatar("session", "prune", "--older-than", "0d", "--provider", "claude", "--yes")
    assert yes.returncode == 0, yes.stderr
    after = _tree(*stores)
    gone = set(before) - set(after)
    assert [Path(g).name for g in gone] == [f"{project.sessions['claude']}.jsonl"]
    assert {k: v for k, v in before.items() if k not in gone} == {
        k: v for k, v in after.items() if k in before
    }
