"""Switching provider mid-project (docs/design.md §3 `/provider`, `--from`): a structured handoff
sized to the target model's window, the lineage recorded, and a return to a provider used
earlier reopening its session with only what happened elsewhere since (a delta)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypedDict

from avatar.bridges.base import OpenRequest
from avatar.core.errors import AvatarError, NotSupportedError, ProviderError
from avatar.handoff import build_handoff
from avatar.handoff.importing import carried, write_import
from avatar.handoff.window import context_window, handoff_budget
from avatar.sessions.types import SessionInfo

if TYPE_CHECKING:
    from avatar.core.events import SessionStarted
    from avatar.engine.conversation import Conversation
    from avatar.engine.host import EngineCore, Opener
    from avatar.engine.open_session import OpenSession
    from avatar.policy.secrets import SecretDetector
    from avatar.sessions.types import SessionInfo, Transcript

Notify = Callable[[str, str], None]

#: What `--summarize` asks the agent being left (its answer goes on top of the handoff).
SUMMARY_PROMPT = (
    "Another agent is taking over this work now. Without calling any tools, summarize this "
    "session for it in plain prose, at most 200 words: the goal, what was done and decided, "
    "what failed, and what is left to do."
)


class SwitchHow(TypedDict, total=False):
    """How to switch provider (`Engine.switch_provider`); every key is optional.

    `handoff` (default True): carry the conversation over. `new`: a new session even where
    the provider has one to return to. `imported`: write the conversation into the target's
    own store where it can be. `summarize`: first ask the agent being left for a prose
    summary, put on top of the structured handoff. `model`: the target's model (default:
    its own, never the one of the session being left).
    """

    handoff: bool
    new: bool
    imported: bool
    summarize: bool
    model: str


class Switcher:
    """The provider switches of one engine (through its narrow sides: `EngineCore` for its
    project, config and stores, `Opener` for its agent)."""

    def __init__(self, engine: EngineCore, agent: Opener, notify: Notify) -> None:
        self.engine = engine
        self.agent = agent
        self.notify = notify
        #: The session this engine last left on each provider (returns go back to it).
        self.left: dict[str, str] = {}

    @property
    def thread(self) -> Conversation:
        """The open session's conversation (the one being left, before a switch opens)."""
        assert self.agent.current is not None, "no session is open"
        return self.agent.current.conversation

    def model(self, provider: str) -> str | None:
        """The model a session on `provider` will run: the one asked for there, else its own."""
        models = self.engine.models
        return models.of(provider) or models.default(provider)

    def budget(self, provider: str) -> int:
        """The tokens a handoff to `provider` may take: a share of its model's window."""

        h = self.engine
        window = context_window(provider, self.model(provider), h.settings, h.env)
        return handoff_budget(window, h.settings.handoff_share)

    def secrets(self) -> SecretDetector:
        """The engine's secret detector, masking handoffs (made when first needed)."""
        return self.engine.registry.secrets()

    async def to(
        self,
        name: str,
        *,
        handoff: bool = True,
        new: bool = False,
        imported: bool = False,
        summarize: bool = False,
        model: str | None = None,
    ) -> OpenSession:
        """Switch to provider `name`: back to the session left there (with a delta) unless
        `new`; else a new session seeded with the conversation (unless not `handoff`), or
        with `imported`, a session of `name`'s own format holding the conversation. With
        `summarize`, the agent being left is asked for a summary on top of the handoff;
        `model` is asked for on `name` (else it runs its own)."""
        e = self.engine
        opened = self.agent.current
        if opened is not None and name == opened.provider and not new:
            # Already there: nothing to hand over, nothing to open (`--new` opens one).
            self.notify(f"already on {name} (session {opened.session_id})", "info")
            return opened
        if model is not None:
            e.models.use(name, model)
        current = opened.started if opened is not None else None
        if current is not None:
            self.left[current.provider] = current.session_id
        try:
            return await self._switch(name, current, handoff, new, imported, summarize)
        except AvatarError as err:
            if current is None or self.agent.current is not opened:
                raise
            # The target did not start or open: the session that was open stays open.
            failed = ProviderError(
                f"could not switch to {name} ({err}); still on {current.provider} "
                f"session {current.session_id}"
            )
            failed.exit_code = err.exit_code  # (a usage error stays one)
            raise failed from err

    async def _switch(
        self,
        name: str,
        current: SessionStarted | None,
        handoff: bool,
        new: bool,
        imported: bool,
        summarize: bool,
    ) -> OpenSession:
        e = self.engine
        if imported and current is not None:
            seen = self.thread.history()
            source = (current.provider, current.session_id)
            if seen is not None and seen.messages:
                started = await self.imported(name, seen, source)
                if started is not None:
                    return started
        if current is not None and handoff and not new and name != current.provider:
            earlier = self._earlier(name, current.provider, current.session_id)
            if earlier is not None:
                return await self._return(*earlier, current)
        text = None
        if handoff and current is not None:
            text = self.thread.handoff(self.budget(name), cwd=e.cwd, secrets=self.secrets())
        if text and summarize and current is not None:
            text = await self._summarized(text, current.provider)
        started = await self.agent.open_on(name, OpenRequest("new"))
        if text and current is not None:
            started.conversation.hand_over(text)
            e.catalog.link((name, started.session_id), (current.provider, current.session_id))
            self.notify(f"handing the conversation to {name}: {describe(text)}", "info")
        return started

    async def _summarized(self, handoff: str, provider: str) -> str:
        """`handoff` with `provider`'s own summary of the open session on top (one more turn
        in that session); the handoff alone, with a notice, when the agent gives none."""
        from avatar.core.events import Error, TextDelta
        from avatar.handoff.render import with_summary

        self.notify(f"asking {provider} for a summary to hand over", "info")
        said: list[str] = []
        problem = "it answered nothing"
        async for event in self.agent.send(SUMMARY_PROMPT):
            if isinstance(event, TextDelta):
                said.append(event.text)
            elif isinstance(event, Error):
                problem = event.message
        summary = self.secrets().mask("".join(said).strip())
        if not summary:
            self.notify(f"no summary from {provider} ({problem}); handing over without", "warning")
            return handoff
        return with_summary(handoff, provider, summary)

    def _earlier(
        self, name: str, provider: str, session_id: str
    ) -> tuple[SessionInfo, bool] | None:
        """The session to return to on `name` (the one left there in this run, else the one
        the open session was handed over from), and whether its files are gone. It is
        reopened by its id, whether or not it is still `name`'s newest here."""
        e = self.engine
        sid = self.left.get(name)
        if sid is None:  # (one record's parent, not every session's lineage)
            parent = e.catalog.records().parent(provider, session_id)
            sid = parent[1] if parent is not None and parent[0] == name else None
        if sid is None:
            return None
        found = [s for s in e.catalog.sessions(name, e.cwd) if s.id == sid]
        if not found:
            return SessionInfo(sid, name, cwd=str(e.cwd)), True
        return found[0], found[0].gone  # (listed from avatar's record when its files are gone)

    async def _return(self, info: SessionInfo, gone: bool, current: SessionStarted) -> OpenSession:
        """Reopen `info` and hand it what happened in `current` since it was entered. When
        its files are `gone` (an agent may still claim to load it, then fail every prompt),
        a new session opens with avatar's copy of its turns instead."""
        e, left = self.engine, self.thread
        budget, secrets = self.budget(info.provider), self.secrets()
        seen = left.history()  # read now: the reopen replaces what this run saw
        try:  # what it holds already, however it got it, is not handed to it again
            held = e.catalog.transcript(info)
        except AvatarError:
            held = None
        delta = left.handoff(
            budget,
            delta=True,
            cwd=e.cwd,
            secrets=secrets,
            transcript=seen,
            target=(info.provider, info.id),
            held=held,
        )
        if gone:
            started = await self.agent.open_on(info.provider, OpenRequest("new"))
            self.recover(info.provider, info.id, started.started, started.conversation, info)
        else:
            started = await self.agent.open_on(info.provider, OpenRequest.of("resume", info))
        thread = started.conversation
        if started.session_id != info.id:
            # The agent could not reopen it: the new session got the earlier one's turns
            # (`recover`, which records it as that session's continuation) and gets what
            # happened since; else the whole conversation, which carries its goal.
            if thread.seeded:
                if delta:
                    thread.hand_over(delta)
                return started
            text = left.handoff(budget, cwd=e.cwd, secrets=secrets, transcript=seen)
            if text:
                thread.hand_over(text)
                e.catalog.link(
                    (info.provider, started.session_id), (current.provider, current.session_id)
                )
            return started
        try:
            seen = started.history()
            thread.entered = len(seen.messages) if seen is not None else 0
        except AvatarError:
            thread.entered = 0
        if delta:
            thread.hand_over(delta)
            self.notify(
                f"back to {info.provider} session {info.id}; handing it what happened on "
                f"{current.provider} since: {describe(delta)}",
                "info",
            )
        return started

    def recover(
        self,
        provider: str,
        lost: str,
        started: SessionStarted,
        thread: Conversation,
        info: SessionInfo | None = None,
    ) -> None:
        """`provider` opened session `started` where session `lost` (resolved as `info`, when
        it was) was asked for (it could not reopen it): the new one opens with the lost one's
        turns (handed to its conversation `thread`), from the provider's files if still
        readable, else avatar's own copy."""

        e = self.engine
        try:
            transcript = e.catalog.transcript(info or SessionInfo(lost, provider))
        except AvatarError:  # neither its files nor avatar's copy: nothing to carry
            return
        if not transcript.messages:
            return
        budget = self.budget(provider)
        text = build_handoff(transcript, budget, cwd=e.cwd, secrets=self.secrets())
        thread.hand_over(text)
        e.catalog.link((provider, started.session_id), (provider, lost), "recovered")
        self.notify(
            f"{provider} could not reopen session {lost}; the new session {started.session_id} "
            f"opens with its {len(transcript.messages)} earlier messages",
            "warning",
        )

    async def imported(
        self, name: str, transcript: Transcript, source: tuple[str, str]
    ) -> OpenSession | None:
        """A session of `name`'s own format holding `transcript`, opened with its resume;
        None (after a notice) when `name` cannot take an import."""

        e = self.engine
        store = e.catalog.store(name)
        try:
            if store is None:
                raise NotSupportedError(name, "importing a conversation")
            info = write_import(store, transcript, e.cwd, self.model(name), self.secrets())
        except NotSupportedError:
            self.notify(f"{name} cannot take an import; handing the conversation over", "info")
            return None
        started = await self.agent.open_on(name, OpenRequest.of("resume", info))
        try:
            written = started.history()
        except AvatarError:
            written = None
        count = None
        if written is not None and started.session_id == info.id:
            count = len(written.messages)
            started.conversation.carry(source, count, carried(transcript, self.secrets()))
        e.catalog.link((name, started.session_id), source, "import", count)
        self.notify(
            f"imported {source[0]} session {source[1]} into {name} session {info.id}", "info"
        )
        return started

    async def open_from(self, source: str, provider: str, imported: bool) -> OpenSession:
        """A new session on `provider`, seeded with a handoff of session `source` (or, with
        `imported`, a session of `provider`'s format holding its conversation)."""
        e = self.engine
        info = e.catalog.info(source)
        transcript = e.catalog.transcript(info)
        if imported:
            started = await self.imported(provider, transcript, (info.provider, info.id))
            if started is not None:
                return started

        text = build_handoff(transcript, self.budget(provider), cwd=e.cwd, secrets=self.secrets())
        started = await self.agent.open_on(provider, OpenRequest("new"))
        started.conversation.hand_over(text)
        e.catalog.link((provider, started.session_id), (info.provider, info.id))
        self.notify(
            f"the other session's conversation will open this one: {describe(text)}", "info"
        )
        return started


def describe(text: str) -> str:
    """One line about a handoff (the renderer loads only when a switch happens)."""
    from avatar.handoff.render import describe as about

    return about(text)
