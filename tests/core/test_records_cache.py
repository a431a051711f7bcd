"""avatar's records keep their reading up to date as they append (every turn appends), and
still see what another process appended in between."""

from __future__ import annotations

from pathlib import Path

import pytest

from avatar.sessions.records import SessionRecords


def test_the_reading_follows_own_and_foreign_appends(tmp_path: Path) -> None:
    ours, theirs = SessionRecords(tmp_path), SessionRecords(tmp_path)
    ours.opened("codex", "s-1", "/p", "gpt")
    assert ours.all() == SessionRecords(tmp_path).all()
    ours.turn("codex", "s-1", "fix the parser", "", [])
    ours.turn("codex", "s-1", None, "fixed", ["Edit parser.py"])
    fresh = SessionRecords(tmp_path).all()
    assert ours.all() == fresh and fresh[("codex", "s-1")]["messages"] == 2
    assert fresh[("codex", "s-1")]["title"] == "fix the parser"

    theirs.opened("gemini", "g-1", "/p", None)  # another process, between two of ours
    ours.name("codex", "s-1", "parser work")
    seen = ours.all()
    assert seen == SessionRecords(tmp_path).all()
    assert ("gemini", "g-1") in seen and seen[("codex", "s-1")]["name"] == "parser work"

    ours.forget("codex", "s-1")
    assert ("codex", "s-1") not in ours.all()


def test_every_reader_of_one_home_shares_one_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A server holds an engine per live session: each must not read the whole file again.
    SessionRecords(tmp_path).opened("codex", "s-1", "/p", "gpt")
    index = SessionRecords(tmp_path).index
    reads: list[Path] = []
    read_bytes = Path.read_bytes

    def counted(path: Path) -> bytes:
        if path == index:
            reads.append(path)
        return read_bytes(path)

    monkeypatch.setattr(Path, "read_bytes", counted)
    first = SessionRecords(tmp_path).all()
    assert SessionRecords(tmp_path).all() == first and ("codex", "s-1") in first
    assert len(reads) <= 1
    SessionRecords(tmp_path).opened("codex", "s-2", "/p", None)  # a known file grew by a line
    assert ("codex", "s-2") in SessionRecords(tmp_path).all()
    assert len(reads) <= 1
