"""An ACP session's config options (`session/set_config_option`): the model and the agent's
own mode are selectors the agent describes, with the values it accepts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from avatar.bridges.acp import compat as acp_compat
from avatar.bridges.acp.connection import describe_error
from avatar.bridges.acp.permission import get
from avatar.core.errors import ProviderError

if TYPE_CHECKING:
    from acp.core import ClientSideConnection

    from avatar.bridges.acp.connection import AgentConnection


def select_option(config_options: list[Any], category: str) -> Any | None:
    """The session's selector of `category` (`model`, `mode`): by category, else by id (SDK
    objects, or the wire's dicts)."""
    for option in config_options:
        if get(option, "type") != "select":
            continue
        if get(option, "category") == category or get(option, "id") == category:
            return option
    return None


def option_values(option: Any) -> list[str]:
    """The values a selector accepts."""
    return [str(get(o, "value")) for o in get(option, "options") or [] if get(o, "value")]


def current_choice(option: Any) -> str | None:
    """The selector's current value, said as the agent explains it: a value that stands for
    another (claude-acp's `default`) with the short description of its choice ("default
    (Opus 4.5)"); None when the agent reports no value."""
    value = get(option, "current_value", "currentValue")
    if value is None:
        return None
    for choice in get(option, "options") or []:
        if get(choice, "value") != value:
            continue
        about = get(choice, "description")
        if isinstance(about, str) and about and len(about) <= SHORT and about != value:
            return f"{value} ({about})"
    return str(value)


SHORT = 32  # longer descriptions are sentences about the model, not its name


async def set_option(
    agent: AgentConnection[ClientSideConnection],
    session_id: str,
    config_options: list[Any],
    category: str,
    value: str,
) -> tuple[list[Any], str | None]:
    """Set the `category` selector to `value`: the options the agent then reports, and what
    went wrong (None when it is set, or already was)."""
    from acp import RequestError
    from pydantic import ValidationError

    option = select_option(config_options, category)
    if option is None:
        return config_options, f"the agent has no {category} option"
    if option.current_value == value:
        return config_options, None
    values = option_values(option)
    if values and value not in values and category != "model":
        return config_options, f"the agent offers {', '.join(map(str, values))}"
    try:
        resp = await agent.call(
            "session/set_config_option",
            agent.conn.set_config_option(config_id=option.id, session_id=session_id, value=value),
        )
    except (RequestError, ValidationError) as e:
        return config_options, describe_error(e)
    return list(resp.config_options or config_options), None


async def set_model_unstable(
    agent: AgentConnection[ClientSideConnection], session_id: str, model: str
) -> None:
    """`session/set_model`, for agents that have no model option (older Gemini and Claude
    adapters); a ProviderError saying why it failed."""
    from acp import RequestError
    from pydantic import ValidationError

    try:
        await agent.call("session/set_model", acp_compat.set_model(agent.conn, session_id, model))
    except (RequestError, ValidationError) as e:
        problem = describe_error(e)
        raise ProviderError(f"{agent.name}: cannot switch to model {model!r}: {problem}") from None
