"""Synthetic session stores made from the real fixture files (for tests and benchmarks).

Each generated session is a byte copy of a real file written by the pinned CLI, with the session
id (and the ids derived from it) replaced, so the readers see exactly the shapes the agents write.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "provider-stores"
FIXTURE_CWD = "/home/dev/proj"

CLAUDE_IDS = ("1ad42afd-8f8d-4c2c-80a1-db283182c3cf", "981aee11-c201-405c-9e0f-b75b96a633f2")
CODEX_FILES = (
    "2026/11/21/rollout-2026-11-21T23-11-11-01a20060-c343-7803-adb4-a803ecb21b39.jsonl",
    "2026/11/21/rollout-2026-11-21T23-11-24-01a20060-f62a-7491-8259-1819edd4db09.jsonl",
)
GEMINI_FILE = "session-2026-11-21T23-16-60ec600d.jsonl"
GEMINI_ID = "60ec600d-7ed8-4588-9392-96e38d8cca4e"


@dataclass
class SynthHome:
    """Where the generated stores live, and the environment the stores read them with."""

    home: Path
    codex_home: Path
    cwd: str = FIXTURE_CWD

    @property
    def env(self) -> dict[str, str]:
        """HOME and CODEX_HOME for the stores."""
        return {"HOME": str(self.home), "CODEX_HOME": str(self.codex_home)}


def populate(root: Path, n: int, cwd: str = FIXTURE_CWD) -> SynthHome:
    """Write `n` sessions per provider (Claude, Codex, Gemini) for project `cwd` under `root`."""
    synth = SynthHome(home=root / "home", codex_home=root / "home" / ".codex", cwd=cwd)
    write_claude(synth, n)
    write_codex(synth, n)
    write_gemini(synth, n)
    return synth


def _retarget(data: bytes, cwd: str) -> bytes:
    return data.replace(FIXTURE_CWD.encode(), cwd.encode()).replace(
        b"/home/dev", str(Path(cwd).parent).encode()
    )


def write_claude(synth: SynthHome, n: int) -> list[str]:
    """`n` Claude transcripts in the project's directory; returns their ids."""
    from avatar.sessions.claude import project_slug

    src = FIXTURES / "claude" / "projects" / "-home-dev-proj"
    templates = [
        (sid, _retarget((src / f"{sid}.jsonl").read_bytes(), synth.cwd)) for sid in CLAUDE_IDS
    ]
    out = synth.home / ".claude" / "projects" / project_slug(synth.cwd)
    out.mkdir(parents=True, exist_ok=True)
    ids = []
    for i in range(n):
        old, data = templates[i % len(templates)]
        new = str(uuid.uuid4())
        (out / f"{new}.jsonl").write_bytes(data.replace(old.encode(), new.encode()))
        ids.append(new)
    return ids


def write_codex(synth: SynthHome, n: int) -> list[str]:
    """`n` codex rollouts spread over day directories; returns their ids."""
    src = FIXTURES / "codex" / "sessions"
    templates = []
    for rel in CODEX_FILES:
        old = rel[-(36 + 6) : -6]
        templates.append((old, _retarget((src / rel).read_bytes(), synth.cwd)))
    ids = []
    for i in range(n):
        old, data = templates[i % len(templates)]
        new = str(uuid.uuid4())
        day = synth.codex_home / "sessions" / "2026" / "11" / f"{1 + i % 28:02d}"
        day.mkdir(parents=True, exist_ok=True)
        name = f"rollout-2026-11-{1 + i % 28:02d}T10-00-{i % 60:02d}-{new}.jsonl"
        (day / name).write_bytes(data.replace(old.encode(), new.encode()))
        ids.append(new)
    return ids


def write_gemini(synth: SynthHome, n: int) -> list[str]:
    """`n` Gemini chat recordings in the project's chats directory; returns their ids."""
    gemini = synth.home / ".gemini"
    short = Path(synth.cwd).name or "project"
    chats = gemini / "tmp" / short / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    projects_file = gemini / "projects.json"
    try:
        projects = json.loads(projects_file.read_text())
    except (OSError, ValueError):
        projects = {"projects": {}}
    projects["projects"][synth.cwd] = short
    projects_file.write_text(json.dumps(projects, indent=2))
    template = FIXTURES / "gemini" / "tmp" / "proj" / "chats" / GEMINI_FILE
    data = _retarget(template.read_bytes(), synth.cwd)
    data = data.replace(b"/.gemini/tmp/proj", f"/.gemini/tmp/{short}".encode())
    ids = []
    for i in range(n):
        new = str(uuid.uuid4())
        name = f"session-2026-11-{1 + i % 28:02d}T10-{i % 60:02d}-{new[:8]}.jsonl"
        (chats / name).write_bytes(data.replace(GEMINI_ID.encode(), new.encode()))
        ids.append(new)
    return ids
