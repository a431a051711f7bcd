"""Helpers shared by the hardening tests: finding and reading session files (running `avatar`
is `tests.support.drive`'s)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def session_file(env: dict[str, str], session_id: str) -> Path:
    """The native session file of `session_id` under the env's `AVATAR_HOME`."""
    found = list(Path(env["AVATAR_HOME"]).glob(f"sessions/*/{session_id}.jsonl"))
    assert len(found) == 1, found
    return found[0]


def json_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of `path` parsed as JSON (a line that is not valid JSON fails the test)."""
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"", "the file does not end with a newline"
    return [json.loads(line) for line in lines[:-1]]


def message_texts(path: Path) -> list[tuple[str, str]]:
    """(role, text) of every message entry of a session file, in file order."""
    out = []
    for entry in json_lines(path)[1:]:
        if entry.get("type") == "message":
            out.append((entry["role"], entry_text(entry)))
    return out


def entry_text(entry: dict[str, Any]) -> str:
    """The text of a message entry, whatever shape its content has."""
    if "text" in entry and isinstance(entry["text"], str):
        return str(entry["text"])
    content = entry.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return ""
