"""What an ACP agent's permission request would touch, checked against the scope before any
answer (DESIGN §10): an agent that applies its own edits (codex applies patches itself, Gemini
writes files itself) asks `session/request_permission` first, and that question is the one
door avatar has on the edit.

The request's `ToolCall` names what it touches in `locations` (paths), in `content` items of
type `diff` (each names its `path`) and in `raw_input` (`command`, `cwd`, a path). Agents often
send those facts earlier, in the `tool_call` update that announced the call, and repeat only
the id when they ask (codex does): `ToolCalls` remembers each call's facts by id, and a request
is judged on both. How each path is checked follows the call's kind:

- `edit`, `delete`, `move`, or a kind not given or not known: every location and every diff
  path must be writable (outside the project, denied and protected paths are refused);
- `read`, `search`: locations must be readable; diff paths still need writing;
- `execute`: the command must pass `scope.shell_commands` (a string is a shell line, a list an
  argv) and its working directory must lie inside the session's directories; when an
  allow-list is set, a request whose command cannot be found is refused;
- `think`, `fetch`, `switch_mode`: nothing on disk, nothing to check.

A refusal is a deny whatever the permission policy says (`--permission allow` included).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from avatar.policy.claude_tools import refusal
from avatar.policy.scope import Mode, ScopePolicy

WRITE_KINDS = frozenset({"edit", "delete", "move"})
READ_KINDS = frozenset({"read", "search"})
NO_PATH_KINDS = frozenset({"think", "fetch", "switch_mode"})
#: `raw_input` keys agents name a file by.
PATH_KEYS = ("path", "file_path", "filePath", "notebook_path")
#: How many announced tool calls are remembered (a turn rarely has more waiting on a question).
REMEMBERED = 256


@dataclass
class CallFacts:
    """What a tool call is known to touch: its kind, paths, command and working directory."""

    kind: str | None = None
    locations: list[str] = field(default_factory=list)
    diff_paths: list[str] = field(default_factory=list)
    raw_input: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, call: Any) -> CallFacts:
        """The facts an ACP `ToolCall`/`ToolCallUpdate` (SDK object or plain data) states."""
        locations = [str(p) for loc in get(call, "locations") or [] if (p := get(loc, "path"))]
        diffs = [
            str(get(item, "path"))
            for item in get(call, "content") or []
            if get(item, "type") == "diff" and get(item, "path")
        ]
        raw = get(call, "raw_input", "rawInput")
        kind = get(call, "kind")
        return cls(kind and str(kind), locations, diffs, raw if isinstance(raw, Mapping) else {})

    def merged(self, earlier: CallFacts) -> CallFacts:
        """These facts completed with what an earlier announcement of the call stated."""
        return CallFacts(
            self.kind or earlier.kind,
            [*self.locations, *earlier.locations],
            [*self.diff_paths, *earlier.diff_paths],
            self.raw_input or earlier.raw_input,
        )

    def targets(self) -> list[tuple[str, Mode]]:
        """The paths the call touches, each with the access it needs."""
        named = [str(v) for k in PATH_KEYS if isinstance(v := self.raw_input.get(k), str) and v]
        out: list[tuple[str, Mode]] = [(p, "write") for p in self.diff_paths]
        if self.kind in READ_KINDS:
            out += [(p, "read") for p in [*self.locations, *named]]
        elif self.kind == "execute":
            cwd = self.raw_input.get("cwd")
            out += [(cwd, "read")] if isinstance(cwd, str) and cwd else []
        elif self.kind not in NO_PATH_KINDS:
            out += [(p, "write") for p in [*self.locations, *named]]
        return out

    def command(self) -> str | list[str] | None:
        """The command an `execute` call runs: a shell line, or an argv."""
        given = self.raw_input.get("command") if self.kind == "execute" else None
        if isinstance(given, str):
            return given
        if isinstance(given, list) and given and all(isinstance(a, str) for a in given):
            return list(given)
        return None


def get(obj: Any, *names: str) -> Any:
    """The first of `names` that `obj` (an SDK object, or the wire's dict) has set."""
    for name in names:
        value = obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)
        if value is not None:
            return value
    return None


class ToolCalls:
    """The tool calls an agent announced in this session, by id (the newest `REMEMBERED`)."""

    def __init__(self) -> None:
        self._facts: OrderedDict[str, CallFacts] = OrderedDict()

    def seen(self, update: Any) -> None:
        """Remember what a `tool_call` or `tool_call_update` says about its call."""
        call_id = get(update, "tool_call_id", "toolCallId")
        if call_id is None:
            return
        key = str(call_id)
        facts = CallFacts.of(update)
        earlier = self._facts.pop(key, None)
        if earlier is not None and get(update, "session_update", "sessionUpdate") != "tool_call":
            facts = facts.merged(earlier)  # an update adds to its call; a new call starts over
        self._facts[key] = facts
        while len(self._facts) > REMEMBERED:
            self._facts.popitem(last=False)

    def facts(self, tool_call: Any) -> CallFacts:
        """What a permission request's tool call touches, with what its announcement said."""
        facts = CallFacts.of(tool_call)
        earlier = self._facts.get(str(get(tool_call, "tool_call_id", "toolCallId")))
        return facts.merged(earlier) if earlier is not None else facts


def scope_refusal(policy: ScopePolicy, facts: CallFacts) -> str | None:
    """Why the scope refuses the tool call `facts` describe, or None (the permission policy
    decides then)."""
    command = facts.command()
    if facts.kind == "execute" and command is None and policy.shell_commands:
        return "the command of this request is not given, and scope.shell_commands is set"
    return refusal(policy, facts.targets(), command)


def pick_option(options: list[Any], allow: bool) -> Any | None:
    """The agent's option (an SDK object, or the wire's dict) matching the decision:
    allow_once/reject_once first, then *_always."""
    wanted = ("allow_once", "allow_always") if allow else ("reject_once", "reject_always")
    for kind in wanted:
        for option in options:
            if get(option, "kind") == kind:
                return option
    return None
