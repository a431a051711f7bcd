"""The built-in tools as the model sees them, shipped as data: `catalog.json`.

A run offers all seven tools on every request, but most turns call few or none of them. The
catalog holds what the offer needs (name, kind, description, JSON Schema), generated from the
tool classes; a tool's module is imported only when the model first calls it. A test fails if
the catalog and the classes drift apart; `python -m avatar.native.tools.catalog` rewrites it.
"""

from __future__ import annotations

import importlib
import json
from functools import cache
from pathlib import Path
from typing import Any

from avatar.native.tools.base import AgentToolResult, Tool, ToolContext, ToolKind

FILE = Path(__file__).with_name("catalog.json")

#: The built-in tools, in the order they are offered: name -> "module:Class".
BUILTIN = {
    "read": "avatar.native.tools.read:ReadTool",
    "write": "avatar.native.tools.write:WriteTool",
    "edit": "avatar.native.tools.edit:EditTool",
    "bash": "avatar.native.tools.bash:BashTool",
    "grep": "avatar.native.tools.grep:GrepTool",
    "find": "avatar.native.tools.find:FindTool",
    "ls": "avatar.native.tools.ls:LsTool",
}


def tool_class(name: str) -> type[Tool]:
    """The class of built-in tool `name` (imports its module)."""
    module, _, attr = BUILTIN[name].partition(":")
    cls: type[Tool] = getattr(importlib.import_module(module), attr)
    return cls


class CatalogTool:
    """A built-in tool offered from the catalog; its class is imported on first use."""

    def __init__(self, name: str, entry: dict[str, Any]) -> None:
        self.name: str = name
        self.kind: ToolKind = entry["kind"]
        self.description: str = entry["description"]
        self._parameters: dict[str, Any] = entry["parameters"]
        self._tool: Tool | None = None

    def parameters(self) -> dict[str, Any]:
        """The JSON Schema of the arguments."""
        return self._parameters

    def tool(self) -> Tool:
        """The tool itself."""
        if self._tool is None:
            self._tool = tool_class(self.name)()
        return self._tool

    def title(self, args: dict[str, Any]) -> str:
        """A one-line description of a call, for the UI and permission prompts."""
        return self.tool().title(args)

    async def __call__(self, args: dict[str, Any], ctx: ToolContext) -> AgentToolResult:
        """Validate `args` and run."""
        return await self.tool()(args, ctx)


@cache
def shipped() -> dict[str, dict[str, Any]]:
    """The entries of `catalog.json` by tool name (empty if the file is missing or bad)."""
    try:
        data = json.loads(FILE.read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def generated() -> dict[str, dict[str, Any]]:
    """The catalog as the tool classes define it today."""
    out: dict[str, dict[str, Any]] = {}
    for name in BUILTIN:
        cls = tool_class(name)
        out[name] = {
            "kind": cls.kind,
            "description": cls.description,
            "parameters": cls.generate_parameters(),
        }
    return out


def main() -> None:
    """Rewrite `catalog.json` from the tool classes."""
    FILE.write_text(json.dumps(generated(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {FILE}")


if __name__ == "__main__":
    main()
