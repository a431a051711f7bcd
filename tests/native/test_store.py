"""The native session store: writer, load, index, fork, delete, lock, crash safety."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from avatar.core.errors import SessionNotFoundError, UsageError
from avatar.core.ids import is_valid_id
from avatar.native.store.entries import (
    CompactionEntry,
    EntryUsage,
    MessageEntry,
    ToolCallEntry,
    ToolResultEntry,
)
from avatar.native.store.index import INDEX_NAME, project_slug
from avatar.native.store.manager import SessionManager
from avatar.native.store.reading import index_record, read_state
from avatar.native.store.ulid import new_ulid, ulid_time
from avatar.native.store.writer import SessionBusyError, SessionWriter

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def manager(tmp_path: Path) -> SessionManager:
    return SessionManager(tmp_path / "home")


def test_ulid_is_sortable_and_monotonic() -> None:
    before = time.time()
    ids = [new_ulid() for _ in range(1000)]
    after = time.time()
    assert ids == sorted(ids) and len(set(ids)) == 1000
    assert all(len(i) == 26 for i in ids)
    # The time in the id is the time it was made (to the millisecond).
    made = ulid_time(ids[0]).timestamp()  # type: ignore[union-attr]
    assert before - 0.001 <= made <= after + 0.001
    assert new_ulid(now_ms=0) > ids[-1]  # a clock step back never breaks the order


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("01JABC", True),
        ("my-session_1.2", True),
        ("../x", False),
        ("a/b", False),
        (".hidden", False),
        ("", False),
        ("x.jsonl", False),
        ("a" * 129, False),
        ("a" * 128, True),
        ("a..b", False),
        ("a\x00b", False),
        ("a\\b", False),
        ("x.jsonl.", True),
        ("ses:01J", True),  # one syntax for every provider's ids; `:` is a file name character
    ],
)
def test_session_id_validation(value: str, ok: bool) -> None:
    assert is_valid_id(value) is ok


def test_layout_header_and_entries(manager: SessionManager, tmp_path: Path) -> None:
    cwd = tmp_path / "my proj"
    header, writer = manager.create(cwd, model="openai/gpt-4o")
    writer.add(MessageEntry(role="user", text="hello"))
    writer.close()
    path = manager.root / project_slug(cwd) / f"{header.id}.jsonl"
    assert path.is_file() and project_slug(cwd).startswith("my-proj-")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0] == {
        "type": "session",
        "version": 1,
        "id": header.id,
        "created": header.created,
        "cwd": str(cwd),
        "provider": "native",
        "model": "openai/gpt-4o",
    }
    assert lines[1]["type"] == "message" and {"id", "timestamp"} <= lines[1].keys()


def test_writer_keeps_order_under_load(manager: SessionManager, tmp_path: Path) -> None:
    _, writer = manager.create(tmp_path, model="m")
    for i in range(5000):
        writer.add(MessageEntry(role="user", text=str(i)))
    writer.flush()
    size = writer.path.stat().st_size
    writer.close()
    state = read_state(writer.path)
    assert [m.text for m in state.messages] == [str(i) for i in range(5000)]
    assert writer.path.stat().st_size == size  # flush had already written everything


def test_context_rebuild_tool_pairs_and_compaction(manager: SessionManager, tmp_path: Path) -> None:
    header, w = manager.create(tmp_path, model="openai/gpt-4o")
    first = MessageEntry(role="user", text="one")
    w.add(first)
    w.add(MessageEntry(role="assistant", text="", usage=EntryUsage(input=100, output=20, cost=0.5)))
    w.add(ToolCallEntry(call_id="c1", name="ls", input={}))
    w.add(ToolCallEntry(call_id="c2", name="read", input={"path": "x"}))
    w.add(ToolResultEntry(call_id="c1", name="ls", output="x"))
    # c2 never got a result (crash): load must answer it
    keep = MessageEntry(role="user", text="two")
    w.add(keep)
    w.add(MessageEntry(role="assistant", text="ok"))
    w.close()
    state = read_state(w.path)
    ctx = state.context()
    assert [m.role for m in ctx] == ["user", "assistant", "tool", "tool", "user", "assistant"]
    assert ctx[3].tool_call_id == "c2" and ctx[3].is_error
    assert state.message_count == 4 and state.cost == 0.5 and state.display_title == "one"

    w = manager.open_writer(header.id)
    w.add(CompactionEntry(strategy="summary", summary="we listed files", first_kept=keep.id))
    w.add(MessageEntry(role="user", text="three"))
    w.close()
    state = read_state(w.path)
    assert [m.text for m in state.messages] == [
        state.messages[0].text,
        "two",
        "ok",
        "three",
    ]
    assert "we listed files" in state.messages[0].text and state.compactions == 1


def test_torn_and_unknown_lines_are_skipped_with_warnings(
    manager: SessionManager, tmp_path: Path
) -> None:
    header, w = manager.create(tmp_path, model="m")
    w.add(MessageEntry(role="user", text="kept"))
    w.close()
    with open(w.path, "ab") as f:
        f.write(b'{"type":"future_thing","id":"1","timestamp":"x"}\n')
        f.write(b"not json\n")
        f.write(b'{"type":"message","id":"ab","timestamp":"t","role":"us')  # torn, no newline
    state = read_state(w.path)
    assert [m.text for m in state.messages] == ["kept"]
    assert len(state.warnings) == 3
    assert "unknown entry type 'future_thing'" in state.warnings[0]
    assert "broken line" in state.warnings[1] and "torn" in state.warnings[2]
    # Appending after a torn tail starts on a fresh line.
    w = manager.open_writer(header.id)
    w.add(MessageEntry(role="user", text="after"))
    w.close()
    assert [m.text for m in read_state(w.path).messages] == ["kept", "after"]


def test_second_writer_is_refused(manager: SessionManager, tmp_path: Path) -> None:
    header, w = manager.create(tmp_path, model="m")
    code = (
        "import sys; from pathlib import Path\n"
        "from avatar.native.store.writer import SessionWriter\n"
        "try:\n    SessionWriter(Path(sys.argv[1]))\nexcept Exception as e:\n"
        "    print(type(e).__name__, e); sys.exit(3)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(w.path)], capture_output=True, text=True, cwd=ROOT
    )
    assert out.returncode == 3 and "SessionBusyError" in out.stdout
    with pytest.raises(SessionBusyError):
        manager.delete(header.id)
    w.close()
    w2 = SessionWriter(w.path)  # free again
    w2.close()


async def test_async_sync(manager: SessionManager, tmp_path: Path) -> None:
    _, w = manager.create(tmp_path, model="m")
    w.add(MessageEntry(role="user", text="x"))
    await w.async_sync()
    assert b'"text":"x"' in w.path.read_bytes()
    w.close()


def test_list_find_resolve_and_index_healing(manager: SessionManager, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    ids = []
    for cwd, text in ((a, "first in a"), (a, "second in a"), (b, "only in b")):
        header, w = manager.create(cwd, model="openai/gpt-4o")
        w.add(MessageEntry(role="user", text=text))
        w.add(MessageEntry(role="assistant", text="ok"))
        w.close()
        ids.append(header.id)
    listed = manager.list(a)
    assert [r.id for r in listed] == [ids[1], ids[0]]  # newest first
    assert listed[0].title == "second in a" and listed[0].messages == 2  # stale → rescanned
    assert {r.id for r in manager.list(None)} == set(ids)
    assert manager.resolve(ids[2]).id == ids[2]
    assert manager.resolve(ids[2].lower()).id == ids[2]
    with pytest.raises(UsageError, match="ambiguous"):
        manager.resolve(ids[0][:3])
    with pytest.raises(SessionNotFoundError):
        manager.resolve("ZZZZ")
    # The index is only a cache: delete it and everything is rebuilt from the files.
    for index in manager.root.glob(f"*/{INDEX_NAME}"):
        index.unlink()
    assert {r.id for r in manager.list(None)} == set(ids)
    assert manager.list(a)[0].messages == 2
    # A file removed behind the index's back disappears from the listing.
    (manager.path_of(ids[2]) or Path("/nonexistent")).unlink()
    assert {r.id for r in manager.list(None)} == set(ids[:2])


def test_index_compacts_itself(manager: SessionManager, tmp_path: Path) -> None:
    _, w = manager.create(tmp_path, model="m")
    for i in range(200):
        w.add(MessageEntry(role="user", text=str(i)))
        w.flush()
        state = read_state(w.path)
        manager.update_index(w.path, index_record(state, w.size()))
    w.close()
    index = w.path.parent / INDEX_NAME
    assert len(index.read_text().splitlines()) > 200
    assert manager.list(tmp_path)[0].messages == 200
    assert len(index.read_text().splitlines()) == 1
    # The rewritten index names no paths: the files' places are the truth (a moved home works).
    assert manager.list(tmp_path)[0].path == str(w.path)
    assert '"path"' not in index.read_text()


def test_fork_copies_and_leaves_the_parent(manager: SessionManager, tmp_path: Path) -> None:
    header, w = manager.create(tmp_path, model="m")
    first = MessageEntry(role="user", text="one")
    w.add(first)
    w.add(MessageEntry(role="user", text="two"))
    w.close()
    before = w.path.read_bytes()
    child = manager.fork(header.id)
    state = manager.load(child).state
    assert state.header.parent_id == header.id and [m.text for m in state.messages] == [
        "one",
        "two",
    ]
    assert w.path.read_bytes() == before
    partial = manager.fork(header.id, at_entry=first.id)
    pstate = manager.load(partial).state
    assert [m.text for m in pstate.messages] == ["one"] and pstate.header.branch_point == first.id
    with pytest.raises(UsageError):
        manager.fork(header.id, at_entry="nope")


def test_title_and_delete(manager: SessionManager, tmp_path: Path) -> None:
    header, w = manager.create(tmp_path, model="m")
    w.add(MessageEntry(role="user", text="derived title\nmore"))
    w.close()
    assert manager.list(tmp_path)[0].title == "derived title"
    manager.set_title(header.id, "Chosen")
    assert manager.list(tmp_path)[0].title == "Chosen"
    manager.delete(header.id)
    assert manager.list(tmp_path) == [] and not manager.exists(header.id)
    with pytest.raises(SessionNotFoundError):
        manager.delete(header.id)


def test_explicit_id(manager: SessionManager, tmp_path: Path) -> None:
    header, w = manager.create(tmp_path, model="m", session_id="my-id")
    w.close()
    assert header.id == "my-id" and manager.exists("my-id")
    with pytest.raises(UsageError, match="already exists"):
        manager.create(tmp_path, model="m", session_id="my-id")
    with pytest.raises(UsageError, match="invalid session id"):
        manager.create(tmp_path, model="m", session_id="../evil")


def test_crash_safety_sigkill_at_random_moments(tmp_path: Path) -> None:
    """Acceptance 5: 60 writers killed mid-append; every reported-flushed entry survives."""
    runs = 60
    out = subprocess.run(
        [sys.executable, "-m", "tests.native.crash_child", str(tmp_path / "home"), str(runs), "7"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 0, out.stderr
    results = json.loads(out.stdout)
    assert len(results) == runs
    manager = SessionManager(tmp_path / "home")
    total = 0
    torn = 0
    for run in results:
        if run["id"] is None:
            continue  # killed before the header was reported
        state = manager.load(run["id"]).state
        on_disk = {m.entry_id for m in state.messages}
        missing = set(run["flushed"]) - on_disk
        assert not missing, f"{run['id']}: {len(missing)} flushed entries lost"
        assert len(state.warnings) <= 1  # at most the torn last line
        torn += len(state.warnings)
        total += len(run["flushed"])
        # The session stays appendable after the crash.
        w = manager.open_writer(run["id"])
        w.add(MessageEntry(role="user", text="after crash"))
        w.close()
        assert manager.load(run["id"]).state.messages[-1].text == "after crash"
    assert total > 0
