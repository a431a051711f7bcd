"""How a `ClaudeBridge` starts claude: the executable found once, each start computed
(`ClaudeLaunch`), and a claude started ahead on a new session of its own (`ClaudeAhead`: the
engine's, for a cold one-shot, or the bridge's own `warm_up`) taken once, adopted when it was
started as the bridge would start it now, and stopped otherwise."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.bridges.claude.launch import ClaudeAhead, ClaudeLaunch, fresh_session
from avatar.bridges.claude.process import ClaudeProcess, ControlHandler
from avatar.bridges.process import AgentProcess
from avatar.core.errors import ProviderError
from avatar.providers.programs import find_executable

if TYPE_CHECKING:
    from avatar.bridges.base import BridgeContext


class ClaudeStarter:
    """Starts the claude processes of one bridge (`on_control`: their control requests)."""

    def __init__(self, ctx: BridgeContext, on_control: ControlHandler) -> None:
        self.ctx = ctx
        self.executable: str | None = None
        self._on_control = on_control
        self._spare: ClaudeAhead | None = None  # started by `warm_up`

    def find(self) -> str:
        """The installed claude (config, PATH, bridges/); a ProviderError when there is none."""
        if self.executable is None:
            spec = self.ctx.spec
            program = spec.executable or "claude"
            base = dict(self.ctx.env) if self.ctx.env else dict(os.environ)
            found = find_executable(program, {**base, **spec.env}.get("PATH"))
            if found is None:
                hint = f" (install: {spec.install_hint})" if spec.install_hint else ""
                raise ProviderError(f"{spec.name}: {program} not found{hint}")
            self.executable = found
        return self.executable

    def launch(self, session_args: list[str], cwd: Path, model: str | None) -> ClaudeLaunch:
        """The start of claude on `session_args` in `cwd` with `model`, as of now."""
        ctx = self.ctx
        return ClaudeLaunch.of(
            ctx.spec,
            ctx.settings,
            self.find(),
            cwd=cwd,
            env=ctx.env,
            model=model,
            system_prompt=ctx.system_prompt,
            add_dirs=ctx.additional_dirs,
            held=ctx.holding(cwd),  # (again at each start: a file may have changed)
            session_args=session_args,
        )

    async def start(self, launch: ClaudeLaunch, model: str | None) -> ClaudeProcess:
        """Start `launch`'s claude (`model`: what it runs, for `set_model` to compare)."""
        return await ClaudeProcess.spawn(
            self.ctx.spec.name,
            launch.argv,
            launch.env,
            launch.cwd,
            install_hint=self.ctx.spec.install_hint,
            model=model,
            on_control=self._on_control,
            sandbox=launch.walls,
        )

    async def adopt(self, ahead: ClaudeAhead, model: str | None) -> ClaudeProcess:
        """`ahead`'s claude, read from the loop from now on."""
        if ahead.process is not None:
            return ahead.process
        assert ahead.spawned is not None
        spawned, ahead.spawned = ahead.spawned, None
        name = self.ctx.spec.name
        agent = await AgentProcess.adopt(name, spawned)
        return ClaudeProcess(name, agent, ahead.launch.cwd, model, self._on_control)

    async def warm_up(self, model: str | None) -> None:
        """Start claude now on a new session of its own in the project, for the bridge's next
        new session to take (`ahead()`); nothing when one waits already."""
        if self._spare is None:
            session = fresh_session()
            launch = self.launch(session.argv(), self.ctx.cwd, model)
            self._spare = ClaudeAhead(session, launch, process=await self.start(launch, model))

    def ahead(self) -> ClaudeAhead | None:
        """The claude started ahead for a new session (`warm_up`'s, else the engine's),
        once."""
        spare, self._spare = self._spare, None
        given, self.ctx.ahead = self.ctx.ahead, None
        if isinstance(given, ClaudeAhead):
            if spare is None:
                return given
            given.stop()
        return spare

    @staticmethod
    async def drop(ahead: ClaudeAhead) -> None:
        """Stop a claude started ahead that no session took."""
        if ahead.process is not None:
            await ahead.process.stop()
        ahead.stop()
