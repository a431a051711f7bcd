"""Every branch of the load → resume → new cascade (docs/design.md §2), against the fake agent.

A new session stands in only for a session the agent does not have (or cannot reopen at
all); any other failure of a reopen or a fork is an error, and nothing is opened."""

from __future__ import annotations

from pathlib import Path

import pytest

from avatar.bridges.base import OpenRequest
from avatar.core.errors import NotSupportedError, ProviderError
from avatar.sessions.types import SessionInfo
from tests.acp.conftest import Factory, text_of
from tests.support.acp_agent import seed_session


def seeded(tmp_path: Path, turns: int = 1) -> tuple[Path, str]:
    """An agent root holding one session with `turns` exchanges; (root, session id)."""
    root = tmp_path / "agent"
    (root / "work").mkdir(parents=True)
    return root, seed_session(root / "state", root / "work", turns)


# -- resume by id ----------------------------------------------------------------------------


async def test_load_reopens_with_replay_and_history(fake: Factory, tmp_path: Path) -> None:
    root, sid = seeded(tmp_path)
    h = await fake("load,resume", root=root)
    started = await h.bridge.open(OpenRequest("resume", sid))
    assert (started.session_id, started.how, started.provider) == (sid, "loaded", "fake")
    assert h.notices() == []
    turn = await h.turn("next")
    assert "history 2" in text_of(turn)
    replay = [e for e in h.emitted if e.replay]
    assert [e.type for e in replay] == ["user_message", "text"]
    assert not any(e.replay for e in turn)


async def test_reopen_uses_the_session_the_engine_resolved(fake: Factory, tmp_path: Path) -> None:
    root, sid = seeded(tmp_path)
    h = await fake("load,list,fork", root=root)
    info = SessionInfo(id=sid, provider="fake", cwd=str(root / "work"))
    started = await h.bridge.open(OpenRequest.of("resume", info))
    assert (started.session_id, started.how) == (sid, "loaded")
    forked = await h.bridge.open(OpenRequest.of("fork", info))
    assert forked.how == "forked" and forked.session_id != sid
    assert [r["session_id"] for r in h.requests("session/load")] == [sid]
    assert [r["session_id"] for r in h.requests("session/fork")] == [sid]
    assert h.requests("session/list") == []  # never looked up again
    assert h.notices() == []


async def test_failed_load_falls_back_to_resume(fake: Factory, tmp_path: Path) -> None:
    root, sid = seeded(tmp_path)
    h = await fake("load,resume", root=root, load_error=-32603)
    started = await h.bridge.open(OpenRequest("resume", sid))
    assert (started.session_id, started.how) == (sid, "resumed")
    (notice,) = h.notices()
    assert "session/load" in notice and "-32603" in notice and "session/resume instead" in notice
    assert "history 2" in text_of(await h.turn("next"))


async def test_a_session_the_agent_does_not_have_opens_new(fake: Factory, tmp_path: Path) -> None:
    root, sid = seeded(tmp_path)
    h = await fake("load,resume", root=root, load_error=-32002, resume_error=-32002)
    started = await h.bridge.open(OpenRequest("resume", sid))
    assert started.how == "new" and started.session_id != sid
    (notice,) = h.notices()
    assert "session/load" in notice and "session/resume" in notice
    assert f"opened a new session {started.session_id}" in notice
    assert "history 0" in text_of(await h.turn("next"))


# How the pinned agents say "no such session" in words, under -32603 "Internal error".
NOT_FOUND_IN_WORDS = [
    "no rollout found for thread id 0199aaaa-0000-7000-8000-000000000000",  # codex-acp
    'Invalid session identifier "0199aaaa".\n  Searched for sessions in /tmp/x/chats.',  # gemini
    "No previous sessions found for this project.",  # gemini, a project without sessions
    'Provided value "x" is not a UUID and does not match any session title.',  # claude-agent-acp
]


@pytest.mark.parametrize("details", NOT_FOUND_IN_WORDS)
async def test_not_found_in_words_opens_new(fake: Factory, tmp_path: Path, details: str) -> None:
    root, sid = seeded(tmp_path)
    h = await fake("load", root=root, load_error=-32603, error_details=details)
    started = await h.bridge.open(OpenRequest("resume", sid))
    assert started.how == "new" and started.session_id != sid
    (notice,) = h.notices()
    assert (
        details.split("\n")[0] in notice and f"opened a new session {started.session_id}" in notice
    )


@pytest.mark.parametrize(
    ("caps", "errors"),
    [
        ("load", {"load_error": -32603}),  # an internal error that names no missing session
        ("load", {"load_error": -32602}),
        ("resume", {"resume_error": -32603, "error_details": "database is locked"}),
        # One attempt says not found, the other fails otherwise: still an error.
        ("load,resume", {"load_error": -32603, "resume_error": -32002}),
    ],
)
async def test_other_reopen_errors_are_reported_and_open_nothing(
    fake: Factory, tmp_path: Path, caps: str, errors: dict[str, object]
) -> None:
    root, sid = seeded(tmp_path)
    h = await fake(caps, root=root, **errors)
    with pytest.raises(ProviderError) as raised:
        await h.bridge.open(OpenRequest("resume", sid))
    message = str(raised.value)
    assert message.startswith(f"fake could not reopen session {sid}: ")
    assert "refused by the fake agent" in message and "(-326" in message
    assert h.requests("session/new") == [] and h.bridge.session_id is None
    assert h.notices() == []
    # Nothing was lost: once the agent can load it again, the session reopens whole.
    await h.configure(load_error=None, resume_error=None, error_details=None)
    again = await h.bridge.open(OpenRequest("resume", sid))
    assert again.session_id == sid
    assert "history 2" in text_of(await h.turn("next"))


async def test_unknown_session_load_only(fake: Factory, tmp_path: Path) -> None:
    h = await fake("load")
    started = await h.bridge.open(OpenRequest("resume", "no-such-session"))
    assert started.how == "new"
    (notice,) = h.notices()
    assert "no-such-session" in notice and "-32002" in notice


async def test_resume_without_load(fake: Factory, tmp_path: Path) -> None:
    root, sid = seeded(tmp_path)
    h = await fake("resume", root=root)
    started = await h.bridge.open(OpenRequest("resume", sid))
    assert started.how == "resumed"
    assert h.emitted == []  # resume does not replay
    assert h.requests("session/load") == []


async def test_invalid_resume_answer_is_a_fallback(fake: Factory, tmp_path: Path) -> None:
    # An agent answering `null` trips pydantic on the client side: caught like a RequestError.
    root, sid = seeded(tmp_path)
    h = await fake("resume", root=root, resume_invalid=True)
    started = await h.bridge.open(OpenRequest("resume", sid))
    assert started.how == "new"
    assert "unexpected answer" in h.notices()[0]


async def test_agent_that_cannot_reopen(fake: Factory, tmp_path: Path) -> None:
    root, sid = seeded(tmp_path)
    h = await fake("", root=root)
    started = await h.bridge.open(OpenRequest("resume", sid))
    assert started.how == "new"
    assert "cannot reopen sessions" in h.notices()[0]
    assert h.requests("session/load") == h.requests("session/resume") == []


# -- continue-last ---------------------------------------------------------------------------


async def test_continue_follows_pages_and_picks_newest(fake: Factory, tmp_path: Path) -> None:
    root = tmp_path / "agent"
    work = root / "work"
    work.mkdir(parents=True)
    state = root / "state"
    stamps = ["2030-01-01T10:00:00+00:00", "2030-01-01T12:00:00+00:00", "2030-01-01T09:00:00+00:00"]
    ids = [seed_session(state, work, 1, updated_at=t) for t in stamps]
    ids += [seed_session(state, work, 1, updated_at=None) for _ in range(2)]
    # Newer, but elsewhere: the cwd filter must keep it out.
    seed_session(state, tmp_path / "elsewhere", 1, updated_at="2031-01-01T00:00:00+00:00")
    h = await fake("load,list", root=root, page_size=2)
    started = await h.bridge.open(OpenRequest("continue"))
    assert (started.session_id, started.how) == (ids[1], "continued")
    lists = h.requests("session/list")
    assert [r["cwd"] for r in lists] == [str(work.resolve())] * 3
    assert [r.get("cursor") for r in lists] == [None, "2", "4"]
    assert h.notices() == []


async def test_continue_reports_a_newest_session_that_fails_to_load(
    fake: Factory, tmp_path: Path
) -> None:
    root, sid = seeded(tmp_path)
    h = await fake("load,list", root=root, load_error=-32603)
    with pytest.raises(ProviderError, match=f"fake could not continue session {sid}: session/load"):
        await h.bridge.open(OpenRequest("continue"))
    assert h.requests("session/new") == []


async def test_continue_resumes_when_load_fails(fake: Factory, tmp_path: Path) -> None:
    root, sid = seeded(tmp_path)
    h = await fake("load,list,resume", root=root, load_error=-32603)
    started = await h.bridge.open(OpenRequest("continue"))
    assert (started.session_id, started.how) == (sid, "continued")
    assert "session/resume instead" in h.notices()[0]


async def test_continue_with_nothing_to_continue(fake: Factory) -> None:
    h = await fake("load,list")
    started = await h.bridge.open(OpenRequest("continue"))
    assert started.how == "new"
    (notice,) = h.notices()
    assert "no earlier fake session" in notice and started.session_id in notice


async def test_continue_lists_from_disk_without_session_list(fake: Factory, tmp_path: Path) -> None:
    root, sid = seeded(tmp_path)
    h = await fake("load", root=root, store=True, quirks=frozenset({"list_from_disk"}))
    assert not h.bridge.capabilities.can_list
    started = await h.bridge.open(OpenRequest("continue"))
    assert (started.session_id, started.how) == (sid, "continued")
    assert h.requests("session/list") == []
    assert h.notices() == []


async def test_list_from_disk_quirk_wins_over_session_list(fake: Factory, tmp_path: Path) -> None:
    root, sid = seeded(tmp_path)
    h = await fake("load,list", root=root, store=True, quirks=frozenset({"list_from_disk"}))
    started = await h.bridge.open(OpenRequest("continue"))
    assert (started.session_id, started.how) == (sid, "continued")
    assert h.requests("session/list") == []


async def test_continue_falls_back_to_disk_when_list_fails(fake: Factory, tmp_path: Path) -> None:
    root, sid = seeded(tmp_path)
    h = await fake("load,list", root=root, store=True, list_error=-32603)
    started = await h.bridge.open(OpenRequest("continue"))
    assert (started.session_id, started.how) == (sid, "continued")
    assert len(h.requests("session/list")) == 1


async def test_continue_without_any_listing(fake: Factory, tmp_path: Path) -> None:
    root, _ = seeded(tmp_path)
    h = await fake("load,list", root=root, list_error=-32601)
    started = await h.bridge.open(OpenRequest("continue"))
    assert started.how == "new"
    (notice,) = h.notices()
    assert "session/list failed" in notice and "-32601" in notice


async def test_continue_when_no_list_and_no_store(fake: Factory, tmp_path: Path) -> None:
    root, _ = seeded(tmp_path)
    h = await fake("load", root=root)
    started = await h.bridge.open(OpenRequest("continue"))
    assert started.how == "new"
    assert "cannot list its sessions" in h.notices()[0]


# -- fork and new ----------------------------------------------------------------------------


async def test_fork(fake: Factory, tmp_path: Path) -> None:
    root, sid = seeded(tmp_path)
    h = await fake("load,fork", root=root)
    assert h.bridge.capabilities.can_fork
    started = await h.bridge.open(OpenRequest("fork", sid))
    assert started.how == "forked" and started.session_id != sid
    assert "history 2" in text_of(await h.turn("branch"))


async def test_fork_of_a_session_the_agent_does_not_have_opens_nothing(
    fake: Factory, tmp_path: Path
) -> None:
    # A new empty session in place of a fork would lose the history it was to carry.
    root, sid = seeded(tmp_path)
    h = await fake("fork", root=root, fork_error=-32002)
    with pytest.raises(ProviderError, match=f"fake could not fork session {sid}: session/fork"):
        await h.bridge.open(OpenRequest("fork", sid))
    assert h.requests("session/new") == [] and h.notices() == []


async def test_a_failed_fork_is_reported_and_opens_nothing(fake: Factory, tmp_path: Path) -> None:
    root, sid = seeded(tmp_path)
    h = await fake("fork", root=root, fork_error=-32603)
    with pytest.raises(ProviderError, match=f"fake could not fork session {sid}: session/fork"):
        await h.bridge.open(OpenRequest("fork", sid))
    assert h.requests("session/new") == [] and h.notices() == []


async def test_fork_not_advertised(fake: Factory) -> None:
    h = await fake("load")
    with pytest.raises(NotSupportedError, match="forking a session is not supported by fake"):
        await h.bridge.open(OpenRequest("fork", "abc"))


async def test_new_session_ignores_a_requested_id(fake: Factory) -> None:
    h = await fake()
    started = await h.bridge.open(OpenRequest("new", "my-own-id"))
    assert started.how == "new" and started.session_id != "my-own-id"
    assert "chooses its own session ids" in h.notices()[0]
    assert started.cwd == str(h.cwd)


async def test_failing_session_new_is_a_provider_error(fake: Factory, tmp_path: Path) -> None:
    root, sid = seeded(tmp_path)
    h = await fake("load", root=root, new_error=-32603, load_error=-32002)
    with pytest.raises(ProviderError, match=r"session/new failed: new session refused.*-32603"):
        await h.bridge.open(OpenRequest("resume", sid))
