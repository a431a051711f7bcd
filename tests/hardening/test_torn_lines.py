"""A line appended after a writer was killed mid-line is whole: the torn piece stays a line
of its own (skipped by readers) instead of swallowing the next one."""

from __future__ import annotations

import json
from pathlib import Path

from avatar.core.fileio import append_line
from avatar.sessions.records import SessionRecords
from avatar.sessions.types import SessionInfo


def test_an_append_after_a_torn_line_starts_on_a_line_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"n": 1}\n{"n": 2, "text": "cut he')  # killed mid-write
    append_line(path, b'{"n": 3}\n')
    append_line(path, b'{"n": 4}\n')
    lines = path.read_bytes().split(b"\n")
    assert lines[0] == b'{"n": 1}' and lines[2:] == [b'{"n": 3}', b'{"n": 4}', b""]


def test_a_turn_recorded_after_a_torn_one_is_read_back(tmp_path: Path) -> None:
    records = SessionRecords(tmp_path)
    records.turn("codex", "s1", "first", "one", [])
    turns = records.turns_path("codex", "s1")
    with turns.open("ab") as f:
        f.write(json.dumps({"role": "user", "text": "torn"}).encode()[:12])
    records.turn("codex", "s1", "after the crash", "", [])
    copy = records.transcript(SessionInfo("s1", "codex"))
    assert [m.text for m in copy.messages] == ["first", "one", "after the crash"]
    assert copy.skipped_lines == 1
