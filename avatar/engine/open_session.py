"""The open session (docs/design.md §8): one session of one provider, with its own agent (bridge),
model and conversation. `Engine.open()` and its siblings return it; turns run on it.

Its model is its own: a switch opens the next session with the target provider's model (or
the one the user names), never the model of the session it leaves.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from avatar.core.errors import NotSupportedError
from avatar.core.prompts import Prompt

if TYPE_CHECKING:
    from avatar.bridges.base import BaseBridge
    from avatar.core.events import BaseEvent, OpenHow, SessionStarted
    from avatar.engine.conversation import Conversation
    from avatar.sessions.types import Transcript


class OpenSession:
    """A session open on a running agent; see the module docstring.

    `started` is the `SessionStarted` event that opened it; `session_id`, `provider`, `how`
    and `cwd` are its fields. `model` is the model asked for (`-m`, a preset, the session's
    settings, `set_model`); None lets the provider choose, and `model_in_use` says what runs.
    """

    def __init__(
        self,
        started: SessionStarted,
        bridge: BaseBridge,
        conversation: Conversation,
        model: str | None,
    ) -> None:
        self.started = started
        self.bridge = bridge
        self.conversation = conversation
        self.model = model

    @property
    def session_id(self) -> str:
        """The session's id, as its provider knows it."""
        return self.started.session_id

    @property
    def provider(self) -> str:
        """The provider the session is open on."""
        return self.started.provider

    @property
    def how(self) -> OpenHow:
        """How it was opened: new, loaded, resumed, continued or forked."""
        return self.started.how

    @property
    def cwd(self) -> str | None:
        """The project directory it was opened in."""
        return self.started.cwd

    @property
    def model_in_use(self) -> str | None:
        """The model the agent runs (as it reported it), else the one asked for, else the
        one the session was opened with."""
        return self.bridge.model_in_use or self.model or self.started.model

    @property
    def alive(self) -> bool:
        """True while its agent runs with this session open (false after the agent died, or
        after it was used for another session)."""
        return self.bridge.alive and self.bridge.session_id == self.session_id

    async def send(self, prompt: str | Prompt) -> AsyncIterator[BaseEvent]:
        """Run one turn, yielding its events. Handed-over context opens the prompt once: a
        turn that failed before the agent answered anything hands it over again, so the next
        prompt carries it (the agent never saw it). Images go only to an agent that takes
        them: otherwise a `NotSupportedError`, before anything is sent or recorded (images
        only pasted as paths go as those paths, with a notice)."""
        from avatar.core.events import Error, Notice, TextDelta, ToolCallStarted, TurnFinished

        asked = Prompt.of(prompt)
        if asked.images and not self.bridge.takes_images:
            if not all(image.pasted for image in asked.images):
                raise NotSupportedError(self.provider, "attaching images")
            names = ", ".join(image.name for image in asked.images)
            yield Notice(message=f"{self.provider} takes no images: {names} sent as its path")
            asked = Prompt(asked.text)
        thread = self.conversation
        handed, answered, failed = thread.pending, False, False
        async for event in self.bridge.send(thread.outgoing(asked)):
            thread.observe(event)
            if isinstance(event, TextDelta | ToolCallStarted) and not event.replay:
                answered = True
            elif isinstance(event, Error) or (
                isinstance(event, TurnFinished) and event.stop_reason == "error"
            ):
                failed = True
            yield event
        thread.turn_ended(self.bridge.model_in_use or self.model)
        if handed and failed and not answered and not thread.seeded:
            thread.hand_over(handed)

    async def steer(self, text: str) -> bool:
        """Add `text` to the running turn (native); False when the provider cannot, and the
        caller should queue it for the next turn."""
        return await self.bridge.steer(text)

    async def cancel(self) -> None:
        """Interrupt the running turn (it ends with stop reason `cancelled`)."""
        await self.bridge.cancel()

    @property
    def can_plan(self) -> bool:
        """True when its agent has a plan mode (claude, the native agent, ACP agents whose
        mode option offers `plan`)."""
        return self.bridge.can_plan

    async def set_plan(self, on: bool) -> None:
        """Plan mode on or off from the next turn: the agent reads and plans, and changes
        nothing (`NotSupportedError` where it has no plan mode)."""
        await self.bridge.set_plan(on)

    async def set_model(self, model: str) -> None:
        """Use `model` from the next turn on."""
        await self.bridge.set_model(model)
        self.model = model

    async def compact(self) -> str:
        """Compact the session's context; a line saying what happened."""
        return await self.bridge.compact()

    def history(self) -> Transcript | None:
        """The conversation: the session's store (or avatar's records of it), else what this
        run saw of it."""
        return self.conversation.history()
