"""An ACP session's config options (`session/set_config_option`): the model and the agent's
own mode are selectors the agent describes, with the values it accepts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from avatar.bridges.acp.connection import describe_error
from avatar.bridges.acp.jsonrpc import RpcError, WrongAnswer, fields
from avatar.bridges.acp.permission import get
from avatar.core.errors import ProviderError

if TYPE_CHECKING:
    from avatar.bridges.acp.connection import AgentConnection


def select_option(config_options: list[Any], category: str) -> Any | None:
    """The session's selector of `category` (`model`, `mode`): by category, else by id."""
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
    agent: AgentConnection,
    session_id: str,
    config_options: list[Any],
    category: str,
    value: str,
) -> tuple[list[Any], str | None]:
    """Set the `category` selector to `value`: the options the agent then reports, and what
    went wrong (None when it is set, or already was)."""
    option = select_option(config_options, category)
    if option is None:
        return config_options, f"the agent has no {category} option"
    if get(option, "currentValue") == value:
        return config_options, None
    values = option_values(option)
    if values and value not in values and category != "model":
        return config_options, f"the agent offers {', '.join(map(str, values))}"
    method = "session/set_config_option"
    params = {"sessionId": session_id, "configId": get(option, "id"), "value": value}
    try:
        resp = fields(await agent.request(method, params), method, required=False)
    except (RpcError, WrongAnswer) as e:
        return config_options, describe_error(e)
    options = [o for o in get(resp, "configOptions") or [] if isinstance(o, dict)]
    return options or config_options, None


async def set_model_unstable(agent: AgentConnection, session_id: str, model: str) -> None:
    """`session/set_model`, for agents that have no model option (older Gemini and Claude
    adapters: the protocol's unstable method); a ProviderError saying why it failed."""
    try:
        await agent.request("session/set_model", {"sessionId": session_id, "modelId": model})
    except RpcError as e:
        problem = describe_error(e)
        raise ProviderError(f"{agent.name}: cannot switch to model {model!r}: {problem}") from None
