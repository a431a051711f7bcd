"""Fuzzing every on-disk session reader with damaged files: no crash, ever.

Real files the CLIs wrote (`tests/fixtures/provider-stores/`) and a native session with every
entry type are damaged line by line (values of the wrong type, torn writes, invalid UTF-8,
arbitrary bytes and JSON, dropped and repeated lines). Listing (`summarize`) and reading
(`read_transcript`) must return — skipping what they cannot use — and never raise; the native
reader may refuse only a broken header, with a ValueError naming the file.
Run longer: see `tests/hardening/conftest.py`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from avatar.native.store.entries import (
    CompactionEntry,
    InterruptedEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionHeader,
    SteeringEntry,
    TitleEntry,
    ToolCallEntry,
    ToolResultEntry,
)
from avatar.native.store.reading import read_state, scan_record
from avatar.native.store.session_store import transcript_steps
from avatar.native.store.writer import model_line
from avatar.sessions.claude import ClaudeStore
from avatar.sessions.codex import CodexStore
from avatar.sessions.filestore import JsonlSessionStore
from avatar.sessions.gemini import GeminiStore
from tests.hardening.fuzzing import damaged_file

STORES = Path(__file__).parents[1] / "fixtures" / "provider-stores"
FIXTURES: list[tuple[type[JsonlSessionStore], str, Path]] = [
    (ClaudeStore, "claude", p) for p in sorted(STORES.glob("claude/projects/*/*.jsonl"))
]
FIXTURES += [(CodexStore, "codex", p) for p in sorted(STORES.glob("codex/sessions/**/*.jsonl"))]
FIXTURES += [(GeminiStore, "gemini", p) for p in sorted(STORES.glob("gemini/tmp/*/chats/*.jsonl"))]


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


@pytest.mark.parametrize(
    ("store_cls", "provider", "fixture"),
    FIXTURES,
    ids=[f"{p}-{f.stem[-8:]}" for _, p, f in FIXTURES],
)
def test_fuzz_provider_readers_never_crash(
    store_cls: type[JsonlSessionStore], provider: str, fixture: Path, tmp_path: Path
) -> None:
    lines = _lines(fixture)
    store = store_cls(provider, {"HOME": str(tmp_path)}, tmp_path / "avatar-home")
    target = tmp_path / fixture.name

    @given(data=damaged_file(lines))
    def check(data: bytes) -> None:
        target.write_bytes(data)
        summary = store.summarize(target, os.stat(target))
        assert all(isinstance(w, str) and "\n" not in w for w in summary.warnings)
        if summary.info is not None:
            summary.info.path = str(target)
            transcript = store.read_transcript(summary.info)
            for message in transcript.messages:
                assert isinstance(message.text, str)

    check()


def _native_lines(cwd: str) -> list[bytes]:
    header = SessionHeader(id="fuzz-one", cwd=cwd, model="openai/gpt-4o")
    entries = [
        MessageEntry(role="user", text="hello"),
        MessageEntry(role="assistant", text="calling", model="openai/gpt-4o"),
        ToolCallEntry(call_id="c1", name="read", input={"path": "a.txt"}),
        ToolResultEntry(call_id="c1", name="read", output="text", is_error=False),
        SteeringEntry(text="also this"),
        ModelChangeEntry(model="openai/gpt-4o-mini"),
        CompactionEntry(strategy="summary", summary="earlier", first_kept=None, tokens_before=9),
        InterruptedEntry(),
        TitleEntry(title="a title"),
        MessageEntry(role="assistant", text="done"),
    ]
    return [model_line(header), *(model_line(e) for e in entries)]


@given(data=st.data())
def test_fuzz_native_session_files(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    root = tmp_path_factory.mktemp("native")
    lines = _native_lines(str(root))
    damaged = data.draw(damaged_file(lines, keep_first=True))
    path = root / "fuzz-one.jsonl"
    path.write_bytes(damaged)
    state = read_state(path)  # the header is intact: everything else is skipped or read
    assert state.header.id == "fuzz-one"
    assert all("\n" not in w for w in state.warnings)
    scan_record(path)
    warnings: list[str] = []
    messages: list[object] = []
    for _ in transcript_steps(path, warnings, messages):  # type: ignore[arg-type]
        pass


@given(
    header=st.binary(max_size=200) | st.builds(lambda v: json.dumps(v).encode(), st.from_type(dict))
)
def test_fuzz_native_header_is_refused_cleanly(
    tmp_path_factory: pytest.TempPathFactory, header: bytes
) -> None:
    path = tmp_path_factory.mktemp("hdr") / "h.jsonl"
    path.write_bytes(header.replace(b"\n", b" ") + b"\n" + _native_lines("/x")[1])
    with pytest.raises(ValueError) as refused:  # NewerFormatError is one too
        read_state(path)
    assert "\n" not in str(refused.value)  # a clear one-line refusal
    scan_record(path)  # listing never raises
