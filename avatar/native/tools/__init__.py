"""The seven native tools of DESIGN §5: read, write, edit, bash, grep, find, ls."""

from __future__ import annotations

from avatar.native.tools.base import AgentToolResult, Tool, ToolContext, ToolError
from avatar.native.tools.bash import BashTool
from avatar.native.tools.edit import EditTool
from avatar.native.tools.find import FindTool
from avatar.native.tools.grep import GrepTool
from avatar.native.tools.ls import LsTool
from avatar.native.tools.read import ReadTool
from avatar.native.tools.write import WriteTool

__all__ = ["AgentToolResult", "Tool", "ToolContext", "ToolError", "default_tools"]


def default_tools() -> list[Tool]:
    """One instance of each tool, in the order they are offered to the model."""
    return [ReadTool(), WriteTool(), EditTool(), BashTool(), GrepTool(), FindTool(), LsTool()]
