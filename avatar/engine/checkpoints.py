"""`engine.checkpoints` (docs/design.md §12): the project's files recorded before and after every
turn, whatever the agent, and a session rewound to before a chosen turn — its files, its
conversation, or both.

Recording (`before_turn`, `after_turn`, called by the engine around each turn) is avatar's own
work, outside the walls, in a store agents cannot write (`avatar.library.checkpoints.store`):
a project whose store would lie where an agent writes is not recorded, and a notice says so
once. A failed record never stops a turn: the turn is numbered all the same, without files.

A rewind checks everything it needs first (the turn, its checkpoint, where the turn begins in
the conversation), then restores the files (`avatar.library.checkpoints.restore`), then opens
the conversation as it was before the turn: the agent's own fork at that message where its
store writes one (native, Claude Code), else a new session seeded with the turns before it
(imported into the agent's own store where it takes one, as codex's does; else handed to the
agent in a first turn, as for Gemini), said plainly in one notice. Before turn 1 nothing is
left of the conversation: a new session. The session a rewind opens keeps the turns it
inherited, so it can be rewound further back.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.core.diffs import FileChange
from avatar.core.errors import AvatarError, NotSupportedError, SessionNotFoundError, UsageError
from avatar.library.checkpoints.store import CheckpointError, FileStore
from avatar.library.checkpoints.turns import Turn, TurnLog, cut_before
from avatar.policy.readable import expand
from avatar.sessions.jsonl import title_from

if TYPE_CHECKING:
    from avatar.engine.host import EngineCore, Opener
    from avatar.engine.open_session import OpenSession
    from avatar.library.checkpoints.restore import Restored
    from avatar.sessions.types import SessionInfo, Transcript

Notify = Callable[[str, str], None]
#: How many characters of the user's words a turn keeps (masked), to show and to find it by.
PROMPT_CHARS = 200
_BINARY = "(binary file)"


@dataclass(frozen=True)
class Rewound:
    """What a rewind did: `files` restored (None: not asked), the `session` the conversation
    continues in (None: not asked), and `notice`, how the conversation was rewound (both
    were said as notices too)."""

    files: Restored | None
    session: OpenSession | None
    notice: str | None = None


class Checkpoints:
    """The engine's checkpoints; see the module docstring."""

    def __init__(self, host: EngineCore, agent: Callable[[], Opener], notify: Notify) -> None:
        self.host = host
        self.agent = agent  # (the engine's agent, built when first asked for)
        self.notify = notify
        self._told: set[str] = set()  # the notices said once
        self._running: tuple[TurnLog, int, FileStore | None, str | None] | None = None
        self._paused = False  # a rewind's own seeding turn is not a turn of the session
        self._recording: asyncio.Task[None] | None = None  # the files after the last turn

    # -- reading -----------------------------------------------------------------------------

    def turns(self, session: SessionInfo | str | None = None) -> list[Turn]:
        """The recorded turns of `session` (an id or prefix, a listed session; None: the open
        one), first to last."""
        provider, sid = self._which(session)
        log = TurnLog(self.host.home, provider, sid)
        turns = log.turns()
        for i, turn in enumerate(turns):
            if turn.after is None and turn.before is not None and turn.project:
                later = turns[i + 1] if i + 1 < len(turns) else None
                with contextlib.suppress(CheckpointError, OSError):
                    self._complete(log, turn, later)
        return turns

    def _complete(self, log: TurnLog, turn: Turn, later: Turn | None) -> None:
        """What `turn` changed, where nothing was recorded after it (a one-shot's turn): up
        to the turn after it, and for the last one up to now (what a rewind would undo)."""
        assert turn.before is not None and turn.project is not None
        store = FileStore(self.host.home, Path(turn.project))
        if later is not None:
            if later.before is None or later.project != turn.project:
                return
            turn.after, turn.files = later.before, store.changes(turn.before, later.before)
            log.end(turn.number, turn.after, turn.files)  # (kept: it will not change)
            return
        store.check_outside(self._writable(store.project))
        now = store.record(self.host.settings.scope.deny)
        turn.after, turn.files = now, store.changes(turn.before, now)  # (not kept: it may change)

    def undone(self, turn: int, session: SessionInfo | str | None = None) -> list[FileChange]:
        """What rewinding the files to before `turn` would undo: every file changed since,
        from its text then (`old`) to its text now (`new`)."""
        chosen = self._turn(turn, *self._which(session))
        store = self._files_of(chosen)
        assert chosen.before is not None
        now = store.record(self.host.settings.scope.deny)
        then_tree, now_tree = store.tree(chosen.before), store.tree(now)
        paths = sorted(p for p in {*then_tree, *now_tree} if then_tree.get(p) != now_tree.get(p))
        blobs = store.blobs(
            e.blob for p in paths for e in (then_tree.get(p), now_tree.get(p)) if e is not None
        )

        def text(entry: object) -> str:
            blob = getattr(entry, "blob", None)
            data = blobs.get(blob, b"") if isinstance(blob, str) else b""
            if b"\0" in data:
                return _BINARY
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError:
                return _BINARY

        return [FileChange(p, text(then_tree.get(p)), text(now_tree.get(p)), line=1) for p in paths]

    def _which(self, session: SessionInfo | str | None) -> tuple[str, str]:
        if session is None:
            current = self.agent().current
            if current is None:
                raise UsageError("no session is open: nothing to rewind")
            return current.provider, current.session_id
        info = self.host.catalog.find(session) if isinstance(session, str) else session
        return info.provider, info.id

    def _turn(self, number: int, provider: str, sid: str) -> Turn:
        turns = TurnLog(self.host.home, provider, sid).turns()
        if not turns:
            raise UsageError(f"{provider} session {sid} has no turn avatar recorded to rewind")
        chosen = next((t for t in turns if t.number == number), None)
        if chosen is None:
            raise UsageError(
                f"no turn {number}: {provider} session {sid} has turns "
                f"{turns[0].number}-{turns[-1].number}"
            )
        return chosen

    def _files_of(self, turn: Turn) -> FileStore:
        if turn.before is None or not turn.project:
            raise AvatarError(
                f"the files before turn {turn.number} were not recorded "
                "(--conversation rewinds the conversation alone)"
            )
        store = FileStore(self.host.home, Path(turn.project))
        store.check_outside(self._writable(store.project))
        return store

    # -- recording ---------------------------------------------------------------------------

    def _writable(self, project: Path) -> list[Path]:
        """Every place an agent on this project may write: the project, the added
        directories, and every provider's state directories."""
        host = self.host
        places = [project, *host.add_dirs]
        for spec in host.registry.specs():
            env = host.env
            places += [p for p in (expand(e, env) for e in spec.state_dirs) if p is not None]
        return places

    def _store(self) -> FileStore | None:
        store = FileStore(self.host.home, self.host.cwd)
        try:
            store.check_outside(self._writable(store.project))
        except CheckpointError as e:
            self._tell(str(e))
            return None
        return store

    def _record(self, store: FileStore | None) -> str | None:
        if store is None:
            return None
        try:
            return store.record(self.host.settings.scope.deny)
        except (CheckpointError, OSError) as e:
            self._tell(f"rewind: the files are not recorded: {_why(e)}")
            return None

    def _tell(self, message: str) -> None:
        if message not in self._told:
            self._told.add(message)
            self.notify(message, "warning")

    async def before_turn(self, session: OpenSession, prompt: str) -> None:
        """Record the project's files before a turn of `session` starts (`prompt`: what the
        user sent, of which the first words are kept, masked)."""
        await self.settled()
        self._running = None
        if self._paused:
            return
        store = self._store()
        before = await asyncio.to_thread(self._record, store)
        words = title_from(prompt, PROMPT_CHARS) or ""
        try:
            log = TurnLog(self.host.home, session.provider, session.session_id)
            self._running = (log, log.begin(before, self.host.cwd, words), store, before)
        except (OSError, AvatarError) as e:  # (the turn runs all the same, unnumbered)
            self._tell(f"rewind: this turn is not recorded: {_why(e)}")

    async def after_turn(self) -> None:
        """Start recording the files the turn left, and what it changed. It runs on after
        this returns: the turn is over for the user when the agent says so, and a key
        pressed then is not taken by the turn (`settled` waits for the record)."""
        running, self._running = self._running, None
        if running is None or self.host.one_shot:  # (`chat` exits sooner: the next turn,
            return  # or a listing, knows what the turn changed)
        self._recording = asyncio.create_task(self._record_after(*running))

    async def settled(self) -> None:
        """Wait for the files after the last turn to be recorded (before the next turn, a
        rewind, or closing)."""
        recording = self._recording
        if recording is None:
            return
        try:
            await asyncio.shield(recording)
        finally:
            if recording.done() and self._recording is recording:
                self._recording = None

    async def _record_after(
        self, log: TurnLog, number: int, store: FileStore | None, before: str | None
    ) -> None:
        after = await asyncio.to_thread(self._record, store)
        files = []
        if store is not None and before is not None and after is not None:
            with contextlib.suppress(CheckpointError):
                files = await asyncio.to_thread(store.changes, before, after)
        try:
            log.end(number, after, files)
        except OSError as e:
            self._tell(f"rewind: this turn is not recorded: {_why(e)}")

    def abandon(self) -> None:
        """The turn was stopped from outside (its task cancelled, avatar leaving): the files
        after it are not recorded, so nothing holds avatar up as it goes."""
        self._running = None

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Turns run meanwhile are not the user's (a seeded session's first turn)."""
        self._paused = True
        try:
            yield
        finally:
            self._paused = False

    # -- rewinding ---------------------------------------------------------------------------

    async def rewind(
        self,
        turn: int,
        *,
        files: bool = True,
        conversation: bool = True,
        session: SessionInfo | str | None = None,
    ) -> Rewound:
        """Rewind `session` (None: the open one) to before `turn`: its files, its
        conversation, or both (see the module docstring). The conversation continues in a
        new session, which becomes the open one."""
        if not files and not conversation:
            raise UsageError("rewind the files, the conversation, or both")
        await self.settled()  # (the files after the last turn are its, not the rewind's)
        provider, sid = self._which(session)
        turns = TurnLog(self.host.home, provider, sid).turns()
        chosen = self._turn(turn, provider, sid)
        store = self._files_of(chosen) if files else None
        cut: tuple[SessionInfo, Transcript, int] | None = None
        if conversation:
            cut = self._cut(provider, sid, turns, chosen)
        restored = None
        if store is not None:
            from avatar.library.checkpoints.restore import restore

            assert chosen.before is not None
            deny = list(self.host.settings.scope.deny)
            restored = await asyncio.to_thread(restore, store, chosen.before, deny)
            self.notify(restored.line(), "info")
        if cut is None:
            return Rewound(restored, None)
        try:
            opened, notice = await self._reopen(*cut, turn)
        except AvatarError as e:
            if restored is None:
                raise
            raise AvatarError(f"the files were restored, the conversation not: {e}") from None
        kept = [t for t in turns if t.number < turn]
        TurnLog(self.host.home, opened.provider, opened.session_id).inherit(kept)
        self.notify(notice, "info")
        return Rewound(restored, opened, notice)

    def _cut(
        self, provider: str, sid: str, turns: list[Turn], chosen: Turn
    ) -> tuple[SessionInfo, Transcript, int]:
        """The session, its conversation and how many of its messages come before `chosen`."""
        catalog = self.host.catalog
        try:
            info = catalog.find(sid, provider)
            transcript = catalog.transcript(info)
        except SessionNotFoundError:
            raise AvatarError(
                f"{provider} session {sid} has no conversation avatar can read to rewind"
            ) from None
        at = cut_before(transcript.messages, turns, chosen.number)
        if at is None:
            raise AvatarError(
                f"turn {chosen.number} is not in the conversation of {provider} session {sid} "
                "(--files rewinds the files alone)"
            )
        return info, transcript, at

    async def _reopen(
        self, info: SessionInfo, transcript: Transcript, at: int, turn: int
    ) -> tuple[OpenSession, str]:
        """The conversation before turn `turn` (its first `at` messages), opened."""
        from avatar.bridges.base import OpenRequest
        from avatar.engine.forking import seeded_copy

        host, agent, provider = self.host, self.agent(), info.provider
        kept = f"turns 1-{turn - 1}" if turn > 2 else "turn 1"
        if at == 0:
            opened = await agent.open_on(provider, OpenRequest("new"))
            host.catalog.link((provider, opened.session_id), (provider, info.id), "fork")
            return opened, f"rewind: nothing came before turn 1: a new {provider} session"
        store = host.catalog.store(provider)
        try:
            if store is None:
                raise NotSupportedError(provider, "forking at a message")
            forked = store.fork_at(info, at)
        except NotSupportedError:
            history = replace(transcript, messages=transcript.messages[:at])
            with self.paused():
                opened, how = await seeded_copy(host, agent, provider, info.id, history)
            said = "written into its own store" if how == "imported" else "handed to it"
            return opened, (
                f"rewind: {provider} cannot fork at a turn, so a new session holds {kept} of "
                f"session {info.id} ({said})"
            )
        host.catalog.link((provider, forked.id), (provider, info.id), "fork")
        opened = await agent.open_on(provider, OpenRequest.of("resume", forked), how="forked")
        return opened, f"rewind: {provider}'s own fork of session {info.id}, {kept} kept"


def _why(e: BaseException) -> str:
    return e.strerror or str(e) if isinstance(e, OSError) else str(e)
