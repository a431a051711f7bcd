"""A user message as the user typed it: what the REPL shows of a resumed session."""

from __future__ import annotations

from pathlib import Path

from avatar.cli.repl.mentions import inline_files, strip_inlined
from avatar.handoff import seed_prompt
from avatar.sessions.handoff_marker import END, START
from avatar.sessions.types import TranscriptMessage


def test_what_the_user_said_leaves_out_handoffs_and_injected_context() -> None:
    handoff = f"{START} from claude ===\ngoal: tabs\n{END}"
    assert TranscriptMessage("user", seed_prompt(handoff, "go on")).said == "go on"
    gemini = "<session_context>\nThis is the Gemini CLI.\n</session_context>"
    assert TranscriptMessage("user", gemini).said == ""
    assert TranscriptMessage("user", f"{gemini}\nfix the bug").said == "fix the bug"
    assert TranscriptMessage("user", "a <b>tag</b> stays").said == "a <b>tag</b> stays"


def test_attached_files_come_off_again(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    sent = inline_files("read @a.txt please", tmp_path)
    assert "alpha" in sent
    assert strip_inlined(sent) == "read @a.txt please"
    assert strip_inlined("no files here") == "no files here"
