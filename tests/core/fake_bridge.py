"""A scripted in-process bridge for engine unit tests (the real bridges have their own tests)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from typing import ClassVar

from avatar.bridges.base import BaseBridge, SessionCapabilities
from avatar.core.events import BaseEvent, SessionStarted, TextDelta, TurnFinished

_ids = itertools.count(1)


class FakeBridge(BaseBridge):
    """Echoes prompts; can resume only when the provider name ends in `-resumable`."""

    prompts: ClassVar[list[str]] = []
    started: ClassVar[list[FakeBridge]] = []  # every bridge started, in order

    async def stop(self) -> None:
        self.stopped = True

    async def start(self) -> None:
        FakeBridge.started.append(self)
        resumable = self.name.endswith("-resumable")
        self.capabilities = SessionCapabilities(can_resume=resumable, can_cancel=True)

    async def new_session(self, session_id: str | None = None) -> SessionStarted:
        self.session_id = session_id or f"{self.name}-{next(_ids)}"
        return SessionStarted(session_id=self.session_id, provider=self.name, how="new")

    async def resume_session(self, session_id: str) -> SessionStarted:
        if not self.capabilities.can_resume:
            return await super().resume_session(session_id)
        self.session_id = session_id
        return SessionStarted(session_id=session_id, provider=self.name, how="resumed")

    async def send(self, prompt: str) -> AsyncIterator[BaseEvent]:
        FakeBridge.prompts.append(prompt)
        yield TextDelta(text=f"echo: {prompt[-20:]}")
        yield TurnFinished()

    #: What the agent reports it runs on (None: what it was asked for).
    answering_model: str | None = None

    @property
    def model_in_use(self) -> str | None:
        return self.answering_model or self.ctx.model

    async def set_model(self, model: str) -> None:
        self.ctx.model = model
