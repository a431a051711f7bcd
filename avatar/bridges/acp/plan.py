"""An ACP session's plan mode: set through its `mode` config option where it has one
(claude-acp), else through its session modes (`session/set_mode`; Gemini offers `plan` there),
and left for the mode it had before."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from avatar.bridges.acp.connection import describe_error
from avatar.bridges.acp.jsonrpc import RpcError
from avatar.bridges.acp.options import option_values, select_option, set_option
from avatar.bridges.acp.permission import get
from avatar.core.errors import ProviderError

if TYPE_CHECKING:
    from avatar.bridges.acp.connection import AgentConnection

#: The mode id of an agent's plan mode.
PLAN = "plan"


class PlanMode:
    """One session's plan mode, on or off (`set`), and whether the agent has one (`offered`)."""

    def __init__(self) -> None:
        self.modes: Any = None  # the session modes the open offered (`modes`), if any
        self.current: str | None = None  # the session mode in use, as far as avatar set it
        self.left: str | None = None  # the mode before plan mode, to go back to

    def opened(self, modes: Any) -> None:
        """A session opened, offering these session modes (None: none outside its options)."""
        self.modes, self.left = modes, None
        self.current = get(modes, "current_mode_id", "currentModeId") if modes else None

    def offered(self, config_options: list[Any]) -> bool:
        """True when the agent has a plan mode in this session."""
        option = select_option(config_options, "mode")
        if option is not None:
            return PLAN in option_values(option)
        available = get(self.modes, "available_modes", "availableModes") or []
        return PLAN in [str(get(m, "id")) for m in available]

    async def set(
        self,
        on: bool,
        agent: AgentConnection,
        session_id: str,
        config_options: list[Any],
        usual: str | None,
    ) -> list[Any]:
        """Plan mode on, or back to the mode before it (else `usual`, avatar's own mode for
        the agent); the config options the agent then reports. A ProviderError when the
        agent refuses."""
        option = select_option(config_options, "mode")
        current = get(option, "currentValue") if option is not None else self.current
        target: str | None = None
        if on and current != PLAN:
            self.left, target = current, PLAN
        elif not on and current == PLAN:
            target = self.left or usual
        if target is None:
            return config_options
        if option is not None:
            config_options, problem = await set_option(
                agent, session_id, config_options, "mode", str(target)
            )
        else:
            problem = await _set_session_mode(agent, session_id, str(target))
        if problem:
            raise ProviderError(f"{agent.name}: cannot switch to mode {target!r}: {problem}")
        self.current = str(target)
        return config_options


async def _set_session_mode(agent: AgentConnection, session_id: str, mode: str) -> str | None:
    """`session/set_mode`; what went wrong, or None."""
    try:
        await agent.request("session/set_mode", {"sessionId": session_id, "modeId": mode})
    except RpcError as e:
        return describe_error(e)
    return None
