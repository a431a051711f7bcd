"""The open session's thread as the engine carries it: what this run saw of it, the context
handed over from another session that opens the next prompt, and avatar's records of turns."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from avatar.core.errors import AvatarError, utf8_text
from avatar.handoff import DEFAULT_TOKENS, build_handoff, seed_prompt
from avatar.handoff.legs import Leg, Turn, as_block
from avatar.sessions.inserted import inserted_user_message, said_in_answer
from avatar.sessions.types import SessionInfo, ToolCall, Transcript, TranscriptMessage

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from avatar.core.events import BaseEvent
    from avatar.core.prompts import Prompt
    from avatar.library.catalog import Catalog
    from avatar.policy.secrets import SecretDetector


class LiveTranscript:
    """What this run saw of the open session: the handoff's source when no store has it.

    Each turn's usage goes into avatar's copy with the turn's own figures (`/cost` adds
    them up): its tokens (`Usage.turn_tokens`, the count every screen shows) and its cost,
    the growth of the cost the agent reports during the turn. Agents count that cost from
    their own start (Claude Code's `total_cost_usd`, an ACP agent's `usage_update`), the
    native agent from the session's creation: `cost_before` is where the count stands
    before the first turn of this open (0, or the native session's last recorded cost)."""

    def __init__(
        self,
        info: SessionInfo,
        replayed: list[TranscriptMessage] | None = None,
        cost_before: float = 0.0,
    ) -> None:
        self.info = info
        #: The history the agent replayed when the session was reopened, then this run's.
        self.messages: list[TranscriptMessage] = list(replayed or [])
        self._answer: list[str] = []
        self._tools: dict[str, ToolCall] = {}  # by call id; `input` holds its status
        self._usage: dict[str, float] = {}
        self._tokens: int | None = None  # the running turn's, as last reported
        self._cost_before = cost_before  # the agent's count of the cost before this turn
        self._last: tuple[str, list[str], dict[str, Any]] = ("", [], {})

    def prompt(self, text: str) -> None:
        """The user sent `text`."""
        self.messages.append(TranscriptMessage(role="user", text=text))
        self._answer, self._tools, self._usage, self._tokens = [], {}, {}, None

    def observe(self, event: BaseEvent) -> None:
        """An event of the running turn: answer text, tool calls with their status and the
        usage are kept; the turn's end closes it."""
        from avatar.core.events import (
            TextDelta,
            ToolCallFinished,
            ToolCallStarted,
            ToolCallUpdated,
            TurnFinished,
            Usage,
        )

        if event.replay:
            return
        if isinstance(event, TextDelta):
            self._answer.append(event.text)
        elif isinstance(event, ToolCallStarted):
            args = dict(event.input or {})
            self._tools[event.id] = ToolCall(
                id=event.id, name=event.title or event.name, input=args
            )
            self._status(event.id, "pending")
        elif isinstance(event, ToolCallUpdated) and event.status:
            self._status(event.id, event.status)
        elif isinstance(event, ToolCallFinished):
            self._status(event.id, "failed" if event.is_error else "completed")
        elif isinstance(event, Usage):
            fields = ("input_tokens", "output_tokens", "cost_usd")
            self._usage |= {k: v for k in fields if (v := getattr(event, k)) is not None}
            self._tokens = event.turn_tokens if event.turn_tokens is not None else self._tokens
        elif isinstance(event, TurnFinished):
            self._close()

    def _status(self, call_id: str, status: str) -> None:
        call = self._tools.get(call_id)
        if call is not None and isinstance(call.input, dict):
            call.input["status"] = status

    def _close(self) -> None:
        # (a notice the agent streamed as text, such as codex's model warning, is no answer)
        answer, calls = said_in_answer("".join(self._answer)), list(self._tools.values())
        if answer or calls:
            self.messages.append(TranscriptMessage(role="assistant", text=answer, tool_calls=calls))
        status = [c.input.get("status") for c in calls if isinstance(c.input, dict)]
        extra = {"tool_status": status} if calls else {}
        usage: dict[str, float] = dict(self._usage)
        if self._tokens is not None:
            usage["tokens"] = self._tokens
        cost = self._usage.get("cost_usd")
        if cost is not None:  # (a drop: the agent started counting again)
            usage["turn_cost_usd"] = round(cost - self._cost_before, 6)
            if cost < self._cost_before:
                usage["turn_cost_usd"] = cost
            self._cost_before = cost
        self._last = (answer, [c.name for c in calls], extra | ({"usage": usage} if usage else {}))
        self._answer, self._tools, self._usage, self._tokens = [], {}, {}, None

    def last_turn(self) -> tuple[str, list[str], dict[str, Any]]:
        """The answer text, tool titles and what else avatar's copy keeps of the turn that
        ended last (the tools' status, the usage)."""
        return self._last

    def transcript(self) -> Transcript | None:
        """The conversation seen so far, or None when nothing was said."""
        return Transcript(info=self.info, messages=list(self.messages)) if self.messages else None


class Conversation:
    """The thread of the open session (one per engine; reset when another session opens)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.live: LiveTranscript | None = None
        self._seed: str | None = None
        self._replayed: list[TranscriptMessage] = []
        #: Masks secrets in avatar's copy of the turns (set by the engine's switcher).
        self.redact: Callable[[str], str] = str
        #: Where the messages this engine has not handed anywhere yet begin (in `history()`):
        #: 0 for a new session, the length of the history when a session was returned to.
        self.entered = 0
        #: An imported session's source, how many first messages of `history()` the import
        #: wrote, and those as the turns of the sessions they were said in (`carry`).
        self._carried: tuple[Leg, int, list[Turn] | None] | None = None

    def replayed(self, event: BaseEvent) -> None:
        """History an agent replays while a session is being reopened (it arrives before
        the session is open): the handoff's source where no store or copy has it."""
        from avatar.core.events import TextDelta, UserMessage

        if not event.replay:
            return
        last = self._replayed[-1] if self._replayed else None
        if isinstance(event, UserMessage):
            if not inserted_user_message(event.text):  # (Gemini's <session_context>)
                self._replayed.append(TranscriptMessage(role="user", text=event.text))
        elif isinstance(event, TextDelta):
            if last is not None and last.role == "assistant":
                last.text += event.text
            else:
                self._replayed.append(TranscriptMessage(role="assistant", text=event.text))

    def opened(self, info: SessionInfo, cost_before: float = 0.0) -> None:
        """Another session is open now (`cost_before`: where the agent's count of its cost
        stands, `LiveTranscript`)."""
        for msg in self._replayed:
            if msg.role == "assistant":
                msg.text = said_in_answer(msg.text)
        self.live = LiveTranscript(info, self._replayed, cost_before)
        self._replayed = []
        self.entered = 0
        # (an import made in an earlier run: its record says from where and how much)
        imported = self.catalog.records().imported(info.provider, info.id)
        self._carried = (imported[0], imported[1], None) if imported is not None else None

    def carry(self, source: Leg, count: int, turns: list[Turn] | None = None) -> None:
        """This session was imported from session `source`: its first `count` messages are
        `turns`, each said in the session it names (all in `source` when not known). A
        return from here hands each session only what it did not say itself (not the
        returned-to session's own turns again)."""
        self._carried = (source, count, turns)

    def closed(self) -> None:
        """No session is open."""
        self.live, self._seed = None, None

    def hand_over(self, text: str) -> None:
        """Context from another session, to open the next prompt (after any handed over
        already and not sent yet)."""
        self._seed = f"{self._seed}\n\n{text}" if self._seed else text

    @property
    def seeded(self) -> bool:
        """True when handed-over context waits for the next prompt."""
        return self._seed is not None

    @property
    def pending(self) -> str | None:
        """The handed-over context that will open the next prompt, if any."""
        return self._seed

    def outgoing(self, prompt: Prompt) -> Prompt:
        """What to send for the user's `prompt` (with handed-over context, once). Its images
        are written down as `[image: name]`, never as their bytes."""
        utf8_text(prompt.text)
        seed, self._seed = self._seed, None
        sent = prompt.with_text(seed_prompt(seed, prompt.text) if seed else prompt.text)
        # The copy keeps what was sent, handed-over context included: a later handoff of
        # this session finds the original goal in it (titles take only the user's words).
        if self.live is not None:
            text = sent.recorded
            self.live.prompt(text)
            info = self.live.info
            self.catalog.turn_ended(info.provider, info.id, self.redact(text), "", [])
        return sent

    def observe(self, event: BaseEvent) -> None:
        """An event of the running turn."""
        if self.live is not None:
            self.live.observe(event)

    def turn_ended(self, model: str | None = None) -> None:
        """The turn is over: avatar's records of it (with the `model` that answered, when
        known) are brought up to date."""
        if self.live is not None:
            info = self.live.info
            answer, tools, extra = self.live.last_turn()
            extra = extra | ({"model": model} if model else {})
            self.catalog.turn_ended(info.provider, info.id, None, self.redact(answer), tools, extra)

    def history(self) -> Transcript | None:
        """The conversation: the session's store (or avatar's records of it), else what this
        run saw; None without a session."""
        if self.live is None:
            return None
        seen = self.live.transcript()
        try:
            stored = self.catalog.transcript(self.live.info)
        except AvatarError:
            stored = None
        # A copy that began with this run (a session avatar did not open) knows less than
        # the history the agent replayed plus this run's turns.
        if stored is not None and (seen is None or len(seen.messages) <= len(stored.messages)):
            seen = stored
        if seen is None:
            return None
        # Named since it opened (`/rename`): the name avatar's record has now.
        info = seen.info
        name = self.catalog.names().get((info.provider, info.id))
        return replace(seen, info=replace(info, name=name)) if name else seen

    def handoff(
        self,
        budget_tokens: int = DEFAULT_TOKENS,
        *,
        delta: bool = False,
        cwd: Path | None = None,
        secrets: SecretDetector | None = None,
        transcript: Transcript | None = None,
        target: tuple[str, str] | None = None,
        held: Transcript | None = None,
    ) -> str | None:
        """The handoff text of the conversation (None when nothing was said); with `delta`,
        of only the messages since `entered`, for session `target` (provider, id) returned
        to, whose conversation `held` is (none of its turns is carried back to it).
        `transcript`: the conversation as `history()` gave it already (so the stores are
        not read again)."""
        seen = transcript if transcript is not None else self.history()
        since = self.entered if delta else None
        if seen is None or len(seen.messages) <= (since or 0):
            return None
        if since is not None and self._carried is not None and since < self._carried[1]:
            seen, since = self._imported_as_legs(seen, target), 0
        return build_handoff(
            seen, budget_tokens, since=since, cwd=cwd, secrets=secrets, target=target, held=held
        )

    def _imported_as_legs(self, seen: Transcript, target: Leg | None) -> Transcript:
        """`seen` with its imported messages as the block of turns they were, less those
        said in `target` (for a delta, which reads a block's legs)."""
        assert self._carried is not None
        source, count, turns = self._carried
        if turns is None:  # (all the source's, as far as anyone knows now)
            labels = {"user": "USER: ", "assistant": "ASSISTANT: "}
            turns = [
                Turn(labels.get(m.role, "[tool result] ") + m.text, source)
                for m in seen.messages[:count]
            ]
        kept = [t for t in turns if t.leg != target]
        block = [TranscriptMessage(role="user", text=as_block(source, kept))] if kept else []
        return replace(seen, messages=block + seen.messages[count:])
