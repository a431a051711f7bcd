"""Where Claude Code keeps a session's transcript, and writing a fork the way it does.

Claude Code writes a forked session (`--resume ID --fork-session`) only with the fork's first
turn. A fork opened and left at once (`avatar session fork ID`) would be lost, so the bridge
writes it itself on leaving: the parent's entries, each re-labelled with the new session id.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from avatar.fileio import atomic_write
from avatar.sessions.claude import claude_dir, project_slug


def transcript_path(env: Mapping[str, str], cwd: Path, session_id: str) -> Path:
    """`<claude config dir>/projects/<slug of cwd>/<id>.jsonl`: where claude running in `cwd`
    with `env` reads and writes session `session_id`."""
    home = Path(env.get("HOME") or Path.home())
    project = project_slug(os.path.realpath(cwd))
    return claude_dir(env, home) / "projects" / project / f"{session_id}.jsonl"


def write_fork(source: Path, target: Path, new_id: str) -> None:
    """Copy a transcript as a new session: every entry re-labelled with `new_id`.

    Unreadable lines are skipped (as every reader of the store does); the target appears
    whole or not at all.
    """
    from avatar.sessions.jsonl import TRANSCRIPT_LINE_CAP, LineStats, iter_records

    lines: list[bytes] = []
    with source.open("rb") as src:
        for entry in iter_records(src, LineStats(), max_line=TRANSCRIPT_LINE_CAP):
            if "sessionId" in entry:
                entry["sessionId"] = new_id
            text = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
            lines.append(text.encode() + b"\n")
    atomic_write(target, b"".join(lines))
