"""A fake bridge whose agent knows a session avatar never carried, and replays its history
when it reopens it (as ACP agents do on `session/load`)."""

from __future__ import annotations

from avatar.bridges.base import OpenRequest
from avatar.core.events import SessionStarted, TextDelta, UserMessage
from tests.core.fake_bridge import FakeBridge


class ReplayBridge(FakeBridge):
    """Resumes any id, replaying two turns first."""

    async def open(self, request: OpenRequest) -> SessionStarted:
        if request.mode != "resume":
            return await super().open(request)
        assert request.session_id is not None
        return await self.resume(request.session_id)

    async def resume(self, session_id: str) -> SessionStarted:
        for event in (
            UserMessage(text="GOAL tune the cache", replay=True),
            TextDelta(text="Tuned ", replay=True),
            TextDelta(text="it.", replay=True),
            UserMessage(text="now the eviction too", replay=True),
            TextDelta(text="Evicted.", replay=True),
        ):
            self.ctx.emit(event)
        self.session_id = session_id
        return SessionStarted(session_id=session_id, provider=self.name, how="loaded")
