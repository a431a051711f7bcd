"""What an ACP agent is started with, the same for the full bridge and the one-shot bridge:
its environment and command, the scope its file and terminal callbacks are held to, the
kernel's walls around it, the agent's own mode avatar asks for, and what it can do."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from avatar.bridges.acp.connection import agent_argv, agent_env
from avatar.bridges.acp.fs import FileAccess
from avatar.bridges.acp.permission import get
from avatar.bridges.acp.terminal import TerminalManager
from avatar.policy import sandbox
from avatar.providers.capabilities import SessionCapabilities

if TYPE_CHECKING:
    from avatar.bridges.base import BridgeContext
    from avatar.policy.sandbox import Sandbox


@dataclass
class AgentSetup:
    """One agent start's environment, command, callbacks' scope and walls."""

    env: dict[str, str]
    argv: list[str]
    files: FileAccess
    terminals: TerminalManager
    walls: Sandbox | None
    #: The agent runs inside avatar's kernel walls.
    walled: bool

    @classmethod
    def of(cls, ctx: BridgeContext) -> AgentSetup:
        """The setup of `ctx`'s agent (a ProviderError when its program is missing)."""
        env = agent_env(ctx)
        argv = agent_argv(ctx.spec, env)
        files = FileAccess(
            ctx.cwd,
            ctx.additional_dirs,
            ctx.settings.scope,
            missing_reads_empty="missing_file_empty" in ctx.spec.quirks,
        )
        terminals = TerminalManager(
            files,
            env,
            ctx.settings.scope.shell_commands,
            sandbox.for_commands(files.policy, env),
        )
        walls = sandbox.for_agent(files.policy, ctx.spec.state_dirs, env)
        walled = walls is not None and sandbox.support().walls
        mode = _mode(ctx, walled)
        if ctx.spec.mode_env and mode:  # (the agent's only: not its terminals' commands)
            env = {**env, ctx.spec.mode_env: mode}
        return cls(env, argv, files, terminals, walls, walled)

    def mode(self, ctx: BridgeContext) -> str | None:
        """The agent's own mode to set: the one in which it asks before changing anything, so
        avatar's scope and policy decide (claude-agent-acp starts in one that asks nothing)."""
        return _mode(ctx, self.walled)


def _mode(ctx: BridgeContext, walled: bool) -> str | None:
    if walled and ctx.spec.walled_mode and ctx.settings.permission == "allow":
        return ctx.spec.walled_mode  # its own sandbox cannot run inside the walls
    return ctx.spec.permission_mode


def session_capabilities(agent_capabilities: Any) -> SessionCapabilities:
    """DESIGN §2: every `agent_capabilities` field (the SDK's object, or the wire's dict)
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
