"""A Claude Code transcript cut after message N (`session fork ID --at N`), on the transcripts
the real CLI wrote: the copy reads back as exactly the parent's first N messages, under the
new id, and the parent is untouched."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from avatar.core.errors import UsageError
from avatar.sessions.claude import ClaudeStore, write_fork

STORE = Path(__file__).resolve().parents[1] / "fixtures" / "provider-stores" / "claude"
NEW_ID = "0f0f0f0f-1111-4222-8333-444455556666"


@pytest.mark.parametrize(
    "source", sorted((STORE / "projects").glob("*/*.jsonl")), ids=lambda p: p.stem[:8]
)
def test_every_cut_reads_back_as_the_first_messages(tmp_path: Path, source: Path) -> None:
    shutil.copytree(STORE, tmp_path / "claude")
    store = ClaudeStore("claude", {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}, tmp_path)
    parent = store.transcript(source.stem)
    path = Path(parent.info.path or "")
    before = path.read_bytes()
    assert len(parent.messages) >= 2
    for at in range(1, len(parent.messages) + 1):
        target = path.with_name(f"{NEW_ID}.jsonl")
        write_fork(path, target, NEW_ID, at)
        cut = ClaudeStore("claude", store.env, tmp_path).transcript(NEW_ID)
        assert [(m.role, m.text) for m in cut.messages] == [
            (m.role, m.text) for m in parent.messages[:at]
        ]
        assert NEW_ID in target.read_text() and source.stem not in target.read_text()
        target.unlink()
    assert path.read_bytes() == before
    with pytest.raises(UsageError, match=f"has {len(parent.messages)} messages"):
        write_fork(path, path.with_name(f"{NEW_ID}.jsonl"), NEW_ID, len(parent.messages) + 1)
    assert not path.with_name(f"{NEW_ID}.jsonl").exists()
