"""`engine.agent` (docs/design.md §8): the one agent an engine runs at a time, the session open
on it, and what moves between them — opening (new, resume, continue, fork, or as a request
says), reopening after a death, switching, deleting through an agent, the agent's own list of
sessions, the status line's numbers.

`Engine` builds its `Agent` when a session first needs one; a listing never does, so none of
this (bridges, the conversation and handoff, the switcher, the permission gate) is imported to
list sessions (docs/startup.md). It reaches the engine only through `EngineCore` and the
`EngineHooks` it was given.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Unpack

from avatar.bridges.base import BaseBridge, BridgeContext, OpenRequest
from avatar.core.events import TurnFinished
from avatar.core.loading import load_class
from avatar.core.prompts import Prompt
from avatar.engine.conversation import Conversation
from avatar.engine.numbers import Meter
from avatar.engine.open_session import OpenSession
from avatar.engine.opening import open_with, plan_open
from avatar.engine.status import EngineStatus, describe
from avatar.policy.permissions import PermissionGate, PermissionHandler
from avatar.providers.facts import CapabilityCache
from avatar.sessions.types import SessionInfo

if TYPE_CHECKING:
    from avatar.core.events import BaseEvent, OpenHow
    from avatar.engine.host import EngineCore
    from avatar.engine.switching import Switcher, SwitchHow
    from avatar.library.library import Deleted, DeleteHow
    from avatar.providers.registry import ProviderSpec


@dataclass(frozen=True)
class EngineHooks:
    """What the running half calls back in the engine: events out, and the per-session
    settings it keeps (docs/design.md §4)."""

    emit: Callable[[BaseEvent], None]
    notice: Callable[[str, str], None]
    #: Adopt the settings session `session_id` (None: the newest) of a provider was started
    #: with; True when they changed.
    adopt_settings: Callable[[str, str | None], bool]
    #: Remember the open session's settings (`fresh`: it was just made).
    remember: Callable[[bool], None]
    #: Run the next sessions in another directory (a worktree's session resumes there).
    move_to: Callable[[Path], Awaitable[None]]


class Agent:
    """The agent an engine runs (`bridge`, one at a time: starting another provider's stops
    it) and the session open on it (`current`); see the module docstring."""

    def __init__(
        self, host: EngineCore, hooks: EngineHooks, handler: PermissionHandler | None
    ) -> None:
        self.host = host
        self.hooks = hooks
        #: The open session (its agent, model and conversation); None when none is open.
        self.current: OpenSession | None = None
        self.bridge: BaseBridge | None = None  # the running agent (open session or not)
        self.gate = PermissionGate(hooks.emit, host.settings.permission)
        self.gate.handler = handler
        self.meter = Meter()  #: the status line's numbers (`status().numbers`)
        self._walls_told: set[str] = set()
        self._next = self._conversation()  # collects what an agent replays while opening
        self._switcher: Switcher | None = None  # (`_switch`: made on the first switch)
        # A turn's state before its prompt reaches the agent: None (no turn), False (under
        # way), True (cancelled meanwhile: it ends there, as `cancelled`).
        self._cancelled_early: bool | None = None
        host.subscribe(lambda event: self._next.replayed(event))
        host.subscribe(self.meter.observe)

    # ----- opening ------------------------------------------------------------------------

    async def open(
        self,
        name: str | None,
        *,
        resume: str | None = None,
        continue_last: bool = False,
        session_id: str | None = None,
    ) -> OpenSession:
        """`Engine.open`: resolve what to open (`avatar.engine.opening.plan_open`) and open
        it; `name`: a provider's canonical name, or None (the one owning `resume`, else the
        default)."""
        host = self.host
        plan = plan_open(
            host.catalog,
            host.settings,
            name,
            lambda: host.registry.default(host.settings),
            resume=resume,
            continue_last=continue_last,
            session_id=session_id,
        )
        there = plan.request.info.worktree if plan.request.info else None
        if there and Path(there) != host.cwd:  # a worktree's session resumes in its worktree
            if Path(there).is_dir():
                await self.hooks.move_to(Path(there))
            else:
                self.hooks.notice(
                    f"its worktree {there} is gone: resuming in {host.cwd}", "warning"
                )
        return await self.open_on(plan.provider, plan.request)

    async def new(self, provider: str | None = None) -> OpenSession:
        """A fresh session on `provider` (default: the current or chosen one), whatever its
        config's `session:` block says."""
        return await self._open_as(provider, "new")

    async def resume(self, ref: str, provider: str | None = None) -> OpenSession:
        """Resume a session by id or unique prefix, on whichever provider owns it (or on
        `provider`, when given: then another provider's session is a usage error)."""
        name = self.host.registry.spec(provider).name if provider else None
        return await self.open(name, resume=ref)

    async def continue_last(self, provider: str | None = None) -> OpenSession:
        """Open the newest session of `provider` (default: the current or chosen one) in this
        project."""
        return await self._open_as(provider, "continue")

    async def _open_as(self, provider: str | None, mode: Literal["new", "continue"]) -> OpenSession:
        return await self.open_on(provider or self.host.chosen_provider(), OpenRequest(mode))

    async def open_from(self, source: str, provider: str, imported: bool) -> OpenSession:
        """A new session on `provider` seeded with a handoff of session `source`."""
        return await self._switch().open_from(source, provider, imported)

    async def open_on(
        self, provider: str, request: OpenRequest, how: OpenHow | None = None
    ) -> OpenSession:
        """Start `provider` and open a session on it as `request` says (a resumed or forked
        session with the settings it was started with, docs/design.md §4). An unsupported
        reopen opens a new session, with a notice. `new`, `resume`, `continue_last` and
        `fork` resolve what to open; the switcher, forks and adopting call this."""
        host = self.host
        name = host.registry.spec(provider).name
        host.models.claim(name)
        reopen = request.mode in ("resume", "continue", "fork")
        if reopen and self.hooks.adopt_settings(name, request.session_id):
            self.gate.policy = host.settings.permission
            if self.bridge is not None and self.bridge.name == name:
                await self.stop_bridge()  # it was started with other settings
        bridge = await self.start(
            name, one_shot=host.one_shot and request.mode == "new", replace=False
        )
        try:
            started = await open_with(bridge, request, self.hooks.notice)
        except BaseException:
            if bridge is not self.bridge:  # a failed switch: the agent that ran runs on
                with contextlib.suppress(Exception):
                    await bridge.stop()
            raise
        if bridge is not self.bridge:
            await self.stop_bridge()
            self.bridge = bridge
        if how and started.session_id == request.session_id:  # e.g. a fork opened as a resume
            started.how = how
        thread, self._next = self._next, self._conversation()
        self.current = OpenSession(started, bridge, thread, host.models.of(name))
        self.gate.session_id = started.session_id
        host.catalog.opened(name, started.session_id, str(host.cwd), started.model)
        if host.worktree is not None:
            host.catalog.worktree(name, started.session_id, host.worktree)
        resolved = request.opened(name, started.session_id)  # (its path, not a lookup)
        thread.opened(
            resolved or SessionInfo(started.session_id, name, cwd=str(host.cwd)),
            self._cost_counted(name, started.session_id, started.how),
        )
        if request.mode == "resume" and request.session_id not in (None, started.session_id):
            self._switch().recover(name, str(request.session_id), started, thread, request.info)
        if started.how in ("new", "forked"):
            self.hooks.remember(True)
        self.hooks.emit(started)
        return self.current

    def _cost_counted(self, provider: str, session_id: str, how: OpenHow) -> float:
        """Where the agent's count of the session's cost stands as it opens: only the native
        agent counts from the session's creation (the others from their own start)."""
        if how == "new" or self.host.registry.spec(provider).transport != "native":
            return 0.0
        from avatar.sessions.spending import last_cost

        return last_cost(self.host.catalog.records().root, provider, session_id)

    async def fork(
        self, ref: str | None = None, at: int | None = None, *, from_copy: bool = False
    ) -> OpenSession:
        """Fork a session (default: the open one), whole or to message `at`; `from_copy`:
        where the agent cannot fork, a new session seeded with the whole history
        (`avatar.engine.forking`)."""
        from avatar.engine.forking import fork_session

        return await fork_session(self.host, self, ref, at, from_copy, self.hooks.notice)

    async def switch(self, name: str, **how: Unpack[SwitchHow]) -> OpenSession:
        """`Engine.switch_provider` (`avatar.engine.switching`)."""
        return await self._switch().to(name, **how)

    def _switch(self) -> Switcher:
        # Switching, forking, deleting and adopting load when first used: a one-shot's agent
        # is spawned that much sooner (benchmarks/server.py, the cold one-shot).
        if self._switcher is None:
            from avatar.engine.switching import Switcher

            self._switcher = Switcher(self.host, self, self.hooks.notice)
        return self._switcher

    def _conversation(self) -> Conversation:
        thread = Conversation(self.host.catalog)
        thread.redact = lambda text: self.host.registry.secrets().mask(text)  # no secret in copies
        return thread

    # ----- the agent ----------------------------------------------------------------------

    async def start(
        self, provider: str, *, one_shot: bool = False, replace: bool = True
    ) -> BaseBridge:
        """`provider`'s agent, started unless it runs (`one_shot`: for a one-shot's new
        session, `bridge_for`). Unless `replace`, another provider's agent that runs is not
        stopped: the caller puts this one in its place when of use."""
        old = self.bridge
        if old is not None and old.name == provider and old.alive:
            return old
        if replace or old is None or old.name == provider or not old.alive:
            await self.stop_bridge()
        spec = self.host.registry.spec(provider)
        bridge = self.bridge_for(provider, one_shot=one_shot)
        await bridge.start()  # (a start that fails leaves nothing running)
        if self.bridge is None:
            self.bridge = bridge
        if provider not in self._walls_told:  # what the kernel cannot confine here, once
            from avatar.policy import sandbox  # asyncio and ctypes: started agents only

            self._walls_told.add(provider)
            for message in sandbox.notices(self.host.settings.scope.sandbox):
                self.hooks.notice(message, "warning")
        if spec.transport != "native":  # what the agent says it can do, for `providers`
            CapabilityCache(self.host.home).learned(
                spec, bridge.ctx.env, bridge.session_capabilities
            )
        return bridge

    def bridge_for(self, provider: str, *, one_shot: bool = False) -> BaseBridge:
        """A bridge to `provider`, not started (`start` starts one and keeps it); `one_shot`:
        for a one-shot's new session, which adopts the agent `Engine.launch_ahead` started
        (any other open stops that one: it was started for a new session)."""
        host = self.host
        spec = host.registry.spec(provider)
        ahead = host.ahead.take(provider)
        if ahead is not None and not one_shot:  # (it opens otherwise: not on that agent)
            ahead.stop()
            ahead = None
        ctx = BridgeContext(
            spec=spec,
            cwd=host.cwd,
            settings=host.settings,
            avatar_home=host.home,
            env=host.registry.env_for(spec),
            additional_dirs=list(host.add_dirs),
            store=host.catalog.store(provider),
            model=host.models.of(provider) or spec.model,
            system_prompt=host.settings.system_prompt,
            permission=self.gate.decide,
            emit=self.hooks.emit,
            wait_busy=host.wait_busy,
            booting=host.registry.secrets,  # (what the session's first record is masked with)
            ahead=ahead,
            pool=host.agent_pool,
            trust=host.trust,
        )
        return load_class(spec.bridge, BaseBridge)(ctx)  # type: ignore[type-abstract]

    async def refresh(self, provider: str) -> list[SessionInfo]:
        """`engine.sessions(provider)`, after asking the agent itself (`session/list`, where
        it has it): sessions avatar did not open join its records, with what the agent
        replays of them as avatar's copy (`avatar.engine.adopting`)."""
        host = self.host
        from avatar.engine.adopting import copy_replayed

        provider = host.registry.spec(provider).name
        listed = await (await self.start(provider)).agent_sessions() or []
        await copy_replayed(self, host.catalog, provider, host.catalog.adopt(provider, listed))
        known = host.catalog.sessions(provider, host.cwd)
        ids = {s.id for s in known}
        return known + [s for s in listed if s.id not in ids]

    async def delete(self, info: SessionInfo, how: DeleteHow) -> Deleted:
        """Delete `info` through its agent or store (`avatar.engine.deleting`)."""
        from avatar.engine.deleting import delete_session

        return await delete_session(self, self.host.catalog, info, how)

    # ----- turns --------------------------------------------------------------------------

    async def send(self, prompt: str | Prompt) -> AsyncIterator[BaseEvent]:
        """`Engine.send`: one turn on the open session, opening or reopening it first."""
        if self.current is None:
            await self.new()
        elif self.bridge is not self.current.bridge or not self.current.alive:
            await self._reopen_after_death()  # (listing another agent's sessions replaces it)
        assert self.current is not None
        self.meter.begin_turn()
        checkpoints = self.host.checkpoints  # (the files before and after: for rewind)
        self._cancelled_early = False
        try:
            await checkpoints.before_turn(self.current, Prompt.of(prompt).text)
            if self._cancelled_early:  # (a cancel while the files were recorded)
                checkpoints.abandon()
                yield TurnFinished(stop_reason="cancelled")
                return
            self._cancelled_early = None
            async for event in self.current.send(prompt):
                self.meter.observe(event)
                yield event
        except BaseException:
            checkpoints.abandon()  # (stopped from outside: avatar is leaving, not waiting)
            raise
        finally:
            self._cancelled_early = None
        await checkpoints.after_turn()

    async def cancel(self) -> None:
        """`Engine.cancel`: interrupt the running turn; one cancelled before its prompt was
        sent (the files being recorded for rewind) ends without reaching the agent."""
        if self._cancelled_early is False:
            self._cancelled_early = True
        elif self.current is not None:
            await self.current.cancel()

    async def _reopen_after_death(self) -> None:
        assert self.current is not None
        name, sid = self.current.provider, self.current.session_id
        pending = self.current.conversation.pending
        if self.bridge is None or not self.bridge.alive or self.bridge.name == name:
            self.hooks.notice(
                f"{name} had stopped; restarting it and reopening session {sid}", "info"
            )
        await self.stop_bridge()
        reopened = await self.open_on(name, OpenRequest("resume", sid))
        if pending:  # what was handed over and not sent yet still opens the next prompt
            reopened.conversation.hand_over(pending)

    def status(self, spec: ProviderSpec | None) -> EngineStatus:
        """`Engine.status` for the chosen provider `spec` (None: unknown)."""
        host = self.host
        bridge = self.bridge if spec is not None else None
        if bridge is not None and spec is not None and bridge.name != spec.name:
            bridge = None  # (an agent started to list or delete is not the chosen one)
        walls = host.walls(spec.name) if spec is not None and bridge is not None else None
        current = self.current
        pending = current.conversation.pending if current is not None else None
        model = host.models.of(spec.name) if spec is not None else None
        if model is None and spec is not None:  # what the agent runs, until it says itself
            model = host.models.default(spec.name)  # (claude says only with its first turn)
        started = current.started if current is not None else None
        return describe(spec, model, bridge, started, pending, walls, self.meter.numbers)

    # ----- shutting down ------------------------------------------------------------------

    async def stop_bridge(self) -> None:
        """Stop the running agent, if any."""
        bridge, self.bridge = self.bridge, None
        if bridge is not None:
            await bridge.stop()

    async def close(self) -> None:
        """Stop the agent (flushing its session) and close the open session."""
        await self.stop_bridge()
        if self.current is not None:
            self.current.conversation.closed()
        self.current = None
