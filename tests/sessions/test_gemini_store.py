"""GeminiStore against a real Gemini CLI recording (tests/fixtures) and crafted variants."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from avatar.core.errors import NotSupportedError, SessionNotFoundError
from tests.sessions.conftest import Homes

REAL = "60ec600d-7ed8-4588-9392-96e38d8cca4e"
NEW = "7f000000-1111-4222-8333-444455556666"
HEADER = {
    "sessionId": NEW,
    "projectHash": "abc",
    "startTime": "2026-11-21T10:00:00.000Z",
    "lastUpdated": "2026-11-21T10:00:00.000Z",
    "kind": "main",
}


def message(mid: str, kind: str, content: object, **extra: object) -> dict:
    return {
        "id": mid,
        "timestamp": "2026-11-21T10:00:01.000Z",
        "type": kind,
        "content": content,
        **extra,
    }


def write(
    chats: Path, records: list[dict | str], name: str = "session-2026-11-21T10-00-7f000000.jsonl"
) -> Path:
    chats.mkdir(parents=True, exist_ok=True)
    path = chats / name
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n")
    return path


def test_lists_the_fixture_session(homes: Homes) -> None:
    store = homes.gemini()
    [info] = store.list(None)
    assert info.id == REAL and info.provider == "gemini"
    assert info.title == "Say hello"  # not the <session_context> preamble
    assert info.messages == 2
    assert info.cwd == "/home/dev/proj"
    assert info.model == "gemini-3.8-flash"
    assert info.created == datetime(2026, 11, 21, 23, 16, 27, 837000, tzinfo=UTC)
    assert info.updated == datetime(2026, 11, 21, 23, 16, 27, 918000, tzinfo=UTC)
    assert store.warnings == []


def test_cwd_filter_uses_projects_json(homes: Homes) -> None:
    store = homes.gemini()
    assert [s.id for s in store.list(Path("/home/dev/proj"))] == [REAL]
    assert store.list(Path("/home/dev")) == []


def test_transcript(homes: Homes) -> None:
    t = homes.gemini().transcript(REAL)
    assert [(m.role, m.text) for m in t.messages] == [
        ("user", "Say hello"),
        ("assistant", "Hello from the fake LLM."),
    ]


def test_set_rewind_and_replaced_records(homes: Homes) -> None:
    write(
        homes.gemini_chats,
        [
            HEADER,
            {"$set": {"messages": [message("ctx", "user", [{"text": "<session_context>x"}])]}},
            message("u1", "user", [{"text": "first"}]),
            message("g1", "gemini", "draft", model="gemini-a"),
            message("g1", "gemini", "final answer", model="gemini-b"),  # same id: replaces
            message("u2", "user", [{"text": "dropped by rewind"}]),
            message("g2", "gemini", "dropped too"),
            {"$rewindTo": "u2"},
            message("i1", "info", "some notice"),
            message("u3", "user", "/help"),
            message("u4", "user", [{"text": "kept"}]),
            {"$set": {"lastUpdated": "2026-11-21T11:00:00.000Z", "summary": "Summarised"}},
        ],
    )
    store = homes.gemini()
    info = store.find(NEW)[0]
    assert info.messages == 3
    assert info.title == "Summarised"
    assert info.model == "gemini-b"
    assert info.updated == datetime(2026, 11, 21, 11, 0, tzinfo=UTC)
    texts = [(m.role, m.text) for m in store.transcript(NEW).messages]
    assert texts == [("user", "first"), ("assistant", "final answer"), ("user", "kept")]


def test_set_messages_replaces_everything(homes: Homes) -> None:
    write(
        homes.gemini_chats,
        [
            HEADER,
            message("u1", "user", "old"),
            {
                "$set": {
                    "messages": [message("u9", "user", "new"), message("g9", "gemini", "reply")]
                }
            },
            {"$rewindTo": "unknown-id"},  # unknown id: Gemini drops everything
            message("u10", "user", "after"),
        ],
    )
    store = homes.gemini()
    assert [m.text for m in store.transcript(NEW).messages] == ["after"]


def test_tool_calls_and_results(homes: Homes) -> None:
    calls = [
        {
            "id": "call-1",
            "name": "read_file",
            "args": {"path": "a.txt"},
            "status": "success",
            "result": [
                {
                    "functionResponse": {
                        "id": "call-1",
                        "name": "read_file",
                        "response": {"output": "hello"},
                    }
                }
            ],
        },
        {
            "id": "call-2",
            "name": "run_shell",
            "args": {"command": "x"},
            "status": "error",
            "result": "boom",
        },
    ]
    write(
        homes.gemini_chats,
        [
            HEADER,
            message("u1", "user", [{"text": "read it"}]),
            message("g1", "gemini", "", toolCalls=calls),
        ],
    )
    msgs = homes.gemini().transcript(NEW).messages
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "tool"]
    assert [c.name for c in msgs[1].tool_calls] == ["read_file", "run_shell"]
    assert msgs[2].text == "hello" and not msgs[2].is_error and msgs[2].tool_call_id == "call-1"
    assert msgs[3].text == "boom" and msgs[3].is_error


def test_empty_startup_sessions_are_hidden(homes: Homes) -> None:
    write(
        homes.gemini_chats,
        [HEADER, {"$set": {"messages": [message("c", "user", "<session_context>")]}}],
    )
    assert [s.id for s in homes.gemini().list(None)] == [REAL]


def test_legacy_json_document(homes: Homes) -> None:
    doc = {
        **HEADER,
        "messages": [message("u1", "user", "legacy"), message("g1", "gemini", "reply")],
    }
    (homes.gemini_chats / "session-2025-01-01T10-00-7f000000.json").write_text(
        json.dumps(doc, indent=2)
    )
    info = homes.gemini().find(NEW)[0]
    assert info.title == "legacy" and info.messages == 2


def test_project_root_marker_and_hash_dirs(homes: Homes, tmp_path: Path) -> None:
    other = homes.home / ".gemini" / "tmp" / "other"
    (other).mkdir()
    (other / ".project_root").write_text("/srv/other\n")
    write(other / "chats", [HEADER, message("u1", "user", "marker"), message("g", "gemini", "ok")])
    legacy_cwd = tmp_path / "old-project"
    legacy_cwd.mkdir()
    digest = hashlib.sha256(str(legacy_cwd).encode()).hexdigest()
    hdr = {**HEADER, "sessionId": "7f000000-1111-4222-8333-000000000000"}
    write(homes.home / ".gemini" / "tmp" / digest / "chats", [hdr, message("u", "user", "hashed")])
    store = homes.gemini()
    by_title = {s.title: s for s in store.list(None)}
    assert by_title["marker"].cwd == "/srv/other"
    assert [s.title for s in store.list(Path("/srv/other"))] == ["marker"]
    assert [s.title for s in homes.gemini().list(legacy_cwd)] == ["hashed"]


def test_gemini_cli_home(homes: Homes, tmp_path: Path) -> None:
    alt = tmp_path / "alt"
    alt.mkdir()
    (homes.home / ".gemini").rename(alt / ".gemini")
    assert homes.gemini().list(None) == []
    assert [s.id for s in homes.gemini(GEMINI_CLI_HOME=str(alt)).list(None)] == [REAL]


def test_broken_projects_json_still_lists(homes: Homes) -> None:
    (homes.home / ".gemini" / "projects.json").write_text("{nope")
    [info] = homes.gemini().list(None)
    assert info.id == REAL and info.cwd is None


def test_delete_is_not_supported_and_missing_ids(homes: Homes) -> None:
    store = homes.gemini()
    with pytest.raises(NotSupportedError):
        store.delete(store.locate(REAL))
    with pytest.raises(SessionNotFoundError):
        store.transcript(NEW)
