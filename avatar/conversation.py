"""The open session's thread as the engine carries it: what this run saw of it, the context
handed over from another session that opens the next prompt, and avatar's records of turns."""

from __future__ import annotations

from typing import TYPE_CHECKING

from avatar.errors import AvatarError
from avatar.handoff import build_handoff, seed_prompt
from avatar.sessions.types import SessionInfo, Transcript, TranscriptMessage

if TYPE_CHECKING:
    from avatar.events import BaseEvent
    from avatar.library import SessionLibrary


class LiveTranscript:
    """What this run saw of the open session: the handoff's source when no store has it."""

    def __init__(self, info: SessionInfo) -> None:
        self.info = info
        self.messages: list[TranscriptMessage] = []
        self._answer: list[str] = []
        self._tools: list[str] = []
        self._last: tuple[str, list[str]] = ("", [])

    def prompt(self, text: str) -> None:
        """The user sent `text`."""
        self.messages.append(TranscriptMessage(role="user", text=text))
        self._answer, self._tools = [], []

    def observe(self, event: BaseEvent) -> None:
        """An event of the running turn: answer text and tool titles are kept, the turn's
        end closes it."""
        from avatar.events import TextDelta, ToolCallStarted, TurnFinished

        if event.replay:
            return
        if isinstance(event, TextDelta):
            self._answer.append(event.text)
        elif isinstance(event, ToolCallStarted):
            self._tools.append(event.title or event.name)
        elif isinstance(event, TurnFinished):
            answer = "".join(self._answer)
            if answer:
                self.messages.append(TranscriptMessage(role="assistant", text=answer))
            self._last = (answer, self._tools)
            self._answer, self._tools = [], []

    def last_turn(self) -> tuple[str, list[str]]:
        """The answer text and tool titles of the turn that ended last."""
        return self._last

    def transcript(self) -> Transcript | None:
        """The conversation seen so far, or None when nothing was said."""
        return Transcript(info=self.info, messages=list(self.messages)) if self.messages else None


class Conversation:
    """The thread of the open session (one per engine; reset when another session opens)."""

    def __init__(self, library: SessionLibrary) -> None:
        self.library = library
        self.live: LiveTranscript | None = None
        self._seed: str | None = None
        self._prompt = ""

    def opened(self, info: SessionInfo) -> None:
        """Another session is open now."""
        self.live = LiveTranscript(info)

    def closed(self) -> None:
        """No session is open."""
        self.live, self._seed = None, None

    def hand_over(self, text: str) -> None:
        """Context from another session, to open the next prompt."""
        self._seed = text

    def outgoing(self, prompt: str) -> str:
        """What to send for the user's `prompt` (with handed-over context, once)."""
        self._prompt = prompt
        if self.live is not None:
            self.live.prompt(prompt)
        text, self._seed = (seed_prompt(self._seed, prompt) if self._seed else prompt), None
        return text

    def observe(self, event: BaseEvent) -> None:
        """An event of the running turn."""
        if self.live is not None:
            self.live.observe(event)

    def turn_ended(self) -> None:
        """The turn is over: avatar's records of it are brought up to date."""
        if self.live is not None:
            info = self.live.info
            self.library.turn_ended(info.provider, info.id, self._prompt, *self.live.last_turn())

    def history(self) -> Transcript | None:
        """The conversation: the session's store (or avatar's records of it), else what this
        run saw; None without a session."""
        if self.live is None:
            return None
        try:
            return self.library.transcript(self.live.info)
        except AvatarError:
            return self.live.transcript()

    def handoff(self) -> str | None:
        """The handoff text of the conversation (None when nothing was said)."""
        seen = self.history()
        return build_handoff(seen) if seen is not None and seen.messages else None
