"""Session stores for the library tests: the real fixture files (tests/sessions/synth.py) plus
Claude and native sessions written with chosen words, all in one project of a fake HOME."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from avatar.core.config import Settings
from avatar.engine.engine import Engine
from avatar.native.store.entries import MessageEntry
from avatar.native.store.manager import SessionManager
from avatar.sessions.claude import project_slug
from tests.sessions.synth import SynthHome, populate


@dataclass
class Library:
    """A project with sessions of claude, codex, gemini and native, and engines over it."""

    root: Path
    synth: SynthHome
    secrets: dict[str, str]

    @property
    def cwd(self) -> Path:
        return Path(self.synth.cwd)

    @property
    def avatar_home(self) -> Path:
        return self.root / "avatar-home"

    def engine(self, cwd: Path | None = None) -> Engine:
        env = {**self.synth.env, "PATH": "/nonexistent", **self.secrets}
        return Engine(Settings(), cwd or self.cwd, env=env, home=self.avatar_home)

    def claude_dir(self) -> Path:
        return self.synth.home / ".claude" / "projects" / project_slug(self.synth.cwd)

    def claude_session(self, text: str, *, tool_output: str = "", when: str | None = None) -> str:
        """A Claude Code transcript: the user says `text`, the model runs a Bash call whose
        output is `tool_output`, then answers. Returns its id."""
        sid = str(uuid.uuid4())
        stamp = when or datetime.now(UTC).isoformat().replace("+00:00", "Z")
        base = {"cwd": self.synth.cwd, "sessionId": sid, "timestamp": stamp, "isSidechain": False}
        model = "claude-sonnet-4-5"
        lines = [
            {"type": "user", "message": {"role": "user", "content": text}},
            {
                "type": "assistant",
                "message": {
                    "id": "msg_1",
                    "role": "assistant",
                    "model": model,
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "toolu_1",
                            "name": "Bash",
                            "input": {"command": "ls", "description": "List the files"},
                        }
                    ],
                },
            },
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": tool_output}
                    ],
                },
            },
            {
                "type": "assistant",
                "message": {
                    "id": "msg_2",
                    "role": "assistant",
                    "model": model,
                    "content": [{"type": "text", "text": "Done."}],
                },
            },
        ]
        path = self.claude_dir() / f"{sid}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps({**base, **line}) + "\n" for line in lines))
        return sid

    def native_session(self, text: str) -> str:
        """A native session in which the user says `text`; returns its id."""
        manager = SessionManager(self.avatar_home)
        header, writer = manager.create(self.cwd, model="openai/gpt-test")
        try:
            writer.add(MessageEntry(role="user", text=text))
            writer.add(MessageEntry(role="assistant", text="Noted."))
            writer.sync()
        finally:
            writer.close()
        manager.list(self.cwd)  # the index learns the messages
        return header.id


def make_library(root: Path, n: int = 2, secrets: dict[str, str] | None = None) -> Library:
    """`n` sessions per provider cloned from the fixture files, in project `root/proj`."""
    cwd = root / "proj"
    cwd.mkdir(parents=True)
    return Library(root=root, synth=populate(root, n, cwd=str(cwd)), secrets=secrets or {})
