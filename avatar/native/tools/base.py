"""What every native tool is: a name, a description, a JSON Schema, and `run()`.

Arguments are validated with the tool's pydantic model at the boundary (the model's JSON);
a bad argument, a scope refusal or a denied permission is a `ToolError`, which the agent
returns to the model as an error result it can read and act on.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from avatar.native.tools.errors import ToolError
from avatar.policy.permissions import allows, reason_of

if TYPE_CHECKING:
    from avatar.native.tools.scope import ToolScope
    from avatar.policy.permissions import Refusal
    from avatar.policy.sandbox import Sandbox

ToolKind = Literal["read", "edit", "execute", "search"]

AskPermission = Callable[[str, ToolKind], Awaitable["bool | Refusal"]]
"""Asks the user (through the bridge's permission handler) whether an action may run; a
`Refusal` is a deny with the user's words for the model."""


@dataclass
class AgentToolResult:
    """A tool's answer to the model."""

    output: str
    is_error: bool = False


@dataclass
class ToolContext:
    """What tools may use: the scope, the permission question, the environment."""

    scope: ToolScope
    ask: AskPermission
    env: Mapping[str, str] = field(default_factory=dict)
    #: The kernel's walls for the commands tools run (None: `scope.sandbox: off`).
    sandbox: Sandbox | None = None

    @property
    def root(self) -> Path:
        """The project root (the session's working directory)."""
        return self.scope.root


class AgentTool(Protocol):
    """What the agent needs of a tool: a `Tool`, or a built-in one offered from the catalog
    before its code is imported (`avatar.native.tools.catalog.CatalogTool`)."""

    # Read-only: a `Tool` declares them on its class, a `CatalogTool` on the instance.
    @property
    def name(self) -> str:
        """The name the model calls the tool by."""
        ...

    @property
    def kind(self) -> ToolKind:
        """What the tool does (read, edit, execute, …), for permissions and the UI."""
        ...

    @property
    def description(self) -> str:
        """What the model reads about the tool."""
        ...

    def parameters(self) -> dict[str, Any]:
        """The JSON Schema of the arguments."""
        ...

    def title(self, args: dict[str, Any]) -> str:
        """A one-line description of a call."""
        ...

    async def __call__(self, args: dict[str, Any], ctx: ToolContext) -> AgentToolResult:
        """Validate `args` and run."""
        ...


class ToolArgs(BaseModel):
    """Base of every tool's argument model: unknown keys are an error the model can fix."""

    # defer_build: the validators are built on first use, not at import (a one-shot
    # `avatar chat` that calls no tool never pays for them).
    model_config = ConfigDict(extra="forbid", defer_build=True)


class Tool(ABC):
    """One tool offered to the model, declared as
    `class ReadTool(Tool, name="read", kind="read", args=ReadArgs)`.

    Its docstring is the description the model reads, unless the class sets `description`
    itself (when the text is computed from constants).
    """

    name: ClassVar[str]
    description: ClassVar[str]
    kind: ClassVar[ToolKind]
    args_model: ClassVar[type[ToolArgs]]
    _schema: ClassVar[dict[str, Any] | None] = None

    def __init_subclass__(
        cls,
        *,
        name: str | None = None,
        kind: ToolKind | None = None,
        args: type[ToolArgs] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        if name is None or kind is None or args is None:
            return
        cls.name, cls.kind, cls.args_model = name, kind, args
        if "description" not in cls.__dict__:
            cls.description = " ".join((cls.__doc__ or "").split())

    @classmethod
    def parameters(cls) -> dict[str, Any]:
        """The JSON Schema of the arguments (plain: no titles, no `anyOf` with null)."""
        if cls.__dict__.get("_schema") is None:
            cls._schema = cls.generate_parameters()
        assert cls._schema is not None
        return cls._schema

    @classmethod
    def generate_parameters(cls) -> dict[str, Any]:
        """The JSON Schema generated from `args_model`."""
        return _clean_schema(cls.args_model.model_json_schema())

    def title(self, args: dict[str, Any]) -> str:
        """A one-line description of a call, for the UI and permission prompts."""
        first = next(iter(args.values()), "") if args else ""
        return f"{self.name} {first}".strip()

    async def __call__(self, args: dict[str, Any], ctx: ToolContext) -> AgentToolResult:
        """Validate `args` and run; every failure becomes an error result."""
        # Models often send `null` for an argument they mean to leave out.
        args = {k: v for k, v in args.items() if v is not None}
        try:
            parsed = self.args_model.model_validate(args)
        except ValidationError as e:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                for err in e.errors()
            )
            return AgentToolResult(f"invalid arguments for {self.name}: {problems}", True)
        try:
            return await self.run(parsed, ctx)
        except ToolError as e:
            return AgentToolResult(str(e), True)
        except OSError as e:
            return AgentToolResult(f"{self.name} failed: {e.strerror or e}", True)

    @abstractmethod
    async def run(self, args: Any, ctx: ToolContext) -> AgentToolResult:
        """Do the work with validated arguments."""

    async def require_permission(self, ctx: ToolContext, title: str) -> None:
        """Ask before changing anything; a refusal is a `ToolError`."""
        answer = await ctx.ask(title, self.kind)
        if not allows(answer):
            reason = reason_of(answer)
            denied = f"permission denied: the user did not allow `{title}`"
            raise ToolError(f"{denied}. {reason}" if reason else denied)


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's titles and collapse `anyOf: [X, null]` so every server accepts it."""

    def walk(node: Any, names: bool = False) -> Any:
        # `names`: the keys of this dict are property names, not schema keywords.
        if isinstance(node, dict):
            if names:
                return {k: walk(v) for k, v in node.items()}
            node = {
                k: walk(v, k in ("properties", "$defs")) for k, v in node.items() if k != "title"
            }
            options = node.get("anyOf")
            if isinstance(options, list):
                rest = [o for o in options if o != {"type": "null"}]
                if len(rest) == 1:
                    merged = {**{k: v for k, v in node.items() if k != "anyOf"}, **rest[0]}
                    if merged.get("default", 0) is None:
                        del merged["default"]
                    return merged
            return node
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    out: dict[str, Any] = walk(schema)
    out.pop("description", None)  # the args model's docstring; the tool has its own
    out.setdefault("properties", {})
    out["additionalProperties"] = False
    return out
