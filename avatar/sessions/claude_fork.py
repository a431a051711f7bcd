"""Where Claude Code keeps a session's transcript, and writing a fork the way it does.

Claude Code writes a forked session (`--resume ID --fork-session`) only with the fork's first
turn. A fork opened and left at once (`avatar session fork ID`) would be lost, so the bridge
writes it itself on leaving: the parent's entries, each re-labelled with the new session id.
A fork at a message (`session fork ID --at N`) is the same copy cut after message N; Claude
Code resumes it like any transcript (it follows `parentUuid` back from the last entry).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from avatar.core.errors import UsageError
from avatar.core.fileio import atomic_write
from avatar.sessions.claude import claude_dir, project_slug


def transcript_path(env: Mapping[str, str], cwd: Path, session_id: str) -> Path:
    """`<claude config dir>/projects/<slug of cwd>/<id>.jsonl`: where claude running in `cwd`
    with `env` reads and writes session `session_id`."""
    home = Path(env.get("HOME") or Path.home())
    project = project_slug(os.path.realpath(cwd))
    return claude_dir(env, home) / "projects" / project / f"{session_id}.jsonl"


def write_fork(source: Path, target: Path, new_id: str, at: int | None = None) -> None:
    """Copy a transcript as a new session: every entry re-labelled with `new_id`; with `at`,
    only the entries of messages 1..`at` (numbered as `session show` numbers them).

    Unreadable lines are skipped (as every reader of the store does); the target appears
    whole or not at all. A cut past the last message is a usage error naming how many
    there are.
    """
    from avatar.sessions.claude import transcript_fold
    from avatar.sessions.jsonl import TRANSCRIPT_LINE_CAP, LineStats, iter_records

    fold = transcript_fold()
    lines: list[bytes] = []
    with source.open("rb") as src:
        for entry in iter_records(src, LineStats(), max_line=TRANSCRIPT_LINE_CAP):
            if at is not None:
                fold.feed(entry)
                if len(fold.messages) > at:  # this entry starts message at+1
                    break
            if "sessionId" in entry:
                entry["sessionId"] = new_id
            text = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
            lines.append(text.encode() + b"\n")
    if at is not None and len(fold.messages) < at:
        raise UsageError(f"the session has {len(fold.messages)} messages; --at {at} is past them")
    atomic_write(target, b"".join(lines))
