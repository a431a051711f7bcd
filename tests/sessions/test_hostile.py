"""Truncated, binary and hostile files in any store: skipped with a warning, never fatal."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from avatar.core.errors import UsageError
from avatar.sessions.filestore import JsonlSessionStore
from tests.sessions.conftest import Homes

FIXTURE_IDS = {
    "claude": {"1ad42afd-8f8d-4c2c-80a1-db283182c3cf", "981aee11-c201-405c-9e0f-b75b96a633f2"},
    "codex": {"01a20060-c343-7803-adb4-a803ecb21b39", "01a20060-f62a-7491-8259-1819edd4db09"},
    "gemini": {"60ec600d-7ed8-4588-9392-96e38d8cca4e"},
}


def session_path(homes: Homes, provider: str, sid: str) -> Path:
    """Where a session file with this id would live in each store."""
    if provider == "claude":
        return homes.claude_project / f"{sid}.jsonl"
    if provider == "codex":
        return homes.codex_day / f"rollout-2026-11-21T10-00-00-{sid}.jsonl"
    return homes.gemini_chats / f"session-2026-11-21T10-00-{sid[:8]}.jsonl"


def template(homes: Homes, provider: str) -> bytes:
    """A real session file of the provider (from the fixtures)."""
    sid = sorted(FIXTURE_IDS[provider])[0]
    if provider == "gemini":
        return next(homes.gemini_chats.iterdir()).read_bytes()
    if provider == "codex":
        return next(homes.codex_day.glob(f"*{sid}.jsonl")).read_bytes()
    return (homes.claude_project / f"{sid}.jsonl").read_bytes()


def store(homes: Homes, provider: str) -> JsonlSessionStore:
    make: Callable[[], JsonlSessionStore] = getattr(homes, provider)
    return make()


PROVIDERS = ["claude", "codex", "gemini"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_binary_file_is_skipped_with_a_warning(homes: Homes, provider: str) -> None:
    bad = session_path(homes, provider, str(uuid.uuid4()))
    bad.write_bytes(os.urandom(200_000).replace(b"\n", b"\x00") + b"\n" + os.urandom(5000))
    s = store(homes, provider)
    assert {i.id for i in s.list(None)} == FIXTURE_IDS[provider]
    assert any(str(bad) in w for w in s.warnings)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_truncated_file(homes: Homes, provider: str) -> None:
    sid = str(uuid.uuid4())
    data = template(homes, provider)
    path = session_path(homes, provider, sid)
    path.write_bytes(data[: len(data.splitlines()[0]) // 2])  # cut inside the first line
    s = store(homes, provider)
    assert {i.id for i in s.list(None)} == FIXTURE_IDS[provider]
    assert any(str(path) in w for w in s.warnings)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_session_with_a_torn_tail_still_lists(homes: Homes, provider: str) -> None:
    [sid] = sorted(FIXTURE_IDS[provider])[:1]
    path = next(p for p in session_path(homes, provider, sid).parent.iterdir() if p.is_file())
    with path.open("ab") as f:
        f.write(b'{"type":"user","message":{"role":"user","content":"half')
    s = store(homes, provider)
    assert len(s.list(None)) == len(FIXTURE_IDS[provider])
    assert any(str(path) in w and "unreadable" in w for w in s.warnings)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_50mb_line_is_skipped(homes: Homes, provider: str) -> None:
    sid = sorted(FIXTURE_IDS[provider])[0]
    path = next(p for p in session_path(homes, provider, sid).parent.iterdir() if sid[:8] in p.name)
    with path.open("ab") as f:
        f.write(b'{"type":"user","message":{"role":"user","content":"')
        chunk = b"A" * (1 << 20)
        for _ in range(50):
            f.write(chunk)
        f.write(b'"}}\n')
    s = store(homes, provider)
    assert {i.id for i in s.list(None)} == FIXTURE_IDS[provider]
    assert any(str(path) in w and "oversized" in w for w in s.warnings)


def test_ids_with_dot_dot_are_skipped(homes: Homes) -> None:
    codex_meta = {
        "timestamp": "2026-11-21T10:00:00Z",
        "type": "session_meta",
        "payload": {"id": "../../../etc/passwd", "cwd": "/home/dev/proj"},
    }
    user = {
        "timestamp": "2026-11-21T10:00:01Z",
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "x"}],
        },
    }
    codex_file = homes.codex_day / "rollout-2026-11-21T10-00-00-evil.jsonl"
    codex_file.write_text(json.dumps(codex_meta) + "\n" + json.dumps(user) + "\n")
    gemini_file = homes.gemini_chats / "session-2026-11-21T10-00-evil.jsonl"
    header = {"sessionId": "../../x", "projectHash": "h", "startTime": "2026-11-21T10:00:00Z"}
    msg = {"id": "m1", "type": "user", "content": "hi"}
    gemini_file.write_text(json.dumps(header) + "\n" + json.dumps(msg) + "\n")
    for name in ("..jsonl", "...jsonl", "a/../b.jsonl".replace("/", "_")):
        (homes.claude_project / name).write_text(template(homes, "claude").decode())

    for provider in PROVIDERS:
        s = store(homes, provider)
        assert {i.id for i in s.list(None)} == FIXTURE_IDS[provider]
    codex_warnings = _warnings(homes.codex())
    assert any("invalid session id" in w and str(codex_file) in w for w in codex_warnings)
    gemini_warnings = _warnings(homes.gemini())
    assert any("invalid session id" in w and str(gemini_file) in w for w in gemini_warnings)


def _warnings(s: JsonlSessionStore) -> list[str]:
    s.list(None)
    return s.warnings


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("bad", ["../../etc/passwd", "..", "a/b", "/etc/passwd", "", "x" * 500])
def test_stores_refuse_unsafe_ids(homes: Homes, provider: str, bad: str) -> None:
    with pytest.raises(UsageError):
        store(homes, provider).transcript(bad)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_fifo_named_like_a_session_is_not_opened(homes: Homes, provider: str) -> None:
    os.mkfifo(session_path(homes, provider, str(uuid.uuid4())))
    assert {i.id for i in store(homes, provider).list(None)} == FIXTURE_IDS[provider]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_warnings_come_back_from_the_cache(homes: Homes, provider: str) -> None:
    bad = session_path(homes, provider, str(uuid.uuid4()))
    bad.write_bytes(b"\x00\x01\x02 not json\n")
    first = _warnings(store(homes, provider))
    again = store(homes, provider)
    second = _warnings(again)  # answered from $AVATAR_HOME/cache
    assert first == second and any(str(bad) in w for w in second)
    assert _warnings(again) == second  # listing twice does not repeat them
