"""What a chat page shows above a live session's events: the session's conversation from
before it went live ("Earlier in this session"), whoever opened it (this page, another page,
a `chat --resume` or a REPL through the server).

The page's event stream replays every event of the live session from its start
(`LiveSession.subscribe(replay=True)`), its turns included; so the conversation read from the
session's store is cut where the live session's first turn on it begins, and no turn shows
twice. The turns are found by their prompts, from the end of the conversation back: a turn the
live session did not run there (a summary asked for by a switch) is passed over, and the
running turn counts only once the store has its prompt, as its last one.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from avatar.core.errors import AvatarError

if TYPE_CHECKING:
    from avatar.engine.engine import Engine
    from avatar.server.live import Event, LiveSession
    from avatar.sessions.types import Transcript, TranscriptMessage


def before_live(live: LiveSession) -> Transcript | None:
    """The conversation of the session `live` went live on, up to its first turn there; None
    when there was none (a new session) or it cannot be read."""
    began = next((e for e in live.history if e.get("type") == "session"), None)
    if began is None or began.get("how") == "new":
        return None
    provider, session_id = str(began["provider"]), str(began["session_id"])
    transcript = _transcript(live.engine, provider, session_id)
    if transcript is None or not transcript.messages:
        return None
    cut = _first_live_turn(transcript.messages, _turns_on(live.history, provider, session_id))
    return replace(transcript, messages=transcript.messages[:cut]) if cut else None


def _transcript(engine: Engine, provider: str, session_id: str) -> Transcript | None:
    """The session's conversation: the open one's as the engine reads it (its store, else
    what the agent replayed), another's (one left by a switch) from its store."""
    opened = engine.current
    try:
        if opened is not None and (opened.provider, opened.session_id) == (provider, session_id):
            return opened.history()
        return engine.library.transcript(engine.library.find(session_id, provider))
    except AvatarError:
        return None


def _turns_on(history: list[Event], provider: str, session_id: str) -> list[tuple[str, bool]]:
    """The prompts of the turns the live session ran on that session, in order, each with
    whether it ended."""
    turns: list[tuple[str, bool]] = []
    on = False
    for event in history:
        kind = event.get("type")
        if kind == "session":
            on = (event.get("provider"), event.get("session_id")) == (provider, session_id)
        elif kind == "turn_started" and on:
            turns.append((str(event.get("prompt") or ""), False))
        elif kind == "turn_ended" and on and turns:
            turns[-1] = (turns[-1][0], True)
    return turns


def _first_live_turn(messages: list[TranscriptMessage], turns: list[tuple[str, bool]]) -> int:
    """Where the first of `turns` begins in `messages` (their length when none is there)."""
    users = [i for i, m in enumerate(messages) if m.role == "user"]
    if not users:
        return len(messages)
    found = len(users)  # the earliest user message matched so far
    for prompt, ended in reversed(turns):
        # (a running turn's prompt is the last message once stored; elsewhere it may be an
        # earlier prompt said again)
        tried = range(found - 1, -1, -1) if ended else range(found - 1, len(users) - 2, -1)
        found = next((k for k in tried if prompt and prompt in messages[users[k]].text), found)
    return users[found] if found < len(users) else len(messages)
