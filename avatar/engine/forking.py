"""Fork at a message (`avatar session fork ID --at N`, REPL `/fork N`; DESIGN §3).

The fork is written to the provider's own store before any agent starts, holding messages
1..N as `session show` numbers them; the engine then opens it like any session:

- native: the native store's fork, cut after the last entry of message N (the new header
  carries `parent_id` and `branch_point`);
- Claude Code (and claude-acp, which reads the same files): a truncated copy of the
  transcript in the parent's project directory, which `claude --resume` accepts;
- any other provider: no agent offers a fork at a message (ACP's `session/fork` copies a
  whole session), so it is refused with one line (exit 1: a limit of the provider, not a
  mistake in the command).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.core.errors import ProviderError, SessionNotFoundError, UsageError

if TYPE_CHECKING:
    from avatar.core.events import SessionStarted
    from avatar.engine.engine import Engine
    from avatar.library.catalog import SessionLibrary
    from avatar.sessions.types import SessionInfo


async def fork_session(engine: Engine, ref: str | None, at: int | None) -> SessionStarted:
    """`engine.fork()`: fork session `ref` (default: the open one) on its own provider, whole
    (the provider's own fork) or cut after message `at` (written here, then opened)."""
    from avatar.bridges.base import OpenRequest

    if ref is not None:
        info = engine.find(ref)
    elif engine.session is None:
        raise UsageError("no session to fork")
    else:
        name, sid = engine.session.provider, engine.session.session_id
        try:
            info = engine.library.find(sid, name)
        except SessionNotFoundError:  # no store has it (yet): the agent knows it
            if at is not None:
                raise ProviderError(
                    f"cannot fork at a message on {name}: no transcript yet"
                ) from None
            return await engine.open_on(name, OpenRequest("fork", sid))
    if at is None:
        return await engine.open_on(info.provider, OpenRequest.of("fork", info))
    cut = fork_at(engine.library, info, at)
    return await engine.open_on(cut.provider, OpenRequest.of("resume", cut), how="forked")


def fork_at(library: SessionLibrary, info: SessionInfo, at: int) -> SessionInfo:
    """Write a new session holding messages 1..`at` of `info` and return it as listed; the
    parent's files are not touched."""
    from avatar.sessions.claude import ClaudeStore
    from avatar.sessions.native import NativeStore

    if at < 1:
        raise UsageError("--at counts messages from 1 (as `session show` numbers them)")
    store = library.store(info.provider)
    if isinstance(store, NativeStore):
        new_id = _native(store.avatar_home, info, at)
    elif isinstance(store, ClaudeStore) and info.path:
        from avatar.sessions.claude_fork import write_fork

        new_id = str(uuid.uuid4())
        source = Path(info.path)
        write_fork(source, source.with_name(f"{new_id}.jsonl"), new_id, at)
        library.link((info.provider, new_id), (info.provider, info.id), "fork")
    else:
        raise ProviderError(f"cannot fork at a message on {info.provider}")
    return library.find(new_id, info.provider)


def _native(avatar_home: Path, info: SessionInfo, at: int) -> str:
    """The native store's fork, cut after the last entry that leaves `at` messages."""
    from avatar.native.store.manager import SessionManager
    from avatar.sessions.native import transcript_steps

    cut: str | None = None
    count = 0
    for entry_id, messages in transcript_steps(Path(info.path or ""), []):
        if len(messages) > at:
            break
        cut, count = entry_id, len(messages)
    if count < at or cut is None:
        raise UsageError(f"session {info.id} has {count} messages; --at {at} is past them")
    return SessionManager(avatar_home).fork(info.id, at_entry=cut)
