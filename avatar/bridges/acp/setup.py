"""What an ACP agent is started with, the same for the full bridge and the one-shot bridge:
its launch (`avatar.bridges.acp.launch`: environment, command, the scope its file callbacks are
held to, the kernel's walls, its own mode), the terminals it is given, and what it can do."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from avatar.bridges.acp.launch import AgentLaunch, Ahead, agent_mode
from avatar.bridges.acp.permission import get
from avatar.bridges.acp.terminal import TerminalManager
from avatar.core.events import Notice
from avatar.policy import sandbox
from avatar.providers.capabilities import SessionCapabilities

if TYPE_CHECKING:
    from avatar.bridges.acp.fs import FileAccess
    from avatar.bridges.base import BridgeContext
    from avatar.bridges.spawning import Spawned


@dataclass
class AgentSetup:
    """One agent start: its launch, its terminals, and its process when the engine started it
    ahead (`spawned`: the bridge adopts it instead of starting another)."""

    launch: AgentLaunch
    terminals: TerminalManager
    spawned: Spawned | None = None

    @classmethod
    def of(cls, ctx: BridgeContext) -> AgentSetup:
        """The setup of `ctx`'s agent (a ProviderError when its program is missing, or when
        what of the project's config it may not use cannot be held back); a notice says what
        was."""
        ahead = ctx.ahead
        if isinstance(ahead, Ahead):
            launch, spawned = ahead.launch, ahead.spawned
        else:
            held = ctx.holding(ctx.cwd)
            launch = AgentLaunch.of(
                ctx.spec, ctx.settings, ctx.cwd, ctx.additional_dirs, ctx.env, held
            )
            spawned = None
        said = launch.holding.notice(ctx.spec.name, ctx.cwd)
        if said:
            ctx.emit(Notice(message=said))
        files, env = launch.files, launch.env
        spec = ctx.spec
        commands = sandbox.for_commands(files.policy, env, spec.state_dirs, spec.state_guessed)
        terminals = TerminalManager(files, env, ctx.settings.scope.shell_commands, commands)
        return cls(launch, terminals, spawned)

    @property
    def files(self) -> FileAccess:
        """The scope of its file callbacks."""
        return self.launch.files

    def mode(self, ctx: BridgeContext) -> str | None:
        """The agent's own mode to set: the one in which it asks before changing anything, so
        avatar's scope and policy decide (claude-agent-acp starts in one that asks nothing)."""
        return agent_mode(ctx.spec, ctx.settings, self.launch.walled)


def session_capabilities(agent_capabilities: Any) -> SessionCapabilities:
    """docs/design.md §2: every `agentCapabilities` field (as `initialize` answered them)
    mapped into `SessionCapabilities`."""
    agent = agent_capabilities
    session = get(agent, "session_capabilities", "sessionCapabilities") if agent else None
    can_load = bool(agent is not None and get(agent, "load_session", "loadSession"))

    def has(name: str) -> bool:
        return session is not None and get(session, name) is not None

    can_list, can_resume = has("list"), has("resume")
    return SessionCapabilities(
        can_list=can_list,
        can_load=can_load,
        can_resume=can_resume,
        can_continue_last=can_list and (can_load or can_resume),
        can_fork=has("fork"),
        can_delete=has("delete"),
        can_cancel=True,
    )
