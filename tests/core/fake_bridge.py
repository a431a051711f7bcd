"""A scripted in-process bridge for engine unit tests (the real bridges have their own tests)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from typing import ClassVar

from avatar.bridges.base import BaseBridge, OpenRequest, SessionCapabilities, not_supported
from avatar.core.events import BaseEvent, SessionStarted, TextDelta, TurnFinished
from avatar.core.prompts import Prompt

_ids = itertools.count(1)


class FakeBridge(BaseBridge):
    """Echoes prompts; can resume and fork only when the provider name ends in `-resumable`."""

    prompts: ClassVar[list[str]] = []
    started: ClassVar[list[FakeBridge]] = []  # every bridge started, in order

    async def stop(self) -> None:
        self.stopped = True

    async def start(self) -> None:
        FakeBridge.started.append(self)
        resumable = self.name.endswith("-resumable")
        self.capabilities = SessionCapabilities(
            can_resume=resumable, can_fork=resumable, can_cancel=True
        )

    async def open(self, request: OpenRequest) -> SessionStarted:
        if request.mode == "new":
            self.session_id = request.session_id or f"{self.name}-{next(_ids)}"
            return SessionStarted(session_id=self.session_id, provider=self.name, how="new")
        if request.mode == "fork" and self.capabilities.can_fork:
            self.session_id = f"{self.name}-{next(_ids)}"
            return SessionStarted(session_id=self.session_id, provider=self.name, how="forked")
        if request.mode != "resume" or not self.capabilities.can_resume:
            raise not_supported(self.name, request.mode)
        assert request.session_id is not None
        return await self.resume(request.session_id)

    async def resume(self, session_id: str) -> SessionStarted:
        self.session_id = session_id
        return SessionStarted(session_id=session_id, provider=self.name, how="resumed")

    async def send(self, prompt: str | Prompt) -> AsyncIterator[BaseEvent]:
        prompt = Prompt.of(prompt).text
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
