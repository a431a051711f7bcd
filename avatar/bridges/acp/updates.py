"""ACP `session/update` payloads as the SDK parses them, translated into avatar's events.

The translation itself is `avatar.bridges.acp.wire`, on the JSON the agent wrote; this module
hands it the SDK's typed update dumped back to that JSON, so the SDK's client and the
one-shot bridge (which never loads the SDK) show every update the same way.

This module imports the SDK (`import acp` costs about a second): the client side
(`avatar.bridges.acp.client`) imports it, and the bridge loads that only once the agent is
spawning, so the import runs while the agent boots (docs/design.md §1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acp.schema import (
    AgentMessageChunk,
    AgentPlanContentUpdate,
    AgentPlanRemovedUpdate,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    SessionInfoUpdate,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
    UserMessageChunk,
)
from pydantic import BaseModel

from avatar.bridges.acp import wire

if TYPE_CHECKING:
    from acp.schema import PromptResponse

    from avatar.core.events import BaseEvent, Usage

SessionUpdate = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
    | AgentPlanContentUpdate
    | AgentPlanRemovedUpdate
    | AvailableCommandsUpdate
    | CurrentModeUpdate
    | ConfigOptionUpdate
    | SessionInfoUpdate
    | UsageUpdate
)
"""Every update of `session/update` (`SessionNotification.update`), as the SDK parses it."""


def translate(update: object, terminal: wire.TerminalReader | None = None) -> list[BaseEvent]:
    """The avatar events for one ACP session update the SDK parsed (possibly none)."""
    if not isinstance(update, BaseModel):  # not an update at all
        return []
    return wire.translate(update.model_dump(mode="json", by_alias=True), terminal)


def prompt_usage(response: PromptResponse) -> Usage | None:
    """The `Usage` event for a `PromptResponse` (token counts of the turn), if any."""
    usage = response.usage
    dumped = usage.model_dump(mode="json", by_alias=True) if usage is not None else None
    return wire.prompt_usage(dumped, response.field_meta)
