"""One project, sessions made with claude, codex, gemini and native through the real `avatar`.

`avatar session list --all --json` must list every one with the right provider, title and
message count without starting any agent, `avatar repl --resume <prefix>` (no `-p`) must open
the provider that owns the id, and each provider's reader must read the files its real CLI
wrote (title, count, cwd, model, transcript).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from avatar.sessions.claude import ClaudeStore
from avatar.sessions.codex import CodexStore
from avatar.sessions.gemini import GeminiStore
from tests.support import drive
from tests.support.homes import AgentHome, avatar_env, bridges_installed, require_bridges
from tests.support.model_server import FakeModelServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SESSION_LINE = re.compile(r"session: (\S+) \((\S+), (\w+)\)")
PROVIDERS = ("claude", "codex", "gemini", "native")
AGENT_PROGRAMS = ("claude", "codex-acp", "gemini", "claude-agent-acp")
#: codex names a session itself, by a model request of its own after the first turn, when that
#: answer comes before the one-shot ends it (the fake model's title; a race, as with the real
#: model): its session is then listed by that name, else by its first prompt.
CODEX_OWN_TITLE = "Fake session title"


def titled(provider: str, title: str | None, prompt: str) -> bool:
    """The title a listing may show for a session made with `prompt`."""
    return title == prompt or (provider == "codex" and title == CODEX_OWN_TITLE)


@dataclass
class Project:
    """The shared project: its HOME, the avatar env, and the session made with each provider."""

    home: AgentHome
    env: dict[str, str]
    sessions: dict[str, str]  # provider → session id
    prompts: dict[str, str]  # provider → first prompt (the expected title)

    @property
    def cwd(self) -> Path:
        return self.home.workdir

    def avatar(self, *args: str, stdin: str | None = None, env: dict[str, str] | None = None):
        return drive.avatar(env or self.env, self.cwd, *args, stdin=stdin, timeout=120)

    def store_env(self) -> dict[str, str]:
        return self.home.env


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    if not bridges_installed("claude", "codex-acp", "gemini"):
        require_bridges("claude", "codex-acp", "gemini")
    root = tmp_path_factory.mktemp("all-providers")
    with FakeModelServer() as server:
        home = AgentHome(root, server)
        env = avatar_env(home)
        sessions: dict[str, str] = {}
        prompts: dict[str, str] = {}
        for provider in PROVIDERS:
            prompt = f"first words for {provider}"
            p = drive.avatar(env, home.workdir, "-p", provider, "chat", prompt, timeout=120)
            assert p.returncode == 0, f"{provider}: {p.stderr}"
            match = SESSION_LINE.search(p.stderr)
            assert match and match.group(2) == provider, p.stderr
            sessions[provider] = match.group(1)
            prompts[provider] = prompt
        yield Project(home=home, env=env, sessions=sessions, prompts=prompts)


def _shadow_agents(tmp_path: Path) -> tuple[Path, Path]:
    """A PATH dir whose agent programs only leave a mark when run (no agent may start)."""
    bin_dir = tmp_path / "shadow-bin"
    bin_dir.mkdir()
    marks = tmp_path / "started"
    for name in AGENT_PROGRAMS:
        exe = bin_dir / name
        exe.write_text(f'#!/bin/sh\necho "{name} $*" >> "{marks}"\nexit 1\n')
        exe.chmod(0o755)
    return bin_dir, marks


def test_list_all_shows_every_provider(project: Project, tmp_path: Path) -> None:
    bin_dir, marks = _shadow_agents(tmp_path)
    env = {**project.env, "PATH": f"{bin_dir}:{project.env['PATH']}"}
    p = project.avatar("session", "list", "--all", "--json", env=env)
    assert p.returncode == 0, p.stderr
    assert not marks.exists(), f"listing started an agent: {marks.read_text()}"
    rows = json.loads(p.stdout)
    by_id = {row["id"]: row for row in rows}
    for provider, sid in project.sessions.items():
        row = by_id.get(sid)
        assert row is not None, f"{provider} session {sid} missing from {rows}"
        assert row["provider"] == provider
        assert titled(provider, row["title"], project.prompts[provider]), row
        assert row["messages"] == 2, row
        assert os.path.realpath(row["cwd"]) == os.path.realpath(project.cwd)
        assert row["created"] and row["updated"] and row["model"]
    assert len(rows) == len(project.sessions)  # nothing else (no empty start-up sessions)
    stamps = [row["updated"] or row["created"] for row in rows]
    assert stamps == sorted(stamps, reverse=True)  # newest first


def test_list_table_and_session_info(project: Project) -> None:
    p = project.avatar("session", "list", "--all")
    assert p.returncode == 0, p.stderr
    for provider, sid in project.sessions.items():
        assert sid[:8] in p.stdout and provider in p.stdout
    for provider, sid in project.sessions.items():
        info = project.avatar("session", "info", sid[:10], "--json")
        assert info.returncode == 0, info.stderr
        assert json.loads(info.stdout)["provider"] == provider


def test_hostile_ids_are_usage_errors(project: Project) -> None:
    for ref in ("../../etc/passwd", "..", "a/b"):
        p = project.avatar("session", "info", ref)
        assert p.returncode == 2 and p.stderr.startswith("avatar: "), p.stderr


@pytest.mark.parametrize("provider", PROVIDERS)
def test_repl_resume_by_prefix_opens_the_owner(project: Project, provider: str) -> None:
    sid = project.sessions[provider]
    prefix = sid[:10]
    drive.backdate_gemini(project.home, provider, sid)
    p = project.avatar("repl", "--resume", prefix, stdin="/quit\n")
    assert p.returncode == 0, p.stderr
    match = SESSION_LINE.search(p.stdout + p.stderr)
    assert match, p.stdout + p.stderr
    assert match.groups() in ((sid, provider, "resumed"), (sid, provider, "loaded"))


def test_readers_read_the_real_files(project: Project) -> None:
    env = project.store_env()
    ah = project.home.root / "reader-cache"
    cwd = project.cwd
    for provider, cls in (("claude", ClaudeStore), ("codex", CodexStore), ("gemini", GeminiStore)):
        store = cls(provider, env, ah)
        sid = project.sessions[provider]
        [info] = [s for s in store.list(cwd) if s.id == sid]
        assert titled(provider, info.title, project.prompts[provider]), info
        assert info.messages == 2 and info.model
        assert os.path.realpath(info.cwd or "") == os.path.realpath(cwd)
        assert info.created and info.updated and info.created <= info.updated
        transcript = store.transcript(sid)
        assert [(m.role, m.text) for m in transcript.messages] == [
            ("user", project.prompts[provider]),
            ("assistant", "Hello from the fake LLM."),
        ], provider
        assert store.warnings == [], store.warnings
