"""The seven native tools of docs/design.md §5: read, write, edit, bash, grep, find, ls."""

from __future__ import annotations

from avatar.native.tools.base import AgentTool, AgentToolResult, Tool, ToolContext
from avatar.native.tools.errors import ToolError

__all__ = ["AgentTool", "AgentToolResult", "Tool", "ToolContext", "ToolError", "default_tools"]


def default_tools() -> list[AgentTool]:
    """One of each tool, in the order they are offered to the model.

    They come from the shipped catalog and import their code when first called; without a
    usable catalog (a broken install) the classes are imported right away.
    """
    from avatar.native.tools.catalog import BUILTIN, CatalogTool, shipped, tool_class

    catalog = shipped()
    if all(name in catalog for name in BUILTIN):
        return [CatalogTool(name, catalog[name]) for name in BUILTIN]
    return [tool_class(name)() for name in BUILTIN]
