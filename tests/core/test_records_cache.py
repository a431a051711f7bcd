"""avatar's records keep their reading up to date as they append (every turn appends), and
still see what another process appended in between."""

from __future__ import annotations

from pathlib import Path

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
