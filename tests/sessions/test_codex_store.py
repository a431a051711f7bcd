"""CodexStore against real codex rollouts (tests/fixtures) and crafted variants."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from avatar.core.errors import ProviderError, SessionNotFoundError, UsageError
from tests.sessions.conftest import Homes

EXEC = "01a20060-c343-7803-adb4-a803ecb21b39"  # codex exec 0.169: one turn
ACP = "01a20060-f62a-7491-8259-1819edd4db09"  # codex-acp 0.16: two turns
NEW = "019a0000-0000-7000-8000-000000000001"
FORK = "019a0000-0000-7000-8000-0000000000f0"


def line(kind: str, payload: dict, stamp: str = "2026-11-21T10:00:00.000Z") -> dict:
    return {"timestamp": stamp, "type": kind, "payload": payload}


def meta(sid: str = NEW, cwd: str = "/home/dev/proj") -> dict:
    return line(
        "session_meta",
        {
            "id": sid,
            "timestamp": "2026-11-21T09:59:59.000Z",
            "cwd": cwd,
            "base_instructions": {"text": "long " * 100},
            "git": {"branch": "main"},
        },
    )


def msg(role: str, text: str) -> dict:
    kind = "output_text" if role == "assistant" else "input_text"
    return line(
        "response_item",
        {"type": "message", "role": role, "content": [{"type": kind, "text": text}]},
    )


def write(homes: Homes, entries: list[dict | str], sid: str = NEW) -> Path:
    path = homes.codex_day / f"rollout-2026-11-21T10-00-00-{sid}.jsonl"
    path.write_text("\n".join(e if isinstance(e, str) else json.dumps(e) for e in entries) + "\n")
    return path


def test_lists_fixture_sessions(homes: Homes) -> None:
    store = homes.codex()
    sessions = {s.id: s for s in store.list(None)}
    assert set(sessions) == {EXEC, ACP}
    acp = sessions[ACP]
    assert acp.provider == "codex"
    assert acp.title == "Say hello"  # not the injected <environment_context>
    assert acp.messages == 4
    assert acp.cwd == "/home/dev/proj"
    assert acp.model == "gpt-5.4"
    assert acp.created == datetime(2026, 11, 21, 23, 11, 24, 202000, tzinfo=UTC)
    assert acp.updated == datetime(2026, 11, 21, 23, 11, 33, 783000, tzinfo=UTC)
    assert sessions[EXEC].title == "hello" and sessions[EXEC].messages == 2
    assert sessions[EXEC].model == "fake-model"
    assert store.warnings == []


def test_cwd_filter(homes: Homes) -> None:
    store = homes.codex()
    assert {s.id for s in store.list(Path("/home/dev/proj"))} == {EXEC, ACP}
    assert store.list(Path("/home/dev")) == []


def test_transcript(homes: Homes) -> None:
    t = homes.codex().transcript(ACP)
    assert [(m.role, m.text) for m in t.messages] == [
        ("user", "Say hello"),
        ("assistant", "Hello from the fake LLM."),
        ("user", "second turn"),
        ("assistant", "Hello from the fake LLM."),
    ]
    assert t.skipped_lines == 0


def test_codex_home_default_and_override(homes: Homes, tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere"
    (homes.home / ".codex").rename(moved)
    assert homes.codex().list(None) == []
    assert len(homes.codex(CODEX_HOME=str(moved)).list(None)) == 2
    store = type(homes.codex())("codex", {"HOME": str(homes.home)}, homes.avatar_home)
    assert store.list(None) == []  # default ~/.codex is empty now


def test_tool_calls_and_outputs(homes: Homes) -> None:
    write(
        homes,
        [
            meta(),
            line("turn_context", {"model": "gpt-x"}),
            msg("user", "<environment_context>\n<cwd>/x</cwd>\n</environment_context>"),
            msg("developer", "instructions"),
            msg("user", "list files"),
            line("response_item", {"type": "reasoning", "summary": []}),
            line(
                "response_item",
                {
                    "type": "function_call",
                    "name": "shell",
                    "arguments": json.dumps({"command": ["ls"]}),
                    "call_id": "call_1",
                },
            ),
            line(
                "response_item",
                {
                    "type": "function_call_output",
                    "call_id": "call_1",
                    "output": {"content": "a.txt", "success": False},
                },
            ),
            line(
                "response_item",
                {
                    "type": "custom_tool_call",
                    "name": "apply_patch",
                    "input": "*** Begin",
                    "call_id": "c2",
                },
            ),
            line(
                "response_item",
                {"type": "custom_tool_call_output", "call_id": "c2", "output": "done"},
            ),
            msg("assistant", "There is a.txt"),
            line("event_msg", {"type": "agent_message", "message": "There is a.txt"}),
        ],
    )
    store = homes.codex()
    info = store.find(NEW)[0]
    assert info.messages == 2 and info.model == "gpt-x" and info.title == "list files"
    msgs = store.transcript(NEW).messages
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert msgs[1].tool_calls[0].name == "shell"
    assert msgs[1].tool_calls[0].input == {"command": ["ls"]}
    assert msgs[2].is_error and msgs[2].text == "a.txt" and msgs[2].tool_call_id == "call_1"
    assert msgs[3].tool_calls[0].input == "*** Begin"
    assert msgs[4].text == "done"
    assert msgs[5].text == "There is a.txt"


def test_thread_names_from_the_session_index(homes: Homes) -> None:
    index = homes.home / ".codex" / "session_index.jsonl"
    index.write_text(
        json.dumps({"id": ACP, "thread_name": "old", "updated_at": "x"})
        + "\n{broken\n"
        + json.dumps({"id": ACP, "thread_name": "Renamed thread", "updated_at": "y"})
        + "\n"
    )
    sessions = {s.id: s for s in homes.codex().list(None)}
    assert sessions[ACP].title == "Renamed thread"
    assert sessions[EXEC].title == "hello"


def test_unused_and_metaless_rollouts(homes: Homes) -> None:
    write(homes, [meta(), msg("developer", "x")])  # opened, never prompted
    write(homes, [msg("user", "no meta")], sid="019a0000-0000-7000-8000-000000000002")
    store = homes.codex()
    assert {s.id for s in store.list(None)} == {EXEC, ACP}
    assert any("no session_meta" in w for w in store.warnings)


def test_subagent_threads_are_not_listed(homes: Homes) -> None:
    helper = meta()
    # As codex orders the fields: `source` comes before the long base instructions.
    payload = helper["payload"]
    helper["payload"] = {"source": {"subagent": "review"}, **payload}
    write(homes, [helper, msg("user", "review this")])
    assert {s.id for s in homes.codex().list(None)} == {EXEC, ACP}


def test_a_resumed_rollout_keeps_its_first_meta(homes: Homes) -> None:
    write(homes, [meta(), msg("user", "hi"), meta("019a0000-0000-7000-8000-00000000dead")])
    assert homes.codex().find(NEW)[0].messages == 1


def test_meta_with_spaces_and_no_instructions(homes: Homes) -> None:
    # Not how codex writes it, but a reader must not depend on compact JSON.
    entries = [meta(), msg("user", "spaced")]
    entries[0]["payload"].pop("base_instructions")
    path = homes.codex_day / f"rollout-x-{NEW}.jsonl"
    path.write_text("\n".join(json.dumps(e, indent=None, separators=(", ", ": ")) for e in entries))
    info = homes.codex().find(NEW)[0]
    assert info.cwd == "/home/dev/proj" and info.title == "spaced"


def _state(homes: Homes) -> tuple[Path, Path]:
    """codex 0.166's state and history databases (the tables that name a thread), holding
    rows of both fixture sessions."""
    home = homes.home / ".codex"
    state, history = home / "state_5.sqlite", home / "thread_history_1.sqlite"
    with contextlib.closing(sqlite3.connect(state)) as db, db:
        db.execute("CREATE TABLE threads (id TEXT PRIMARY KEY, rollout_path TEXT, name TEXT)")
        db.execute("CREATE TABLE thread_read_receipts (thread_id TEXT PRIMARY KEY)")
        db.execute("CREATE TABLE thread_spawn_edges (parent_thread_id TEXT, child_thread_id TEXT)")
        for sid in (ACP, EXEC):
            db.execute("INSERT INTO threads VALUES (?, ?, NULL)", (sid, "x"))
            db.execute("INSERT INTO thread_read_receipts VALUES (?)", (sid,))
    with contextlib.closing(sqlite3.connect(history)) as db, db:
        db.execute("CREATE TABLE thread_items (thread_id TEXT, item_json TEXT)")
        for sid in (ACP, EXEC, ACP):
            db.execute("INSERT INTO thread_items VALUES (?, ?)", (sid, "said"))
    return state, history


def _ids(db: Path, query: str) -> list[str]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return sorted(r[0] for r in conn.execute(query))


def test_delete_removes_the_rollout_and_what_codex_keeps_beside_it(homes: Homes) -> None:
    state, history = _state(homes)
    home = homes.home / ".codex"
    (home / "session_index.jsonl").write_text(
        json.dumps({"id": ACP, "thread_name": "doomed"})
        + "\n"
        + json.dumps({"id": EXEC, "thread_name": "kept"})
        + "\n"
    )
    (home / "shell_snapshots").mkdir()
    (home / "shell_snapshots" / f"{ACP}.1.sh").write_text("export SECRET=x\n")
    (home / "shell_snapshots" / f"{EXEC}.1.sh").write_text("export A=1\n")
    [rollout] = homes.codex_day.glob(f"*{ACP}.jsonl")
    archived = home / "archived_sessions" / rollout.name  # (an earlier archive's copy)
    archived.parent.mkdir()
    archived.write_bytes(rollout.read_bytes())

    store = homes.codex()
    store.delete(store.locate(ACP))

    assert not rollout.exists() and not archived.exists()
    assert [s.id for s in homes.codex().list(None)] == [EXEC]
    assert _ids(state, "SELECT id FROM threads") == [EXEC]
    assert _ids(state, "SELECT thread_id FROM thread_read_receipts") == [EXEC]
    assert _ids(history, "SELECT thread_id FROM thread_items") == [EXEC]
    assert ACP not in (home / "session_index.jsonl").read_text()
    assert [p.name for p in (home / "shell_snapshots").iterdir()] == [f"{EXEC}.1.sh"]
    with pytest.raises(SessionNotFoundError):
        homes.codex().locate(ACP)


def test_delete_of_an_archived_session(homes: Homes) -> None:
    [rollout] = homes.codex_day.glob(f"*{ACP}.jsonl")
    store = homes.codex()
    info = store.locate(ACP)
    archived = homes.home / ".codex" / "archived_sessions" / rollout.name
    archived.parent.mkdir()
    rollout.rename(archived)  # what codex-acp's session/delete does
    store.delete(info)
    assert not archived.exists()
    with pytest.raises(SessionNotFoundError):
        store.delete(info)


def _fork(homes: Homes, parent: Path, kept: int) -> Path:
    """A fork as codex 0.166 writes it: only its `session_meta`, naming the parent's rollout
    and the byte offset its history ends at (after the parent's first `kept` lines)."""
    end = sum(len(x) for x in parent.read_bytes().splitlines(keepends=True)[:kept])
    fork = meta(FORK)
    fork["payload"]["forked_from_id"] = NEW
    fork["payload"]["history_base"] = {"thread_id": NEW, "end_byte_offset": end}
    return write(homes, [fork], sid=FORK)


def test_a_fork_holds_its_parents_history_up_to_the_fork(homes: Homes) -> None:
    parent = write(homes, [meta(), msg("user", "the word is HERON"), msg("assistant", "ok")])
    fork = _fork(homes, parent, kept=3)
    with parent.open("a") as f:  # (the parent goes on after the fork)
        f.write(json.dumps(msg("user", "later, on the parent")) + "\n")
    store = homes.codex()
    listed = store.find(FORK)[0]
    assert listed.messages == 2 and listed.title == "the word is HERON"
    said = [(m.role, m.text) for m in store.transcript(FORK).messages]
    assert said == [("user", "the word is HERON"), ("assistant", "ok")]

    with pytest.raises(ProviderError, match=f"holds the history of its fork {FORK}"):
        store.delete(store.locate(NEW))
    assert parent.exists()
    store.delete(store.locate(FORK))
    store.delete(store.locate(NEW))
    assert not parent.exists() and not fork.exists()


def test_missing_and_invalid_ids(homes: Homes) -> None:
    store = homes.codex()
    with pytest.raises(SessionNotFoundError):
        store.transcript(NEW)
    with pytest.raises(UsageError):
        store.transcript("../sessions")
