"""ClaudeStore against real Claude Code transcripts (tests/fixtures) and crafted variants."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from avatar.core.errors import SessionNotFoundError, UsageError
from avatar.sessions.claude import ClaudeStore, project_slug
from avatar.sessions.types import SessionInfo
from tests.sessions.conftest import Homes

ONE = "1ad42afd-8f8d-4c2c-80a1-db283182c3cf"  # turn one, turn two
THREE = "981aee11-c201-405c-9e0f-b75b96a633f2"  # new, --resume, --continue
NEW = "0b7d6a52-2f7e-4c61-9f0e-3c1a4a0e9b11"


def entry(kind: str, content: object, **extra: object) -> dict:
    base = {
        "type": kind,
        "sessionId": NEW,
        "cwd": "/home/dev/proj",
        "timestamp": "2026-11-21T10:00:00.000Z",
        "isSidechain": False,
        "uuid": "u",
    }
    role = "user" if kind == "user" else "assistant"
    message: dict = {"role": role, "content": content}
    if kind == "assistant":
        message = {"id": extra.pop("mid", "msg_1"), "model": "claude-x", **message}
    return {**base, "message": message, **extra}


def write(homes: Homes, sid: str, entries: list[dict | str]) -> Path:
    path = homes.claude_project / f"{sid}.jsonl"
    lines = [e if isinstance(e, str) else json.dumps(e) for e in entries]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_lists_fixture_sessions(homes: Homes) -> None:
    store = homes.claude()
    sessions = {s.id: s for s in store.list(None)}
    assert set(sessions) == {ONE, THREE}
    three = sessions[THREE]
    assert three.provider == "claude"
    assert three.title == "first message: remember 42"
    assert three.messages == 6
    assert three.cwd == "/home/dev/proj"
    assert three.model == "claude-opus-4-8"
    assert three.created == datetime(2026, 11, 21, 23, 9, 33, 73000, tzinfo=UTC)
    assert three.updated == datetime(2026, 11, 21, 23, 9, 34, 419000, tzinfo=UTC)
    assert three.path and three.path.endswith(f"{THREE}.jsonl")
    assert sessions[ONE].title == "turn one" and sessions[ONE].messages == 4
    assert store.warnings == []


def test_cwd_filter(homes: Homes) -> None:
    store = homes.claude()
    assert {s.id for s in store.list(Path("/home/dev/proj"))} == {ONE, THREE}
    assert {s.id for s in store.list(Path("/home/dev/proj/"))} == {ONE, THREE}
    assert store.list(Path("/home/dev")) == []
    assert store.list(Path("/elsewhere")) == []


def test_transcript(homes: Homes) -> None:
    t = homes.claude().transcript(THREE)
    assert [(m.role, m.text) for m in t.messages] == [
        ("user", "first message: remember 42"),
        ("assistant", "Hello from the fake LLM."),
        ("user", "second (resume)"),
        ("assistant", "Hello from the fake LLM."),
        ("user", "third (continue)"),
        ("assistant", "Hello from the fake LLM."),
    ]
    assert t.info.id == THREE and t.skipped_lines == 0
    assert t.messages[0].timestamp is not None


def test_find_prefix_and_missing(homes: Homes) -> None:
    store = homes.claude()
    assert [s.id for s in store.find("981a")] == [THREE]
    with pytest.raises(SessionNotFoundError):
        store.transcript(NEW)
    with pytest.raises(UsageError):
        store.transcript("../../etc/passwd")


def test_claude_config_dir(homes: Homes, tmp_path: Path) -> None:
    other = tmp_path / "cfg"
    (homes.home / ".claude").rename(other)
    assert homes.claude().list(None) == []
    store = homes.claude(CLAUDE_CONFIG_DIR=str(other))
    assert {s.id for s in store.list(None)} == {ONE, THREE}


def test_titles_prefer_custom_then_ai_then_summary(homes: Homes) -> None:
    base = [entry("user", "the prompt"), entry("assistant", [{"type": "text", "text": "ok"}])]
    write(homes, NEW, [*base, {"type": "summary", "summary": "A summary", "leafUuid": "x"}])
    assert homes.claude().find(NEW)[0].title == "A summary"
    write(homes, NEW, [*base, {"type": "ai-title", "aiTitle": "AI title", "sessionId": NEW}])
    assert homes.claude().find(NEW)[0].title == "AI title"
    custom = {"type": "custom-title", "customTitle": "Mine", "sessionId": NEW}
    write(homes, NEW, [*base, custom, {"type": "ai-title", "aiTitle": "AI", "sessionId": NEW}])
    assert homes.claude().find(NEW)[0].title == "Mine"


def test_injected_user_text_is_not_a_title_nor_a_message(homes: Homes) -> None:
    write(
        homes,
        NEW,
        [
            entry("user", "<local-command-caveat>Caveat: generated locally</local-command-caveat>"),
            entry("user", "<command-name>/model</command-name>\n<command-args></command-args>"),
            entry("user", "<local-command-stdout>Set model</local-command-stdout>"),
            entry("user", "context", isMeta=True),
            entry(
                "user",
                [
                    {"type": "text", "text": "<system-reminder>be nice</system-reminder>"},
                    {"type": "text", "text": "real question"},
                ],
            ),
            entry("assistant", [{"type": "text", "text": "answer"}]),
            entry("user", [{"type": "text", "text": "[Request interrupted by user]"}]),
        ],
    )
    store = homes.claude()
    info = store.find(NEW)[0]
    assert info.title == "real question"
    assert info.messages == 2
    texts = [(m.role, m.text) for m in store.transcript(NEW).messages]
    assert texts == [("user", "real question"), ("assistant", "answer")]


def test_tool_calls_split_assistant_lines_sidechains_and_synthetic(homes: Homes) -> None:
    write(
        homes,
        NEW,
        [
            entry("user", "run it"),
            entry("assistant", [{"type": "thinking", "thinking": "hmm"}], mid="msg_a"),
            entry("assistant", [{"type": "text", "text": "Running."}], mid="msg_a"),
            entry(
                "assistant",
                [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}],
                mid="msg_a",
            ),
            entry(
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [{"type": "text", "text": "a.txt"}],
                        "is_error": False,
                    }
                ],
            ),
            entry("user", "sub-agent prompt", isSidechain=True),
            entry("assistant", [{"type": "text", "text": "sub"}], mid="msg_s", isSidechain=True),
            entry("assistant", [{"type": "text", "text": "Done."}], mid="msg_b"),
            {
                **entry("assistant", [{"type": "text", "text": "API Error: 500"}], mid="e"),
                "message": {"id": "e", "model": "<synthetic>", "role": "assistant", "content": []},
            },
        ],
    )
    store = homes.claude()
    info = store.find(NEW)[0]
    assert info.messages == 3  # user + two model messages (msg_a spans three lines)
    assert info.model == "claude-x"
    msgs = store.transcript(NEW).messages
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]
    assert msgs[1].text == "Running."
    assert msgs[1].tool_calls[0].name == "Bash"
    assert msgs[1].tool_calls[0].input == {"command": "ls"}
    assert msgs[2].tool_call_id == "toolu_1" and msgs[2].text == "a.txt"
    assert msgs[3].text == "Done."


def test_compact_summary_is_a_system_message(homes: Homes) -> None:
    write(
        homes,
        NEW,
        [
            entry("user", "This session is being continued…", isCompactSummary=True),
            entry("user", "go on"),
            entry("assistant", [{"type": "text", "text": "ok"}]),
        ],
    )
    store = homes.claude()
    assert store.find(NEW)[0].title == "go on"
    assert [m.role for m in store.transcript(NEW).messages] == ["system", "user", "assistant"]


def test_non_session_files_are_ignored(homes: Homes) -> None:
    proj = homes.claude_project
    (proj / "agent-1234.jsonl").write_text((proj / f"{ONE}.jsonl").read_text())
    (proj / "notes.txt").write_text("x")
    (proj / f"{NEW}.jsonl").mkdir()  # a directory named like a session
    (proj / "memory").mkdir()
    store = homes.claude()
    assert {s.id for s in store.list(None)} == {ONE, THREE}
    assert store.warnings == []


def test_broken_lines_are_counted_with_a_warning(homes: Homes) -> None:
    path = homes.claude_project / f"{THREE}.jsonl"
    lines = path.read_text().splitlines()
    lines.insert(3, "\x00\x01 garbage")
    lines.append('{"type":"user","message":{"role":"user","content":"tor')  # torn
    path.write_text("\n".join(lines))
    store = homes.claude()
    info = store.find(THREE)[0]
    assert info.messages == 6
    assert any(THREE in w and "2 unreadable" in w for w in store.warnings)
    assert store.transcript(THREE).skipped_lines == 2


def test_delete_removes_the_transcript(homes: Homes) -> None:
    store = homes.claude()
    side = homes.claude_project / THREE / "subagents"
    side.mkdir(parents=True)
    three, one = store.locate(THREE), store.locate(ONE)
    store.delete(three)
    assert not (homes.claude_project / f"{THREE}.jsonl").exists()
    assert not (homes.claude_project / THREE).exists()
    assert {s.id for s in store.list(None)} == {ONE}
    assert {s.id for s in homes.claude().list(None)} == {ONE}  # the cache forgot it too
    with pytest.raises(SessionNotFoundError):
        store.delete(three)
    # Only ever the file of a session the store listed, named by its UUID.
    with pytest.raises(UsageError):
        store.delete(replace(one, id="../" + ONE))
    with pytest.raises(UsageError):
        store.delete(replace(one, id="not-a-uuid"))
    with pytest.raises(UsageError):
        store.delete(replace(three, path=one.path))
    outside = homes.home / f"{ONE}.jsonl"
    outside.write_text("{}\n")
    with pytest.raises(UsageError):
        store.delete(replace(one, path=str(outside)))
    assert outside.exists() and (homes.claude_project / f"{ONE}.jsonl").exists()


def _listed(store: ClaudeStore, sid: str) -> SessionInfo:
    """Session `sid` as a listing shows it (a whole id's `find` reads its file, no cache)."""
    return next(s for s in store.list(None) if s.id == sid)


def test_listing_uses_the_cache_until_a_file_changes(homes: Homes) -> None:
    homes.claude().list(None)
    cache = homes.avatar_home / "cache" / "sessions-claude.json"
    assert cache.is_file()
    # Poison the file content without changing size/mtime expectations: the cache answers.
    path = homes.claude_project / f"{ONE}.jsonl"
    data = json.loads(cache.read_text())
    data["entries"][str(path)]["summary"]["info"]["title"] = "from cache"
    cache.write_text(json.dumps(data))
    assert _listed(homes.claude(), ONE).title == "from cache"
    with path.open("a") as f:  # the session grows: re-read
        f.write(json.dumps(entry("user", "more")) + "\n")
    again = _listed(homes.claude(), ONE)
    assert again.title == "turn one" and again.messages == 5


@pytest.mark.parametrize(
    ("cwd", "slug"),
    [
        ("/home/dev/proj", "-home-dev-proj"),
        ("/tmp/a.b_c d/é", "-tmp-a-b-c-d--"),
        ("/x/🙂", "-x---"),  # outside the BMP: two UTF-16 units, two dashes
    ],
)
def test_project_slug(cwd: str, slug: str) -> None:
    assert project_slug(cwd) == slug


def test_project_slug_of_long_paths_is_cut_and_hashed() -> None:
    long = "/" + "a" * 250
    slug = project_slug(long)
    assert slug.startswith("-" + "a" * 199 + "-")
    assert len(slug) > 201
    assert project_slug(long) == slug and project_slug(long + "b") != slug


def test_missing_store_is_empty(tmp_path: Path) -> None:
    store = ClaudeStore("claude", {"HOME": str(tmp_path)}, tmp_path / "ah")
    assert store.list(None) == [] and store.list(tmp_path) == []


@pytest.mark.parametrize(
    ("field", "bad"),
    [("title", 7), ("messages", "5"), ("updated", "not a time"), ("id", None), ("cwd", ["x"])],
)
def test_a_tampered_cache_entry_is_read_again_from_the_file(
    homes: Homes, field: str, bad: object
) -> None:
    """The cache is rebuilt without a validator, so each field is type-checked by hand: an
    entry of the wrong shape costs a re-read of its file, never a crash or a wrong listing."""
    homes.claude().list(None)
    cache = homes.avatar_home / "cache" / "sessions-claude.json"
    path = homes.claude_project / f"{ONE}.jsonl"
    data = json.loads(cache.read_text())
    data["entries"][str(path)]["summary"]["info"][field] = bad
    cache.write_text(json.dumps(data))
    [info] = homes.claude().find(ONE)
    assert (info.title, info.messages, info.id) == ("turn one", 4, ONE)
    assert info.updated is not None and info.cwd == "/home/dev/proj"


def test_an_image_the_user_sent_is_named_not_copied(homes: Homes) -> None:
    data = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    write(
        homes,
        NEW,
        [
            entry("user", [{"type": "text", "text": "what is this"}, image]),
            entry("assistant", [{"type": "text", "text": "A pixel."}]),
        ],
    )
    t = homes.claude().transcript(NEW)
    assert [(m.role, m.text) for m in t.messages] == [
        ("user", "what is this\n[image]"),
        ("assistant", "A pixel."),
    ]
    assert data not in repr(t)
